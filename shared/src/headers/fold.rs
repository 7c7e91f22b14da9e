//! Exact ASCII case-insensitive comparison, eight bytes at a time.
//!
//! Stored names are lower case; only the probe is folded. Folding touches `A`-`Z` and nothing
//! else: the common `b | 0x20` trick would also equate `^` with `~` and `@` with `` ` ``, both
//! legal in header names, and so give false positives.

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

/// `probe` equals `lower` ignoring ASCII case, where `lower` is already lower case and both
/// have the same length.
#[inline]
pub(crate) fn eq_folded(probe: &[u8], lower: &[u8]) -> bool {
    debug_assert_eq!(probe.len(), lower.len());
    let n = probe.len();
    if n < 8 {
        return lower8(load_short(probe)) == load_short(lower);
    }
    let mut at = 0;
    while at + 8 < n {
        if lower8(load_u64(probe, at)) != load_u64(lower, at) {
            return false;
        }
        at += 8;
    }
    // The last word overlaps the previous one rather than reading past the end.
    lower8(load_u64(probe, n - 8)) == load_u64(lower, n - 8)
}
