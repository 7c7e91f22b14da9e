//! Fingerprints of short strings: a label key or value becomes two words and a length that
//! identify it exactly up to 16 bytes, so interning and request lookups compare a few integers
//! inline instead of calling `memcmp` once per candidate (label strings are short: the
//! comparisons were most of a lookup from raw header strings).

/// Strings up to this long are identified by their fingerprint alone.
const WHOLE: usize = 16;

/// The first and last bytes of a string (overlapping when it is short) and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    head: u64,
    tail: u64,
    len: u64,
}

impl Fingerprint {
    #[inline]
    pub fn of(s: &str) -> Fingerprint {
        let b = s.as_bytes();
        let n = b.len();
        let (head, tail) = match n {
            8.. => (word(&b[..8]), word(&b[n - 8..])),
            4..=7 => (half(&b[..4]), half(&b[n - 4..])),
            1..=3 => (
                u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
                0,
            ),
            0 => (0, 0),
        };
        Fingerprint {
            head,
            tail,
            len: n as u64,
        }
    }

    /// Whether the fingerprint alone tells the string apart from every other.
    #[inline]
    pub fn is_whole(&self) -> bool {
        self.len as usize <= WHOLE
    }

    /// A hash for strings the fingerprint identifies; longer ones need a hash of every byte
    /// (they may share their first and last bytes).
    pub fn hash(&self, seed: u64) -> u64 {
        const K: u64 = 0x9e37_79b9_7f4a_7c15;
        let h = (self.head ^ seed).wrapping_mul(K).rotate_left(29) ^ self.tail ^ self.len;
        let h = h.wrapping_mul(K);
        h ^ (h >> 32)
    }
}

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(b);
    u64::from_le_bytes(w)
}

fn half(b: &[u8]) -> u64 {
    let mut w = [0u8; 4];
    w.copy_from_slice(b);
    u64::from(u32::from_le_bytes(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_differ_by_fingerprint() {
        let words = [
            "",
            "a",
            "b",
            "ab",
            "ba",
            "aa",
            "abc",
            "acb",
            "abcd",
            "abce",
            "abcde",
            "abcdf",
            "bbcde",
            "abcdefg",
            "abcdefgh",
            "abcdefgi",
            "abcdefghi",
            "bbcdefghi",
            "abcdefghijklmnop",
            "abcdefghijklmnoq",
            "abcdefghXjklmnop",
        ];
        for a in words {
            for b in words {
                let (fa, fb) = (Fingerprint::of(a), Fingerprint::of(b));
                assert_eq!(fa == fb, a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn long_strings_are_compared_whole() {
        let (a, b) = (
            "0123456789-abcdef-x-0123456789",
            "0123456789-abcdef-y-0123456789",
        );
        let (fa, fb) = (Fingerprint::of(a), Fingerprint::of(b));
        assert_eq!(fa, fb);
        assert!(!fa.is_whole());
    }
}
