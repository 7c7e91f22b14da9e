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

#[test]
fn radix_sort_is_a_stable_sort() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for bits in [0u32, 1, 5, 11, 12, 23, 32] {
        let mask = u64::MAX.checked_shr(64 - bits).unwrap_or(0);
        let packed: Vec<u64> = (0..3000u64)
            .map(|slot| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Few distinct keys, so that stability shows.
                let key = ((x % 7) << bits.saturating_sub(3)) & mask;
                key << 32 | slot
            })
            .collect();
        let mut expected = packed.clone();
        expected.sort_by_key(|&p| p >> 32);
        assert_eq!(radix_sort(packed, bits), expected, "{bits} bits");
    }
}

#[test]
fn a_host_with_two_values_of_a_key_gets_no_chain() {
    // Key 0 has values 10 and 11; slot 1 carries both (a table that broke the one value per
    // key): its sets keep their own members rather than trust a range.
    let index = Index {
        hosts: 3,
        starts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 4].into(),
        slots: [0, 1, 1, 2].into(),
        bitsets: Vec::new(),
        values: [[10, 11].into()].into(),
    };
    let selectors = [selector(&[0])];
    let mut chains = Chains::new(Plan::new(&selectors, false));
    let mut shared = Vec::new();
    assert_eq!(
        chains.range(&selectors[0], 0, &[10], 2, &index, &mut shared),
        None
    );
    assert!(shared.is_empty());
    // Without slot 1's second value, value 10 is the range of slots 0 and 1.
    let index = Index {
        slots: [0, 1, 2].into(),
        starts: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 3].into(),
        ..index
    };
    let mut chains = Chains::new(Plan::new(&selectors, false));
    assert_eq!(
        chains.range(&selectors[0], 0, &[10], 2, &index, &mut shared),
        Some(0)
    );
    assert_eq!(
        chains.range(&selectors[0], 0, &[11], 1, &index, &mut shared),
        Some(2)
    );
    assert_eq!(shared, [0, 1, 2]);
    // A count that disagrees with the order (more hosts than the value has) is refused.
    assert_eq!(
        chains.range(&selectors[0], 0, &[10], 3, &index, &mut shared),
        None
    );
}
