//! Filling a large open-addressing table a stretch at a time: the items to add, grouped by
//! the top bits of their homes (sorted in place by counts), go in front to back, each probe in a
//! stretch of places that stays in cache, where items in any other order probe at random over
//! the whole table, a cache miss each once it outgrows a core's L2.

#[cfg(test)]
mod tests;

/// The stretches a table is filled by.
const STRETCHES: usize = 256;

/// Tables of at least this many bytes are filled a stretch at a time; in tests, smaller ones
/// too, for the property tests' tables to take both paths. 1 MiB is a core's L2 on current
/// server CPUs (AMD's Zen 4 1 MiB, Intel's since Sapphire Rapids 2 MiB): a table that fits
/// it gains nothing from grouping. 8k ids into 64 KiB filled half again as slowly grouped; the
/// 100k values of a key unique per host (512 KiB) built 10% slower grouped with a 2 MiB L2, 1-3%
/// faster with Zen 2's 512 KiB.
const GROUPED_BYTES: usize = if cfg!(test) { 1 << 10 } else { 1 << 20 };

/// Whether a table of `places` places of `T` is filled a stretch at a time.
pub(super) fn worth_grouping<T>(places: usize) -> bool {
    places.saturating_mul(size_of::<T>()) >= GROUPED_BYTES
}

/// Orders `items` by the stretch of their home in a table of `places` places (a power of
/// two), in place (American flag sort: each item swapped straight into its stretch's part);
/// `home` gives an item's. In place because a second buffer, freed in the middle of a build,
/// let the allocator give the top of the heap back to the system: a build of 100k subsets of
/// two keys from an owned table then faulted ~3,600 more pages each time (40% slower).
pub(super) fn group<T: Copy>(items: &mut [T], places: usize, home: impl Fn(&T) -> usize) {
    let shift = places.trailing_zeros().saturating_sub(STRETCHES.ilog2());
    let stretch = |item: &T| (home(item) >> shift) % STRETCHES;
    let (mut next, ends) = parts(items.iter().map(stretch));
    for s in 0..STRETCHES {
        while next[s] < ends[s] {
            // Carries the item at the stretch's next place on to where it belongs, taking
            // what was there, until one that belongs here comes back.
            let mut item = items[next[s]];
            let mut to = stretch(&item);
            while to != s {
                core::mem::swap(&mut item, &mut items[next[to]]);
                next[to] += 1;
                to = stretch(&item);
            }
            items[next[s]] = item;
            next[s] += 1;
        }
    }
}

/// Where each stretch's part of the grouped items starts and ends, from the items' stretches.
fn parts(stretches: impl Iterator<Item = usize>) -> ([usize; STRETCHES], [usize; STRETCHES]) {
    let mut starts = [0; STRETCHES];
    stretches.for_each(|s| starts[s] += 1);
    let mut ends = [0; STRETCHES];
    let mut start = 0;
    for (count, end) in starts.iter_mut().zip(&mut ends) {
        (*count, start) = (start, start + *count);
        *end = start;
    }
    (starts, ends)
}
