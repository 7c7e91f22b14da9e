#![allow(clippy::unwrap_used)]
extern crate std;

use std::collections::BTreeMap;
use std::vec::Vec;

use proptest::prelude::*;

use super::super::tests::{config, host, host_parts, pairs};
use super::*;
use crate::{Host, HostTable, SubsetSelector};

/// Every key requests may set, known to the tables or not ("x", "y").
const NAMES: [&str; 6] = ["a", "b", "c", "d", "x", "y"];

fn by_names(
    lb: &SubsetLb,
    request: &BTreeMap<std::string::String, std::string::String>,
) -> Metadata {
    let mut md = lb.metadata();
    request.iter().for_each(|(k, v)| lb.set(&mut md, k, v));
    md
}

fn by_keys(
    lb: &SubsetLb,
    keys: &RequestKeys,
    request: &BTreeMap<std::string::String, std::string::String>,
) -> Metadata {
    let at = |k: &str| NAMES.iter().position(|n| *n == k).unwrap();
    let mut md = lb.metadata();
    lb.set_values(
        &mut md,
        keys,
        request.iter().map(|(k, v)| (at(k), v.as_str())),
    );
    md
}

fn zone_table(selectors: &[&str]) -> HostTable {
    let mut table = HostTable::default();
    for (i, zone) in ["a", "b", "a"].into_iter().enumerate() {
        let host = Host::new(std::format!("http://10.0.0.{i}"))
            .with_label("zone", zone)
            .with_label("rack", std::format!("r{i}"));
        table.hosts.push(host);
    }
    for &key in selectors {
        table.subset.selectors.push(SubsetSelector::new([key]));
    }
    table
}

proptest! {
    /// Pairs set by resolved keys are the pairs set by name, for any table, configuration
    /// and request, before and after updates bring hosts of other labels.
    #[test]
    fn resolved_keys_set_what_names_set(
        parts in prop::collection::vec(host_parts(), 0..20),
        added in prop::collection::vec(host_parts(), 0..4),
        config in config(),
        requests in prop::collection::vec(pairs(4), 1..12),
    ) {
        let hosts = parts.into_iter().enumerate().map(|(i, p)| host(i, p)).collect();
        let table = HostTable { version: 1, hosts, subset: config };
        let Ok(mut lb) = SubsetLb::build(&table) else { return Ok(()) };
        let mut keys = lb.request_keys(NAMES);
        for (i, parts) in added.into_iter().enumerate() {
            for request in &requests {
                prop_assert_eq!(by_keys(&lb, &keys, request), by_names(&lb, request));
            }
            let _ = lb.add_host(host(table.hosts.len() + i, parts));
            if i % 2 == 1 {
                lb.resolve(&mut keys);
            }
        }
        for request in &requests {
            prop_assert_eq!(by_keys(&lb, &keys, request), by_names(&lb, request));
        }
    }

    /// A request's pairs set in one call are those set one at a time, in any order and with
    /// keys repeated (the last value wins) or beyond the capacity (foreign).
    #[test]
    fn pairs_set_at_once_are_those_set_one_by_one(
        parts in prop::collection::vec(host_parts(), 0..20),
        config in config(),
        request in prop::collection::vec(
            (prop::sample::select(&NAMES[..]), prop::sample::select(&["1", "2", "3", "9"][..])),
            0..12,
        ),
    ) {
        let hosts = parts.into_iter().enumerate().map(|(i, p)| host(i, p)).collect();
        let table = HostTable { version: 1, hosts, subset: config };
        let Ok(lb) = SubsetLb::build(&table) else { return Ok(()) };
        let mut one_by_one = lb.metadata();
        request.iter().for_each(|&(k, v)| lb.set(&mut one_by_one, k, v));
        let mut at_once = lb.metadata();
        lb.set_all(&mut at_once, request.iter().copied());
        prop_assert_eq!(at_once, one_by_one);
    }
}

/// Keys resolved against one load balancer, used with another that numbers its keys
/// otherwise, are set by name there: they still route by the right key.
#[test]
fn keys_of_another_load_balancer_are_set_by_name() {
    let zone_first = SubsetLb::build(&zone_table(&["zone", "rack"])).unwrap();
    let mut rack_first = SubsetLb::build(&zone_table(&["rack", "zone"])).unwrap();
    let keys = zone_first.request_keys(["zone", "rack"]);
    assert_ne!(zone_first.key_id("zone"), rack_first.key_id("zone"));
    let mut md = rack_first.metadata();
    rack_first.set_key(&mut md, &keys, 0, "b");
    let mut named = rack_first.metadata();
    rack_first.set(&mut named, "zone", "b");
    assert_eq!(md, named);
    let chosen = rack_first.select(&md, 7).unwrap();
    assert_eq!(rack_first.address(chosen.host), Some("http://10.0.0.1"));
}

/// Resolved against the load balancer they are used with, keys take the fast path with that
/// one's ids, whichever load balancer they were resolved against before.
#[test]
fn resolved_keys_take_the_ids_of_their_load_balancer() {
    let zone_first = SubsetLb::build(&zone_table(&["zone", "rack"])).unwrap();
    let rack_first = SubsetLb::build(&zone_table(&["rack", "zone"])).unwrap();
    let mut keys = zone_first.request_keys(["zone", "rack"]);
    for lb in [&zone_first, &rack_first] {
        lb.resolve(&mut keys);
        for (i, name) in ["zone", "rack"].into_iter().enumerate() {
            assert_eq!(keys.id(i, lb.serial), Some(lb.key_id(name)));
            let mut md = lb.metadata();
            lb.set_key(&mut md, &keys, i, "a");
            let mut named = lb.metadata();
            lb.set(&mut named, name, "a");
            assert_eq!(md, named);
        }
    }
}

/// A key no host had when resolved is found once a host brings it, before and after the
/// keys are resolved again.
#[test]
fn a_key_an_update_brings_is_found() {
    let mut lb = SubsetLb::build(&zone_table(&["zone"])).unwrap();
    let mut keys = lb.request_keys(["zone", "tier"]);
    assert_eq!(keys.ids[1], UNKNOWN_KEY);
    let mut md = lb.metadata();
    lb.set_key(&mut md, &keys, 1, "gold");
    assert!(md.has_foreign_key());
    let gold = Host::new("http://10.0.0.9")
        .with_label("zone", "c")
        .with_label("tier", "gold");
    lb.add_host(gold).unwrap();
    for resolved in [false, true] {
        if resolved {
            lb.resolve(&mut keys);
            assert_ne!(keys.ids[1], UNKNOWN_KEY);
        }
        let mut md = lb.metadata();
        lb.set_key(&mut md, &keys, 1, "gold");
        let mut named = lb.metadata();
        lb.set(&mut named, "tier", "gold");
        assert_eq!(md, named);
        assert!(!md.has_foreign_key());
    }
}

/// A position past the keys is a key nothing knows: the metadata matches no subset.
#[test]
fn a_position_past_the_keys_matches_nothing() {
    let lb = SubsetLb::build(&zone_table(&["zone"])).unwrap();
    let keys = lb.request_keys(["zone"]);
    let mut md = lb.metadata();
    lb.set_key(&mut md, &keys, 1, "a");
    assert!(md.has_foreign_key());
    assert_eq!(keys.names().collect::<Vec<_>>(), ["zone"]);
}
