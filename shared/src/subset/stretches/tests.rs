use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

proptest! {
    /// Grouping sorts by stretch: the same items, their stretches ascending.
    #[test]
    fn grouping_sorts_by_stretch(
        bits in 0u32..12,
        homes in proptest::collection::vec(any::<usize>(), 0..400),
    ) {
        let places = 1usize << bits;
        let items: Vec<(usize, usize)> =
            homes.iter().map(|h| h & (places - 1)).enumerate().collect();
        let stretch = |&(_, home): &(usize, usize)| home * STRETCHES.min(places) / places;
        let mut got = items.clone();
        group(&mut got, places, |&(_, home)| home);
        prop_assert!(got.is_sorted_by_key(stretch));
        got.sort_unstable();
        prop_assert_eq!(got, items);
    }
}

#[test]
fn large_tables_are_grouped() {
    assert!(!worth_grouping::<u32>(GROUPED_BYTES / 4 - 1));
    assert!(worth_grouping::<u32>(GROUPED_BYTES / 4));
    assert!(worth_grouping::<u64>(usize::MAX));
}
