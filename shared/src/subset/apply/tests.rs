#![allow(clippy::unwrap_used, clippy::expect_used)]
extern crate std;

use std::collections::BTreeMap;
use std::string::String;
use std::vec;
use std::vec::Vec;

use proptest::prelude::*;

use super::super::tests::{agree, config, host, host_parts, labels, pairs, picked};
use crate::{Host, HostDelta, HostTable, HostTableError, SubsetConfig, SubsetError, SubsetLb};
use crate::{SubsetSelector, subset::SubsetStats};

fn zones() -> HostTable {
    let mut subset = SubsetConfig::default();
    subset.selectors.push(SubsetSelector::new(["zone"]));
    let hosts = (0..6)
        .map(|i| {
            let zone = if i < 3 { "a" } else { "b" };
            Host::new(std::format!("http://10.0.0.{i}:8080")).with_label("zone", zone)
        })
        .collect();
    HostTable {
        version: 1,
        hosts,
        subset,
    }
}

/// Everything a caller can see of an index: its version, stats and picks per zone.
fn snapshot(lb: &mut SubsetLb) -> (u64, SubsetStats, Vec<std::collections::BTreeSet<String>>) {
    let picks = vec![picked(lb, "a"), picked(lb, "b"), picked(lb, "c")];
    let mut stats = lb.stats();
    stats.selections = 0;
    stats.subset_hits = 0;
    stats.fallbacks = 0;
    stats.no_host = 0;
    (lb.version(), stats, picks)
}

#[test]
fn relabel_moves_a_host_and_a_health_change_keeps_its_place() {
    let old = zones();
    let mut new = old.clone();
    new.version = 2;
    new.hosts[0].labels.insert("zone".into(), "b".into());
    new.hosts[4].healthy = false;
    new.hosts[5].weight = 9;
    new.hosts.remove(1);
    new.hosts
        .push(Host::new("http://10.0.0.9:8080").with_label("zone", "c"));
    let mut lb = SubsetLb::build(&old).unwrap();
    let kept = lb.host_id("http://10.0.0.5:8080").unwrap();
    let mut md = lb.metadata();
    lb.set(&mut md, "zone", "b");
    // A request in flight on the host whose weight changes.
    let in_flight = std::iter::repeat_with(|| lb.select(&md, 7).unwrap().host)
        .take(6)
        .filter(|&h| h == kept)
        .count() as u32;
    assert!(in_flight > 0);

    let delta = HostDelta::between(&old, &new).unwrap();
    let applied = lb.apply(&delta).unwrap();
    assert_eq!(
        (
            applied.added,
            applied.removed,
            applied.updated,
            applied.relabelled
        ),
        (1, 1, 2, 1)
    );
    assert_eq!(lb.version(), 2);
    assert_eq!(lb.host_id("http://10.0.0.5:8080"), Some(kept));
    assert_eq!(lb.in_flight(kept), Some(in_flight));
    assert_eq!(lb.weight(kept), Some(9));
    assert_eq!(lb.host_id("http://10.0.0.1:8080"), None);
    let a: Vec<&str> = vec!["http://10.0.0.2:8080"];
    assert_eq!(
        picked(&mut lb, "a"),
        a.into_iter().map(String::from).collect()
    );
    assert!(picked(&mut lb, "b").contains("http://10.0.0.0:8080"));
    assert!(!picked(&mut lb, "b").contains("http://10.0.0.4:8080"));
    assert_eq!(picked(&mut lb, "c").len(), 1);
}

/// Labels no selector (or default subset) has are not routing state: a new build id keeps the
/// host in place with its requests in flight, and no subset is recounted; a routing label
/// changed beside it still moves the host.
#[test]
fn a_label_no_selector_has_keeps_the_host_in_place() {
    let mut old = zones();
    for host in &mut old.hosts {
        host.labels.insert("build".into(), "1".into());
    }
    let mut new = old.clone();
    new.version = 2;
    new.hosts[4].labels.insert("build".into(), "2".into());
    new.hosts[5]
        .labels
        .insert("deployed".into(), "today".into());
    new.hosts[1].labels.insert("build".into(), "2".into());
    new.hosts[1].labels.insert("zone".into(), "b".into());
    let mut lb = SubsetLb::build(&old).unwrap();
    let kept = lb.host_id("http://10.0.0.4:8080").unwrap();
    let mut md = lb.metadata();
    lb.set(&mut md, "zone", "b");
    let in_flight = (0..6)
        .filter(|&e| lb.select(&md, e).unwrap().host == kept)
        .count() as u32;
    assert!(in_flight > 0);
    let created = lb.stats().subsets_created;

    let applied = lb.apply(&HostDelta::between(&old, &new).unwrap()).unwrap();
    assert_eq!((applied.updated, applied.relabelled), (2, 1));
    assert_eq!(lb.host_id("http://10.0.0.4:8080"), Some(kept));
    assert_eq!(lb.in_flight(kept), Some(in_flight));
    assert_eq!(lb.stats().subsets_created, created);
    assert!(picked(&mut lb, "b").contains("http://10.0.0.1:8080"));
    // The kept record's labels are the old ones; later deltas compare routing labels only.
    let mut newer = new.clone();
    newer.version = 3;
    newer.hosts[4].labels.insert("zone".into(), "a".into());
    let applied = lb
        .apply(&HostDelta::between(&new, &newer).unwrap())
        .unwrap();
    assert_eq!((applied.updated, applied.relabelled), (0, 1));
    assert!(picked(&mut lb, "a").contains("http://10.0.0.4:8080"));
}

#[test]
fn a_refused_delta_changes_nothing() {
    let old = zones();
    let mut lb = SubsetLb::build(&old).unwrap();
    let before = snapshot(&mut lb);
    let added = Host::new("http://10.0.0.9:8080").with_label("zone", "a");
    let refusals = [
        // From another version.
        (
            HostDelta {
                from: 7,
                version: 8,
                upserts: vec![added.clone()],
                removed: vec![],
            },
            SubsetError::DeltaBase {
                version: 1,
                from: 7,
            },
        ),
        // An upsert, then the removal of a host the index does not have.
        (
            HostDelta {
                from: 1,
                version: 2,
                upserts: vec![added.clone()],
                removed: vec!["http://10.9.9.9".into()],
            },
            SubsetError::UnknownHost("http://10.9.9.9".into()),
        ),
        // A removal, then an upsert a table would refuse.
        (
            HostDelta {
                from: 1,
                version: 2,
                upserts: vec![Host {
                    weight: 0,
                    ..added.clone()
                }],
                removed: vec!["http://10.0.0.0:8080".into()],
            },
            SubsetError::Table(HostTableError::ZeroWeight { index: 0 }),
        ),
        // One address both upserted and removed.
        (
            HostDelta {
                from: 1,
                version: 2,
                upserts: vec![Host::new("http://10.0.0.0:8080")],
                removed: vec!["http://10.0.0.0:8080".into()],
            },
            SubsetError::Table(HostTableError::DeltaRepeatsAddress {
                address: "http://10.0.0.0:8080".into(),
            }),
        ),
    ];
    for (delta, error) in refusals {
        assert_eq!(lb.apply(&delta), Err(error));
        assert_eq!(snapshot(&mut lb), before);
    }
}

/// Refusals only a host's own record shows, checked for every upsert before the removals.
#[test]
fn a_delta_past_what_the_index_holds_is_refused_whole() {
    let mut old = zones();
    old.subset.list_as_any = true;
    old.subset
        .selectors
        .push(SubsetSelector::new(["zone", "v"]));
    let mut lb = SubsetLb::build(&old).unwrap();
    let before = snapshot(&mut lb);
    let list = |n: usize| (0..n).map(|i| std::format!("{i}")).collect::<Vec<_>>();
    let wide = Host::new("http://10.0.0.9:8080")
        .with_label("zone", list(32).join(","))
        .with_label("v", list(32).join(","));
    let mut delta = HostDelta {
        from: 1,
        version: 2,
        upserts: vec![Host::new("http://10.0.0.8:8080"), wide],
        removed: vec!["http://10.0.0.0:8080".into()],
    };
    let refused = HostTableError::TooManyListSubsets {
        index: 1,
        count: 32 + 32 * 32,
    };
    assert_eq!(lb.apply(&delta), Err(SubsetError::Table(refused)));
    assert_eq!(snapshot(&mut lb), before);
    // Addresses past what the records hold (the limit lowered to 10 bytes over the six
    // addresses): one removed makes room for one added, not two.
    delta.upserts[1] = Host::new("http://10.0.0.7:8080");
    lb.records.set_limit(6 * 20 + 10);
    assert_eq!(lb.apply(&delta), Err(SubsetError::TooLarge));
    assert_eq!(snapshot(&mut lb), before);
    delta.upserts.pop();
    assert_eq!(lb.apply(&delta).map(|a| a.added), Ok(1));
}

#[test]
fn an_empty_delta_moves_only_the_version() {
    let old = zones();
    let mut lb = SubsetLb::build(&old).unwrap();
    let (_, stats, picks) = snapshot(&mut lb);
    let new = HostTable {
        version: 5,
        ..old.clone()
    };
    let delta = HostDelta::between(&old, &new).unwrap();
    assert!(delta.is_empty());
    assert_eq!(lb.apply(&delta).unwrap(), super::Applied::default());
    assert_eq!(snapshot(&mut lb), (5, stats, picks));
}

#[test]
fn list_values_are_compared_as_sets_of_items() {
    let mut old = zones();
    old.subset.list_as_any = true;
    old.hosts[0].labels.insert("zone".into(), "a,b".into());
    old.hosts[1].labels.insert("zone".into(), "a".into());
    let mut new = HostTable {
        version: 2,
        ..old.clone()
    };
    // The same items in another order, or repeated: the same subsets; a new item: others.
    new.hosts[0].labels.insert("zone".into(), "b,a".into());
    new.hosts[0].weight = 3;
    new.hosts[1].labels.insert("zone".into(), "a,a".into());
    new.hosts[2].labels.insert("zone".into(), "a,c".into());
    let mut lb = SubsetLb::build(&old).unwrap();
    let kept = lb.host_id("http://10.0.0.0:8080").unwrap();
    let applied = lb.apply(&HostDelta::between(&old, &new).unwrap()).unwrap();
    assert_eq!((applied.updated, applied.relabelled), (2, 1));
    assert_eq!(lb.host_id("http://10.0.0.0:8080"), Some(kept));
    assert!(picked(&mut lb, "c").contains("http://10.0.0.2:8080"));
    assert!(picked(&mut lb, "b").contains("http://10.0.0.0:8080"));
}

/// A host table changed at random: each host kept, dropped, relabelled, or given another
/// weight or health, and new hosts added.
fn changed(
    old: &[Host],
    edits: &[(u8, BTreeMap<String, String>, bool, u32)],
    fresh: Vec<(BTreeMap<String, String>, bool, u32)>,
) -> Vec<Host> {
    let mut hosts = Vec::new();
    for (h, (what, labels, healthy, weight)) in old.iter().zip(edits.iter().cycle()) {
        let mut h = h.clone();
        match what % 6 {
            0 => continue,
            1 => h.labels = labels.clone(),
            2 => h.healthy = *healthy,
            3 => h.weight = *weight,
            _ => {}
        }
        hosts.push(h);
    }
    let base = 1000;
    hosts.extend(
        fresh
            .into_iter()
            .enumerate()
            .map(|(i, p)| host(base + i, p)),
    );
    hosts
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// An index built from one table and given the delta to another agrees with the reference
    /// on the other, and has the subsets a build of it has.
    #[test]
    fn applied_delta_agrees_with_reference(
        parts in prop::collection::vec(host_parts(), 0..40),
        config in config(),
        edits in prop::collection::vec((any::<u8>(), labels(), any::<bool>(), 1..9u32), 1..8),
        fresh in prop::collection::vec(host_parts(), 0..6),
        requests in prop::collection::vec(pairs(4), 1..12),
    ) {
        let hosts: Vec<Host> = parts.into_iter().enumerate().map(|(i, p)| host(i, p)).collect();
        let old = HostTable { version: 1, hosts, subset: config.clone() };
        let new = HostTable { version: 2, hosts: changed(&old.hosts, &edits, fresh), subset: config.clone() };
        let delta = HostDelta::between(&old, &new).unwrap();
        let delta = HostDelta::decode(&delta.encode().unwrap()).unwrap();
        let mut lb = SubsetLb::decode(&old.encode().unwrap()).unwrap();
        let applied = lb.apply(&delta).unwrap();
        let had = |h: &&Host| old.hosts.iter().any(|o| o.address == h.address);
        let relabelled = new.hosts.iter().filter(|h| {
            old.hosts.iter().any(|o| o.address == h.address && o.labels != h.labels)
        });
        prop_assert_eq!(applied.added, new.hosts.iter().filter(|h| !had(h)).count());
        prop_assert_eq!(applied.removed, old.hosts.len() + applied.added - new.hosts.len());
        // Other strings may name the same list items: then not moved.
        prop_assert!(applied.relabelled <= relabelled.count());
        prop_assert_eq!(lb.version(), 2);
        prop_assert_eq!(lb.len(), new.hosts.len());
        agree(&mut lb, &new.hosts, &config, &requests);
        let rebuilt = SubsetLb::build(&new).unwrap();
        prop_assert_eq!(rebuilt.stats().subsets_active, lb.stats().subsets_active);
        prop_assert_eq!(
            rebuilt.stats().single_host_collisions,
            lb.stats().single_host_collisions
        );
    }
}
