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
