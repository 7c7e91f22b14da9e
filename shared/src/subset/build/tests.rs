use alloc::{collections::BTreeMap, format, string::ToString, vec::Vec};

use super::*;
use crate::{HostTable, SubsetSelector};

/// A table of 300 hosts with a dense key (`zone`, 3 values), a key unique per host (`id`) and
/// a rare one (`rare`, on every 60th host), the three in one selector each.
fn mixed() -> SubsetLb {
    mixed_with(&[&["zone"], &["id"], &["rare"]], &[])
}

/// [`mixed`]'s hosts with `selectors` and a default subset of the labels `default`.
fn mixed_with(selectors: &[&[&str]], default: &[(&str, &str)]) -> SubsetLb {
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
    let selectors = selectors.iter().map(|keys| SubsetSelector {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        ..SubsetSelector::default()
    });
    let default = default.iter().map(|&(k, v)| (k.to_string(), v.to_string()));
    let subset = SubsetConfig {
        selectors: selectors.collect(),
        default_subset: default.collect(),
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
    let index = Index::new(&lb, None, &[]);
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
    let (adopted, counted) = (
        Index::new(&lb, Some(counted), &[]),
        Index::new(&lb, None, &[]),
    );
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

/// A key that only a one-key selector has (`id`, and `rare`) keeps no list for a value of one
/// host: its subset, that host, is set for the table's array as the index is filled, and the
/// walk never visits it. A value of several hosts (`rare`'s) is indexed as before.
#[test]
fn one_host_values_of_a_lone_key_are_direct() {
    let lb = mixed();
    let lone = lb.lone_keys(&Trie::new(&lb.selectors));
    let key = |k: &str| lb.interner.key(k).unwrap();
    for k in ["zone", "id", "rare"] {
        assert!(lone[key(k) as usize].is_some(), "{k}");
    }
    let index = Index::new(&lb, None, &lone);
    assert_eq!(index.direct.count, 300);
    assert!(index.values(key("id")).is_empty());
    assert_eq!(index.values(key("zone")).len(), 3);
    let rare = lb.interner.kv(key("rare"), "yes").unwrap();
    assert_eq!(index.values(key("rare")), &[rare]);
    assert_eq!(index.list(rare).len(), 5);
    for s in 0..300 {
        for &kv in lb.records.kvs(s) {
            let direct = index.direct.has(kv);
            assert_eq!(direct, lb.interner.kv_key(kv) == key("id"), "kv {kv}");
            if direct {
                assert!(index.list(kv).is_empty());
                assert_eq!(index.direct.sets[kv as usize], SetRef::one(s));
            }
        }
    }
}

/// A key is lone only in a one-key selector of its own: not below or above another key in a
/// selector, nor in the default subset (whose hosts the index's lists make).
#[test]
fn a_key_shared_with_another_selector_or_the_default_is_not_lone() {
    let lone = |selectors: &[&[&str]], default: &[(&str, &str)]| {
        let lb = mixed_with(selectors, default);
        let lone = lb.lone_keys(&Trie::new(&lb.selectors));
        let mut keys: Vec<&str> = ["id", "rare", "zone"]
            .into_iter()
            .filter(|k| lone[lb.interner.key(k).unwrap() as usize].is_some())
            .collect();
        keys.sort_unstable();
        keys
    };
    assert_eq!(lone(&[&["id"], &["zone"]], &[]), ["id", "zone"]);
    assert_eq!(lone(&[&["id"], &["id", "zone"]], &[]), [] as [&str; 0]);
    assert_eq!(lone(&[&["id"], &["rare", "zone"], &["zone"]], &[]), ["id"]);
    assert_eq!(lone(&[&["id"], &["zone"]], &[("id", "h1")]), ["zone"]);
    assert_eq!(lone(&[&["id", "rare"]], &[]), [] as [&str; 0]);
}
