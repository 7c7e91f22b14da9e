use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

proptest! {
    /// Grouping is a stable sort by stretch: the same items, stretches ascending, and items
    /// of one stretch in their order before.
    #[test]
    fn grouping_sorts_stably_by_stretch(
        bits in 0u32..12,
        homes in proptest::collection::vec(any::<usize>(), 0..400),
    ) {
        let places = 1usize << bits;
        let items: Vec<(usize, usize)> =
            homes.iter().map(|h| h & (places - 1)).enumerate().collect();
        let stretch = |&(_, home): &(usize, usize)| home * STRETCHES.min(places) / places;
        let got = grouped(items.iter().copied(), places, |&(_, home)| home);
        let mut expected = items.clone();
        expected.sort_by_key(stretch);
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn large_tables_are_grouped() {
    assert!(!worth_grouping::<u32>(GROUPED_BYTES / 4 - 1));
    assert!(worth_grouping::<u32>(GROUPED_BYTES / 4));
    assert!(worth_grouping::<u64>(usize::MAX));
}
