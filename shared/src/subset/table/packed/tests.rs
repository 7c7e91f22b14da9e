use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use proptest::prelude::*;

use super::super::Hit;
use super::super::SetRef;
use super::{Entry, Packed};

fn entry(key: u64, subset: u32) -> Entry {
    Entry {
        key,
        hit: Hit {
            set: SetRef::one(subset),
            subset,
        },
    }
}

fn find(table: &Packed, key: u64, subset: u32) -> Option<u32> {
    table
        .find(key, |e| e.hit.subset == subset)
        .map(|e| e.hit.subset)
}

/// Every entry the model holds is found, under its key only, and the table holds no other.
fn agrees(table: &Packed, model: &BTreeMap<u32, u64>) {
    assert_eq!(table.iter().count(), model.len());
    for (&subset, &key) in model {
        assert_eq!(
            find(table, key, subset),
            Some(subset),
            "{subset} under {key:#x}"
        );
        assert_eq!(find(table, key ^ 1 << 62, subset), None);
    }
    assert!(2 * model.len() <= table.capacity());
}

#[derive(Debug, Clone)]
enum Op {
    /// A new subset under key `1 + k` (few keys, so many entries share one).
    Insert(u64),
    /// New subsets under keys `1 + k`, added at once.
    Extend(Vec<u64>),
    /// Removes the `n`-th subset held (modulo), if any.
    Remove(usize),
    /// Moves the `n`-th subset held to another set.
    Change(usize),
    Shrink,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..40).prop_map(Op::Insert),
        1 => prop::collection::vec(0u64..40, 0..80).prop_map(Op::Extend),
        3 => any::<usize>().prop_map(Op::Remove),
        1 => any::<usize>().prop_map(Op::Change),
        1 => Just(Op::Shrink),
    ]
}

proptest! {
    #[test]
    fn agrees_with_a_map_under_inserts_extends_removes_and_resizes(ops in prop::collection::vec(op(), 0..300)) {
        let (mut table, mut model) = (Packed::default(), BTreeMap::new());
        let mut next = 0u32;
        for op in ops {
            match op {
                Op::Insert(k) => {
                    table.insert(entry(1 + k, next));
                    model.insert(next, 1 + k);
                    next += 1;
                }
                Op::Extend(keys) => {
                    let mut entries: Vec<Entry> = (keys.iter().zip(next..))
                        .map(|(&k, subset)| entry(1 + k, subset))
                        .collect();
                    table.extend(&mut entries);
                    for e in entries {
                        model.insert(e.hit.subset, e.key);
                    }
                    next += keys.len() as u32;
                }
                Op::Remove(n) if !model.is_empty() => {
                    let (&subset, &key) = model.iter().nth(n % model.len()).unwrap();
                    let gone = table.remove(key, |e| e.hit.subset == subset);
                    prop_assert_eq!(gone.map(|e| e.hit.subset), Some(subset));
                    model.remove(&subset);
                    prop_assert!(table.remove(key, |e| e.hit.subset == subset).is_none());
                }
                Op::Change(n) if !model.is_empty() => {
                    let (&subset, &key) = model.iter().nth(n % model.len()).unwrap();
                    let e = table.find_mut(key, |e| e.hit.subset == subset).unwrap();
                    e.hit.set = SetRef::one(subset + 1);
                    let e = table.find(key, |e| e.hit.subset == subset).unwrap();
                    prop_assert_eq!(e.hit.set, SetRef::one(subset + 1));
                }
                Op::Shrink => table.shrink_to_fit(),
                _ => {}
            }
            agrees(&table, &model);
        }
    }
}

#[test]
fn removal_shifts_back_across_the_end_of_the_array() {
    // Keys whose homes are the last place of an 8-place table: their probes wrap to the start.
    let table = Packed::default();
    let last: Vec<u64> = (1u64..).filter(|&k| table.home(k) == 7).take(3).collect();
    let first = (1u64..).find(|&k| table.home(k) == 0).unwrap();
    let mut table = table;
    for (i, &k) in last.iter().enumerate() {
        table.insert(entry(k, i as u32));
    }
    // Home 0, pushed to place 2 by the two that wrapped.
    table.insert(entry(first, 9));
    assert_eq!(table.position(first, |_| true), Some(2));
    table.remove(last[0], |_| true).unwrap();
    // Both wrapped entries and the one they displaced are still found, each moved back.
    for (i, &k) in last.iter().enumerate().skip(1) {
        assert_eq!(find(&table, k, i as u32), Some(i as u32));
    }
    assert_eq!(table.position(first, |_| true), Some(1));
    assert_eq!(table.position(last[1], |_| true), Some(7));
    assert_eq!(table.position(last[2], |_| true), Some(0));
}

#[test]
fn entries_sharing_a_key_are_told_apart_by_the_caller() {
    let mut table = Packed::default();
    for subset in 0..5 {
        table.insert(entry(42, subset));
    }
    for subset in 0..5 {
        assert_eq!(find(&table, 42, subset), Some(subset));
    }
    assert_eq!(find(&table, 42, 5), None);
    table.remove(42, |e| e.hit.subset == 2).unwrap();
    assert_eq!(find(&table, 42, 2), None);
    assert_eq!(find(&table, 42, 4), Some(4));
}

#[test]
fn grows_to_stay_half_free_and_shrinks_back() {
    let mut table = Packed::default();
    table.reserve(100);
    assert_eq!(table.capacity(), 256);
    for subset in 0..100u32 {
        table.insert(entry(1 + u64::from(subset), subset));
    }
    assert_eq!(table.capacity(), 256);
    table.insert(entry(1000, 100));
    assert_eq!(table.capacity(), 256);
    for subset in 0..90u32 {
        table.remove(1 + u64::from(subset), |_| true).unwrap();
    }
    table.shrink_to_fit();
    assert_eq!(table.capacity(), 32);
    assert_eq!(find(&table, 1000, 100), Some(100));
    assert_eq!(find(&table, 95, 94), Some(94));
}

#[test]
fn places_never_shrink_for_more_entries() {
    use super::places_for;
    assert_eq!(places_for(0), 8);
    assert_eq!(places_for(5), 16);
    let top = 1usize << (usize::BITS - 1);
    assert_eq!(places_for(top / 2), top);
    assert_eq!(places_for(top / 2 + 1), top);
    assert_eq!(places_for(usize::MAX), top);
}
