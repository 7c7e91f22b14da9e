//! Filling a large open-addressing table a stretch at a time: the items to add, grouped by
//! the top bits of their homes (a counting sort), go in front to back, each probe in a
//! stretch of places that stays in cache, where items in any other order probe at random over
//! the whole table, a cache miss each once it outgrows a core's L2 (512 KiB here).

use alloc::{vec, vec::Vec};

#[cfg(test)]
mod tests;

/// The stretches a table is filled by.
const STRETCHES: usize = 256;

/// Tables of at least this many bytes are filled a stretch at a time; in tests, smaller ones
/// too, for the property tests' tables to take both paths. Below it grouping gained nothing:
/// 8k ids into 64 KiB filled half again as slowly grouped.
const GROUPED_BYTES: usize = if cfg!(test) { 1 << 10 } else { 256 << 10 };

/// Whether a table of `places` places of `T` is filled a stretch at a time.
pub(super) fn worth_grouping<T>(places: usize) -> bool {
    places.saturating_mul(size_of::<T>()) >= GROUPED_BYTES
}

/// `items` ordered by the stretch of their home in a table of `places` places (a power of
/// two), stable within a stretch; `home` gives an item's.
pub(super) fn grouped<T, I>(items: I, places: usize, home: impl Fn(&T) -> usize) -> Vec<T>
where
    T: Copy,
    I: Iterator<Item = T> + Clone,
{
    let Some(first) = items.clone().next() else {
        return Vec::new();
    };
    let shift = places.trailing_zeros().saturating_sub(STRETCHES.ilog2());
    let stretch = |item: &T| (home(item) >> shift) % STRETCHES;
    let mut starts = [0usize; STRETCHES];
    for item in items.clone() {
        starts[stretch(&item)] += 1;
    }
    let mut start = 0;
    for count in &mut starts {
        (*count, start) = (start, start + *count);
    }
    let mut grouped = vec![first; start];
    for item in items {
        let at = &mut starts[stretch(&item)];
        grouped[*at] = item;
        *at += 1;
    }
    grouped
}
