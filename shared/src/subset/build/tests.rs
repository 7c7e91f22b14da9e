use alloc::{collections::BTreeMap, format, string::ToString, vec::Vec};

use super::*;
use crate::{HostTable, SubsetSelector};

/// A table of 300 hosts with a dense key (`zone`, 3 values), a key unique per host (`id`) and
/// a rare one (`rare`, on every 60th host), the three in one selector each.
fn mixed() -> SubsetLb {
    let hosts = (0..300usize)
        .map(|i| {
            let mut labels = BTreeMap::new();
            labels.insert("zone".to_string(), format!("z{}", i % 3));
            labels.insert("id".to_string(), format!("h{i}"));
            if i % 60 == 0 {
                labels.insert("rare".to_string(), "yes".to_string());
            }
            Host {
                address: format!("http://10.0.{}.{}", i / 250, i % 250),
                weight: 1,
                healthy: true,
                labels,
            }
        })
        .collect();
    let selectors = ["zone", "id", "rare"].map(|k| SubsetSelector {
        keys: [k.to_string()].into(),
        ..SubsetSelector::default()
    });
    let subset = SubsetConfig {
        selectors: selectors.into(),
        ..SubsetConfig::default()
    };
    SubsetLb::build(&HostTable {
        version: 1,
        hosts,
        subset,
    })
    .unwrap()
}

/// Dense ids get a bitset and no list, sparse ones a list and no bitset, and each lists
/// exactly the slots whose records carry it, ascending, whichever way it is kept.
#[test]
fn dense_ids_are_bitsets_and_sparse_ones_lists() {
    let lb = mixed();
    let index = Index::new(&lb, None);
    let dense = |key: &str, value: &str| {
        let kv = lb
            .interner
            .kv(lb.interner.key(key).unwrap(), value)
            .unwrap();
        index.bitset(kv).is_some()
    };
    assert!(dense("zone", "z1"));
    assert!(!dense("id", "h7"));
    assert!(!dense("rare", "yes"));
    for kv in 0..lb.interner.kv_count() as u32 {
        let expected: Vec<u32> = (0..lb.slots.len() as u32)
            .filter(|&s| lb.records.kvs(s).contains(&kv))
            .collect();
        let mut got = Vec::new();
        index.each_slot(kv, |s| got.push(s));
        assert_eq!(got, expected, "kv {kv}");
        match index.bitset(kv) {
            Some(_) => assert!(index.list(kv).is_empty(), "kv {kv}"),
            None => assert_eq!(index.list(kv), &expected[..], "kv {kv}"),
        }
    }
}

/// An index adopting bits set as the labels were read ([`Prefill`]) is the one counted from
/// the records: the dense ids' bitsets moved to their places (`zone`'s three, below ids that
/// went to lists), the sparse ids listed from their bits.
#[test]
fn prefilled_bits_make_the_same_index() {
    let lb = mixed();
    let (ids, hosts) = (lb.interner.kv_count(), lb.slots.len());
    let mut counts = alloc::vec![0u32; ids + 1];
    let mut prefill = Prefill {
        words: hosts.div_ceil(64),
        bits: alloc::vec![0; ids * hosts.div_ceil(64)],
    };
    for s in 0..hosts as u32 {
        for &kv in lb.records.kvs(s) {
            counts[kv as usize + 1] += 1;
            prefill.set(s as usize, kv);
        }
    }
    let counted = Counted {
        counts,
        prefill: Some(prefill),
    };
    let (adopted, counted) = (Index::new(&lb, Some(counted)), Index::new(&lb, None));
    assert_eq!(adopted.bitsets, counted.bitsets);
    assert_eq!(adopted.bitset_at, counted.bitset_at);
    assert!(adopted.bitset_at.iter().any(|&at| at != NO_BITSET));
    for kv in 0..ids as u32 {
        assert_eq!(adopted.list(kv), counted.list(kv), "kv {kv}");
    }
}

/// Bits are set as the labels are read only when they take no more room than the labels' ids,
/// and never for a table too small to have a dense id.
#[test]
fn prefill_only_when_small() {
    assert!(Prefill::new(12, 100_000, 400_000).is_some());
    // The table of `decoded_dense_and_sparse_ids_agree_with_the_reference`: 5 ids, 200 hosts
    // of 2 labels.
    assert!(Prefill::new(5, 200, 400).is_some());
    assert!(Prefill::new(100_000, 100_000, 100_000).is_none());
    assert!(Prefill::new(2, 63, 126).is_none());
    assert!(Prefill::new(usize::MAX, 1 << 20, 1 << 20).is_none());
    // A product that fits, twice which does not (at 2^31 on Wasm's 32-bit `usize`).
    assert!(Prefill::new(usize::MAX / 2 + 1, 64, usize::MAX).is_none());
}
