extern crate std;

use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

proptest! {
    /// Pairs set in any order are kept sorted by key, the last value of a key winning; a
    /// pair beyond the capacity marks the metadata foreign.
    #[test]
    fn pairs_stay_sorted_whatever_order_sets_them(
        sets in prop::collection::vec((0..12u32, any::<u32>()), 0..16),
    ) {
        let mut md = Metadata::default();
        let mut model = BTreeMap::new();
        let mut overflow = false;
        for &(k, kv) in &sets {
            if model.len() == METADATA_CAPACITY && !model.contains_key(&k) {
                overflow = true;
            } else {
                model.insert(k, kv);
            }
            md.set_ids(k, kv);
        }
        let expected: Vec<(u32, u32)> = model.into_iter().collect();
        prop_assert_eq!(md.pairs(), &expected[..]);
        prop_assert_eq!(md.has_foreign_key(), overflow);
    }
}
