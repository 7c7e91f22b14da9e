//! Exact comparison of header names as origins read them, eight bytes at a time: ASCII case
//! ignored, and `_` read as `-` (see [`HeaderSet`](super::HeaderSet)).
//!
//! Stored names are folded already; only the probe is folded here. Folding touches `A`-`Z`
//! and `_` and nothing else: the common `b | 0x20` trick would also equate `^` with `~` and
//! `@` with `` ` ``, both legal in header names, and so give false positives.

const LSB: u64 = 0x0101_0101_0101_0101;
const MSB: u64 = 0x8080_8080_8080_8080;

/// Lower-cases the ASCII capitals in each of the eight bytes of `x`.
#[inline(always)]
pub(crate) fn lower8(x: u64) -> u64 {
    let low7 = x & !MSB;
    // Per byte (no carries: each sum stays below 0x100): bit 7 is set once the byte reaches
    // 'A' (0x41 + 0x3f = 0x80), resp. passes 'Z' (0x5b + 0x25 = 0x80).
    let ge_a = low7 + 0x3f * LSB;
    let gt_z = low7 + 0x25 * LSB;
    let upper = ge_a & !gt_z & !x & MSB;
    x | (upper >> 2)
}

/// Folds one byte as [`fold8`] folds each of eight.
#[inline(always)]
pub(crate) const fn fold(b: u8) -> u8 {
    match b {
        b'_' => b'-',
        _ => b.to_ascii_lowercase(),
    }
}

/// [`lower8`], and each `_` of the eight bytes of `x` turned into `-`.
#[inline(always)]
pub(crate) fn fold8(x: u64) -> u64 {
    // Bytes of `t` are zero exactly where `x` has `_`; bit 7 of `nonzero` is set per byte of
    // `t` that is not (exact: the sum of its low seven bits and 0x7f carries into bit 7 only
    // from a non-zero byte, and never into the next byte).
    let t = x ^ (u64::from(b'_') * LSB);
    let nonzero = ((t & !MSB) + !MSB) | t;
    let underscores = (!nonzero & MSB) >> 7;
    lower8(x) ^ (underscores * u64::from(b'_' ^ b'-'))
}

/// Packs `b` (at most 8 bytes) into a u64; both sides of a comparison have the same length, so
/// overlapping loads give equal words exactly when the bytes are equal.
#[inline(always)]
fn load_short(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 4 {
        u64::from(load_u32(b, 0)) | u64::from(load_u32(b, n - 4)) << 32
    } else if n >= 2 {
        u64::from(load_u16(b, 0)) | u64::from(load_u16(b, n - 2)) << 16
    } else {
        b.first().map_or(0, |&x| u64::from(x))
    }
}

#[inline(always)]
fn load_u64(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(w)
}

#[inline(always)]
fn load_u32(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

#[inline(always)]
fn load_u16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// `probe`, folded, equals `folded` (folded already, of the same length).
#[inline]
pub(crate) fn eq_folded(probe: &[u8], folded: &[u8]) -> bool {
    debug_assert_eq!(probe.len(), folded.len());
    let n = probe.len();
    if n < 8 {
        return eq_word(load_short(probe), load_short(folded));
    }
    let mut at = 0;
    while at + 8 < n {
        if !eq_word(load_u64(probe, at), load_u64(folded, at)) {
            return false;
        }
        at += 8;
    }
    // The last word overlaps the previous one rather than reading past the end.
    eq_word(load_u64(probe, n - 8), load_u64(folded, n - 8))
}

/// Whether word `probe`, folded, is `folded`: case first, `_` only if that differs (names with
/// `_` are rare: a hit's probe nearly always has `-` where its entry has).
#[inline(always)]
fn eq_word(probe: u64, folded: u64) -> bool {
    lower8(probe) == folded || fold8(probe) == folded
}
