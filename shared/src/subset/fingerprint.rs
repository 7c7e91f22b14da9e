//! Fingerprints of short strings: a label key or value becomes two words that identify it
//! exactly up to 15 bytes, so interning and request lookups compare two integers inline
//! instead of calling `memcmp` once per candidate (label strings are short: the comparisons
//! were most of a lookup from raw header strings). Two words, not three: a candidate is then
//! one `(a ^ b) | (c ^ d) == 0` test, cheap enough to test every candidate without branching.

/// Strings up to this long are identified by their fingerprint alone.
const WHOLE: usize = 15;

/// `head`: the first 8 bytes, or below 8 bytes every byte (see [`Fingerprint::of`]). `tail`:
/// the length (capped at 255) in its low byte and, from 8 bytes on, the last 7 bytes above it,
/// which with `head` cover every byte up to 15.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fingerprint {
    head: u64,
    tail: u64,
}

impl Fingerprint {
    /// Matches no string's fingerprint (a zero length has a zero head): fills unused lanes.
    pub const NONE: Fingerprint = Fingerprint { head: 1, tail: 0 };

    #[inline]
    pub fn of(s: &str) -> Fingerprint {
        let b = s.as_bytes();
        let n = b.len();
        // The length goes in each arm, capped only where it can exceed a byte: hoisted out
        // of the match, the cap cost the short strings of requests a compare and a move each.
        let (head, tail) = match n {
            8.. => (
                word(&b[..8]),
                (word(&b[n - 8..]) & !0xff) | n.min(255) as u64,
            ),
            // Every byte of a string this short, in overlapping parts at fixed places: with
            // the length, exact. Fixed shifts, not each byte in its own place: shifts by the
            // length were a third of the fingerprints of a request's short labels.
            4..=7 => (half(&b[..4]) | half(&b[n - 4..]) << 32, n as u64),
            1..=3 => (
                u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16,
                n as u64,
            ),
            0 => (0, 0),
        };
        Fingerprint { head, tail }
    }

    /// Whether the fingerprint alone tells the string apart from every other.
    #[inline]
    pub fn is_whole(&self) -> bool {
        (self.tail & 0xff) as usize <= WHOLE
    }

    /// Equality as one branch-free test.
    #[inline]
    pub fn same(&self, other: &Fingerprint) -> bool {
        (self.head ^ other.head) | (self.tail ^ other.tail) == 0
    }

    /// A hash for strings the fingerprint identifies; longer ones need a hash of every byte
    /// (they may share their first and last bytes). Each multiply is preceded by folding the
    /// word's high half onto its low one: a product's low bits depend only on its factors' low
    /// bits, and hash tables probe from the low bits. Without the folds, values that differ
    /// only past their fifth byte (`host-1234`, `10.0.1.2`) shared a few thousand low 17-bit
    /// patterns among 100k values, and a table of them probed long chains.
    pub fn hash(&self, seed: u64) -> u64 {
        const K1: u64 = 0x9e37_79b9_7f4a_7c15;
        const K2: u64 = 0xd6e8_feb8_6659_fd93;
        let h = self.head ^ seed.wrapping_mul(K1);
        let h = (h ^ (h >> 32)).wrapping_mul(K1) ^ self.tail;
        let h = (h ^ (h >> 32)).wrapping_mul(K2);
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
    extern crate std;

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
            "abcdefghijklmno",
            "abcdefghijklmnq",
            "abcdefghXjklmno",
            "abcdefgXijklmno",
            "aaaaaaaaa",
            "aaaaaaaaaa",
            "aaaaaaa\0",
            "aaaaaaa",
            "\0",
            "\0\0",
        ];
        for a in words {
            for b in words {
                let (fa, fb) = (Fingerprint::of(a), Fingerprint::of(b));
                assert_eq!(fa == fb, a == b, "{a:?} {b:?}");
                assert_eq!(fa.same(&fb), a == b, "{a:?} {b:?}");
                assert!(fa.is_whole());
                assert!(!fa.same(&Fingerprint::NONE));
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
        let sixteen = Fingerprint::of("abcdefgh-ijklmno");
        assert_eq!(sixteen, Fingerprint::of("abcdefghXijklmno"));
        assert!(!sixteen.is_whole());
        // The length is capped in the fingerprint; the strings still differ.
        let (long, longer) = ("x".repeat(300), "x".repeat(301));
        assert!(!Fingerprint::of(&long).is_whole());
        assert_eq!(Fingerprint::of(&long), Fingerprint::of(&longer));
    }

    #[test]
    fn short_strings_differ_exhaustively() {
        // Every string up to 3 bytes over a small alphabet, and their 4..=15-byte paddings.
        let alphabet = ["", "a", "b", "\0"];
        let mut words = std::vec::Vec::new();
        for x in alphabet {
            for y in alphabet {
                for z in alphabet {
                    let w = std::format!("{x}{y}{z}");
                    for pad in [0, 4, 5, 12] {
                        words.push(std::format!("{}{w}", "p".repeat(pad)));
                        words.push(std::format!("{w}{}", "p".repeat(pad)));
                    }
                }
            }
        }
        for a in &words {
            for b in &words {
                assert_eq!(
                    Fingerprint::of(a).same(&Fingerprint::of(b)),
                    a == b,
                    "{a:?} {b:?}"
                );
            }
        }
    }

    /// Values that differ only in their last bytes, as numbered names do, spread over the low
    /// bits a table probes from about as random hashes would: 4,096 into 4,096 buckets fill
    /// about 2,590. The hash before this test filled about 1,120 (`host-{i}`, `10.0.{i}`).
    #[test]
    fn numbered_values_spread_over_the_low_bits() {
        for pattern in ["host-", "10.0.", "", "v", "pod-x"] {
            let buckets: std::collections::HashSet<u64> = (0..4096)
                .map(|i| Fingerprint::of(&std::format!("{pattern}{i}")).hash(3) & 4095)
                .collect();
            assert!(buckets.len() > 2400, "{pattern}: {}", buckets.len());
        }
    }
}
