use alloc::{boxed::Box, vec::Vec};

use super::*;
use crate::SelectorFallback;

fn selector(keys: &[u32]) -> Selector {
    Selector {
        keys: keys.into(),
        fallback: SelectorFallback::NotDefined,
        keys_subset: Box::default(),
        single: false,
    }
}

/// Every non-empty subset of keys `0..n`.
fn all_selectors(n: u32) -> Vec<Selector> {
    (1u32..1 << n)
        .map(|bits| selector(&(0..n).filter(|k| bits & (1 << k) != 0).collect::<Vec<_>>()))
        .collect()
}

#[test]
fn nested_selectors_share_chains() {
    // Dilworth: the widest antichain of the subsets of 4 keys is the 6 pairs.
    let selectors = all_selectors(4);
    let plan = Plan::new(&selectors, false);
    assert_eq!(plan.chains(), 6);
    for (i, s) in selectors.iter().enumerate() {
        let c = plan.of[i].expect("every selector has a chain");
        // A selector's keys are the first keys of its chain.
        let mut first: Vec<u32> = plan.keys[c][..s.keys.len()].to_vec();
        first.sort_unstable();
        assert_eq!(&first[..], &s.keys[..], "selector {i}");
    }
    assert_eq!(Plan::new(&all_selectors(3), false).chains(), 3);
    assert_eq!(Plan::new(&all_selectors(1), false).chains(), 1);
    assert_eq!(Plan::new(&all_selectors(4), true).chains(), 0);
}

/// An index of `hosts` hosts over key 0 (value ids 10, 11) and key 1 (value ids 20, 21, 22),
/// from each value's slots.
fn index(hosts: usize, lists: [&[u32]; 5]) -> Index {
    let mut starts = vec![0u32; 10];
    let mut slots = Vec::new();
    for (kv, list) in [10, 11, 20, 21, 22].into_iter().zip(lists) {
        starts.resize(kv + 1, slots.len() as u32);
        slots.extend_from_slice(list);
        starts.push(slots.len() as u32);
    }
    Index {
        hosts,
        starts,
        slots,
        bitset_at: Vec::new(),
        bitsets: Vec::new(),
        words: 0,
        values: [[10, 11].into(), [20, 21, 22].into()].into(),
        direct: Default::default(),
    }
}

#[test]
fn a_chain_orders_hosts_by_their_values_missing_last() {
    // Slot: (key 0, key 1) = 0: (11, 20), 1: (10, -), 2: (11, 22), 3: (10, 20), 4: (-, 21),
    // 5: (11, 20).
    let hosts = index(6, [&[1, 3], &[0, 2, 5], &[0, 3, 5], &[4], &[2]]);
    let selectors = [selector(&[0]), selector(&[0, 1])];
    let mut chains = Chains::new(Plan::new(&selectors, false));
    let mut shared = vec![7, 7];
    let range = |c: &mut Chains, s: usize, kvs: &[u32], len, shared: &mut Vec<u32>| {
        c.range(&selectors[s], s as u8, kvs, len, &hosts, shared)
    };
    // After what `shared` held: by key 0 (10, 11), then key 1 (20, 21, 22, none), then slot;
    // slot 4, without key 0, in no subset of the chain.
    assert_eq!(range(&mut chains, 0, &[11], 3, &mut shared), Some(4));
    assert_eq!(shared, [7, 7, 3, 1, 0, 5, 2]);
    assert_eq!(range(&mut chains, 0, &[10], 2, &mut shared), Some(2));
    assert_eq!(range(&mut chains, 1, &[11, 20], 2, &mut shared), Some(4));
    assert_eq!(range(&mut chains, 1, &[11, 22], 1, &mut shared), Some(6));
    assert_eq!(range(&mut chains, 1, &[10, 20], 1, &mut shared), Some(2));
    // Sorted once.
    assert_eq!(shared.len(), 7);
    // A count that disagrees with the ranks (more hosts than have the values) is refused.
    assert_eq!(range(&mut chains, 1, &[11, 20], 3, &mut shared), None);
}
#[test]
fn a_host_with_two_values_of_a_key_gets_no_range_of_either() {
    // Slot 1 carries both values of key 0 (a table that broke the one value per key): a range
    // holds only hosts with the subset's values, and the subsets it does not hold whole keep
    // members of their own.
    let hosts = index(3, [&[0, 1], &[1, 2], &[], &[], &[]]);
    let selectors = [selector(&[0])];
    let mut chains = Chains::new(Plan::new(&selectors, false));
    let mut shared = Vec::new();
    let first = chains.range(&selectors[0], 0, &[10], 2, &hosts, &mut shared);
    let second = chains.range(&selectors[0], 0, &[11], 2, &hosts, &mut shared);
    for (range, kv) in [(first, 10), (second, 11)] {
        if let Some(start) = range {
            let members = &shared[start as usize..start as usize + 2];
            assert!(
                members.iter().all(|s| hosts.list(kv).contains(s)),
                "{kv}: {members:?}"
            );
        }
    }
    assert!(first.is_none() || second.is_none());
}

/// An index of hosts with values `0..` of keys `0..` (`None`: the host lacks the key); the
/// value id of key `k`'s value `v` is `100 * k + v`.
fn index_of(hosts: &[Vec<Option<u32>>]) -> Index {
    let keys = hosts.first().map_or(0, Vec::len);
    let mut starts = vec![0u32];
    let mut slots = Vec::new();
    let mut values = vec![Vec::new(); keys];
    for kv in 0..100 * keys as u32 {
        let (key, value) = ((kv / 100) as usize, kv % 100);
        let list = (0..hosts.len() as u32).filter(|&s| hosts[s as usize][key] == Some(value));
        let before = slots.len();
        slots.extend(list);
        if slots.len() > before {
            values[key].push(kv);
        }
        starts.push(slots.len() as u32);
    }
    Index {
        hosts: hosts.len(),
        starts,
        slots,
        bitset_at: Vec::new(),
        bitsets: Vec::new(),
        words: 0,
        values,
        direct: Default::default(),
    }
}

/// Each subset's hosts, by chain, as `chains` puts them: sorted, or `None` for no range.
fn ranges(
    chains: &mut Chains,
    selectors: &[Selector],
    hosts: &[Vec<Option<u32>>],
) -> Vec<Option<Vec<u32>>> {
    let index = index_of(hosts);
    let mut shared = Vec::new();
    let mut found = Vec::new();
    for (i, selector) in selectors.iter().enumerate() {
        // Every combination of values of the selector's keys some host has.
        let mut combinations: Vec<Vec<u32>> = hosts
            .iter()
            .filter_map(|h| {
                selector
                    .keys
                    .iter()
                    .map(|&k| h[k as usize])
                    .collect::<Option<Vec<u32>>>()
            })
            .collect();
        combinations.sort_unstable();
        combinations.dedup();
        for values in combinations {
            let kvs: Vec<u32> = selector
                .keys
                .iter()
                .zip(&values)
                .map(|(&k, &v)| 100 * k + v)
                .collect();
            let members = (0..hosts.len() as u32).filter(|&s| {
                selector
                    .keys
                    .iter()
                    .zip(&values)
                    .all(|(&k, &v)| hosts[s as usize][k as usize] == Some(v))
            });
            let expected: Vec<u32> = members.collect();
            let range = chains.range(selector, i as u8, &kvs, expected.len(), &index, &mut shared);
            let got = range.map(|start| {
                let mut got = shared[start as usize..start as usize + expected.len()].to_vec();
                got.sort_unstable();
                got
            });
            if let Some(got) = &got {
                assert_eq!(got, &expected, "selector {i}, values {values:?}");
            }
            found.push(got);
        }
    }
    found
}

/// Grouping the hosts by every chain's ranks at once gives each subset the hosts a chain
/// sorted by itself gives it; with too many values to group, each chain is sorted by itself.
#[test]
fn grouped_chains_hold_what_chains_sorted_alone_do() {
    let selectors = all_selectors(3);
    for values in [3u32, 7, 40] {
        // Pseudo-random values, some missing: 3 keys of 7 values make a group of a host or
        // two for most combinations; of 40 values they take 18 bits, too many to group, and
        // too many for one chain's sort to take every key.
        let hosts: Vec<Vec<Option<u32>>> = (0..300u32)
            .map(|s| {
                (0..3u32)
                    .map(|k| {
                        let x = s.wrapping_mul(2654435761).rotate_left(7 * k) % (values + 1);
                        (x < values).then_some(x)
                    })
                    .collect()
            })
            .collect();
        let mut chains = Chains::new(Plan::new(&selectors, false));
        let grouped = ranges(&mut chains, &selectors, &hosts);
        assert_eq!(chains.combos.map(|c| c.is_some()), Some(values < 40));
        let mut chains = Chains::ungrouped(Plan::new(&selectors, false));
        let alone = ranges(&mut chains, &selectors, &hosts);
        assert_eq!(grouped, alone, "{values} values");
        let held = grouped.iter().filter(|r| r.is_some()).count();
        assert!(
            held * 2 > grouped.len(),
            "{values} values: {held} of {} ranges",
            grouped.len()
        );
    }
}
