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

/// The key of the pairs `md` holds, packed afresh.
fn packed(md: &Metadata) -> u64 {
    key::pack(md.pairs().iter().map(|&(_, kv)| kv), md.len())
}

proptest! {
    /// The key is the pack of the pairs held after every change: a pair set, replaced,
    /// beyond the capacity, pairs put and then packed, and a cut to some keys.
    #[test]
    fn the_key_is_the_pairs_packed(
        sets in prop::collection::vec((0..12u32, any::<u32>()), 0..16),
        keep in prop::collection::btree_set(0..12u32, 0..12),
    ) {
        let mut md = Metadata::default();
        prop_assert_eq!(md.key(), packed(&md));
        let mut put = Metadata::default();
        for &(k, kv) in &sets {
            md.set_ids(k, kv);
            prop_assert_eq!(md.key(), packed(&md));
            put.put_ids(k, kv);
        }
        put.pack();
        prop_assert_eq!(put, md);
        let keep: Vec<u32> = keep.into_iter().collect();
        let cut = md.only(&keep);
        prop_assert_eq!(cut.key(), packed(&cut));
    }
}
