//! A cache hint: start loading a value that a later lookup will read, so that its miss overlaps
//! the work in between instead of stalling that lookup.
//!
//! The one `unsafe` block of the core outside the feature store. On x86_64 it asks for the
//! value's line with `prefetcht0`; elsewhere (Wasm has no such instruction; aarch64's is not
//! stable in Rust yet) it does nothing.
#![cfg_attr(
    all(target_arch = "x86_64", target_feature = "sse"),
    allow(unsafe_code)
)]

/// Hints the CPU to bring `values[i]`'s cache line into L1. Any `i` will do: one out of bounds
/// hints a line of no use, and costs no bounds check.
#[inline(always)]
pub(super) fn prefetch<T>(values: &[T], i: usize) {
    let at = values.as_ptr().wrapping_add(i);
    #[cfg(all(target_arch = "x86_64", target_feature = "sse"))]
    // SAFETY: `_mm_prefetch` is `unsafe` only because it is declared with
    // `#[target_feature(enable = "sse")]`, and this code is compiled only where SSE is enabled
    // (it is part of x86_64's baseline). The instruction reads no memory the program sees and
    // never faults, whatever the address (`at` may be past `values`: only the pointer is made,
    // by wrapping arithmetic, and it is not dereferenced).
    unsafe {
        use core::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        _mm_prefetch::<_MM_HINT_T0>(at.cast());
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse")))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::prefetch;

    #[test]
    fn a_prefetch_changes_nothing() {
        let values: alloc::vec::Vec<u64> = (0..4096).collect();
        for i in (0..10_000).step_by(7) {
            prefetch(&values, i);
        }
        prefetch(&values, usize::MAX);
        prefetch::<()>(&[], 3);
        assert!(values.iter().enumerate().all(|(i, &v)| v == i as u64));
    }
}
