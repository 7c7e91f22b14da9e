extern crate std;

use alloc::vec::Vec;
use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

/// A hash per id from few distinct ones (homes and tags collide), or spread.
fn hash(id: u32, distinct: u64) -> u64 {
    let h = u64::from(id) % distinct;
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (h << 7)
}

#[test]
fn ids_past_the_tagged_bits_take_the_whole_place() {
    let mut table = Values::with_capacity(4);
    let ids = [0, 5, FIRST_IDS - 1, FIRST_IDS, u32::MAX - 1, 17];
    for &id in &ids {
        table.insert_unique(hash(id, 1 << 40), id, |id| hash(id, 1 << 40));
    }
    assert_eq!(table.ids, u32::MAX);
    assert_eq!(table.len, ids.len());
    for &id in &ids {
        assert_eq!(table.find(hash(id, 1 << 40), |found| found == id), Some(id));
    }
    assert_eq!(table.find(hash(3, 1 << 40), |found| found == 3), None);
}

#[test]
fn a_full_run_of_places_wraps_around_the_end() {
    // Every hash's home is the last place: the probes go round past it.
    let mut table = Values::with_capacity(8);
    let last = |_: u32| u64::MAX;
    for id in 0..10 {
        table.insert_unique(last(id), id, last);
    }
    for id in 0..10 {
        assert_eq!(table.find(u64::MAX, |found| found == id), Some(id));
    }
    assert_eq!(table.find(u64::MAX, |_| false), None);
    let mut held: Vec<u32> = table.ids().collect();
    held.sort_unstable();
    assert_eq!(held, (0..10).collect::<Vec<_>>());
}

proptest! {
    /// A fill places ids as inserting them one by one would let them be found: through its
    /// rounds and the ids left after them, into a table that has ids already, has to grow, or
    /// has to widen its ids.
    #[test]
    fn a_fill_finds_what_inserts_find(
        before in 0u32..50,
        count in 0usize..600,
        distinct in prop_oneof![Just(1u64), Just(7), Just(1 << 40)],
        capacity in 0usize..700,
        first in prop_oneof![Just(50u32), Just(FIRST_IDS - 300)],
    ) {
        let mut table = Values::with_capacity(capacity);
        for id in 0..before {
            table.insert_unique(hash(id, distinct), id, |id| hash(id, distinct));
        }
        let hashes: Vec<u64> = (0..count as u32).map(|i| hash(first + i, distinct)).collect();
        let mut entries = table.start_fill(first, count, |id| hash(id, distinct));
        entries.extend(hashes.iter().zip(first..).map(|(&h, id)| table.entry(h, id)));
        table.finish_fill(entries);
        prop_assert_eq!(table.len, before as usize + count);
        prop_assert!(table.len * 16 <= table.places.len() * 13);
        let mut held: Vec<u32> = table.ids().collect();
        held.sort_unstable();
        let expected: Vec<u32> = (0..before).chain(first..first + count as u32).collect();
        prop_assert_eq!(held, expected.clone());
        for id in expected {
            prop_assert_eq!(table.find(hash(id, distinct), |found| found == id), Some(id));
        }
        prop_assert_eq!(table.find(hash(first + count as u32, 1 << 40), |_| false), None);
    }

    /// The table answers as a map does, through growth, a shrink and colliding hashes: every
    /// id added is found by its hash, and a hash finds nothing that `same` refuses.
    #[test]
    fn agrees_with_a_map(
        ids in proptest::collection::hash_set(0u32..5_000, 0..400),
        distinct in prop_oneof![Just(1u64), Just(7), Just(1 << 40)],
        capacity in 0usize..64,
        shrink_at in any::<proptest::sample::Index>(),
    ) {
        let ids: Vec<u32> = ids.into_iter().collect();
        let mut table = Values::with_capacity(capacity);
        let mut map = HashMap::new();
        let shrink_at = shrink_at.index(ids.len() + 1);
        for (i, &id) in ids.iter().enumerate() {
            if i == shrink_at {
                table.shrink_to_fit(|id| hash(id, distinct));
            }
            table.insert_unique(hash(id, distinct), id, |id| hash(id, distinct));
            map.insert(id, ());
            prop_assert!(table.len * 16 <= table.places.len() * 13);
        }
        prop_assert_eq!(table.len, map.len());
        for probe in 0..5_000u32 {
            let found = table.find(hash(probe, distinct), |id| id == probe);
            prop_assert_eq!(found, map.contains_key(&probe).then_some(probe));
        }
        table.shrink_to_fit(|id| hash(id, distinct));
        prop_assert_eq!(table.places.len(), places_for(map.len()));
        for &id in &ids {
            prop_assert_eq!(table.find(hash(id, distinct), |found| found == id), Some(id));
        }
    }
}
