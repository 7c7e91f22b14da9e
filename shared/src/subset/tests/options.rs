//! One test per fallback policy and per option, on small hand-made tables.

extern crate std;

use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::vec::Vec;
use std::{format, vec};

use super::super::*;
use crate::{
    Host, HostTable, HostTableError, LbPolicy, MAX_LIST_SUBSETS, SubsetConfig, SubsetSelector,
};

/// Hosts `http://h{i}` with the given labels ("k=v,k=v").
fn table(hosts: &[&str], config: SubsetConfig) -> HostTable {
    let hosts = hosts
        .iter()
        .enumerate()
        .map(|(i, labels)| {
            let mut host = Host::new(format!("http://h{i}"));
            for pair in labels.split(',').filter(|p| !p.is_empty()) {
                let (k, v) = pair.split_once('=').unwrap();
                host.labels.insert(k.into(), v.into());
            }
            host
        })
        .collect();
    HostTable {
        version: 1,
        hosts,
        subset: config,
    }
}

fn selectors(list: &[&[&str]]) -> Vec<SubsetSelector> {
    list.iter()
        .map(|keys| SubsetSelector::new(keys.iter().copied()))
        .collect()
}

fn md(lb: &SubsetLb, pairs: &[(&str, &str)]) -> Metadata {
    let mut md = lb.metadata();
    for (k, v) in pairs {
        lb.set(&mut md, k, v);
    }
    md
}

/// The addresses picked over `n` selections, and the fallback of the last.
fn picks(
    lb: &mut SubsetLb,
    pairs: &[(&str, &str)],
    n: u64,
) -> (BTreeSet<String>, Option<Fallback>) {
    let md = md(lb, pairs);
    let mut seen = BTreeSet::new();
    let mut fallback = None;
    for i in 0..n {
        if let Some(s) = lb.select(&md, i.wrapping_mul(0x9e37_79b9)) {
            seen.insert(lb.address(s.host).unwrap().into());
            fallback = Some(s.fallback);
            lb.release(s.host);
        }
    }
    (seen, fallback)
}

fn set(addresses: &[&str]) -> BTreeSet<String> {
    addresses.iter().map(|a| format!("http://{a}")).collect()
}

const HOSTS: [&str; 4] = ["zone=a,v=1", "zone=a,v=2", "zone=b,v=1", "v=3"];

fn config(fallback_policy: FallbackPolicy) -> SubsetConfig {
    SubsetConfig {
        fallback_policy,
        selectors: selectors(&[&["zone"], &["zone", "v"]]),
        ..SubsetConfig::default()
    }
}

#[test]
fn subset_hit_picks_only_its_hosts() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    assert_eq!(
        picks(&mut lb, &[("zone", "a")], 20),
        (set(&["h0", "h1"]), Some(Fallback::None))
    );
    assert_eq!(
        picks(&mut lb, &[("zone", "a"), ("v", "2")], 20),
        (set(&["h1"]), Some(Fallback::None))
    );
    assert_eq!(lb.stats().subsets_active, 2 + 3);
}

#[test]
fn stats_count_each_selection_and_how_it_was_served() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::AnyEndpoint))).unwrap();
    picks(&mut lb, &[("zone", "a")], 7);
    picks(&mut lb, &[("zone", "c")], 5);
    let md = md(&lb, &[("zone", "b")]);
    let first = lb.select(&md, 1).unwrap();
    assert_eq!(lb.select_retry(&md, 2, first.host), None);
    let s = lb.stats();
    let counts = (
        s.selections,
        s.subset_hits,
        s.fallbacks,
        s.panics,
        s.no_host,
    );
    assert_eq!(counts, (14, 9, 5, 0, 1));
}

#[test]
fn no_fallback_finds_nothing() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5), (BTreeSet::new(), None));
    assert_eq!(picks(&mut lb, &[], 5), (BTreeSet::new(), None));
    assert_eq!(lb.stats().no_host, 10);
}

#[test]
fn any_endpoint_falls_back_to_every_host() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::AnyEndpoint))).unwrap();
    let all = set(&["h0", "h1", "h2", "h3"]);
    assert_eq!(
        picks(&mut lb, &[("zone", "c")], 40),
        (all.clone(), Some(Fallback::AnyEndpoint))
    );
    // Keys no selector has, and no metadata at all, fall back the same way.
    assert_eq!(
        picks(&mut lb, &[("v", "1")], 40),
        (all.clone(), Some(Fallback::AnyEndpoint))
    );
    assert_eq!(
        picks(&mut lb, &[("nope", "1")], 40).1,
        Some(Fallback::AnyEndpoint)
    );
    assert_eq!(lb.stats().fallbacks, 120);
}

#[test]
fn default_subset_falls_back_to_its_hosts() {
    let mut config = config(FallbackPolicy::DefaultSubset);
    config.default_subset = BTreeMap::from([("v".into(), "1".into())]);
    let mut lb = SubsetLb::build(&table(&HOSTS, config.clone())).unwrap();
    assert_eq!(
        picks(&mut lb, &[("zone", "c")], 20),
        (set(&["h0", "h2"]), Some(Fallback::DefaultSubset))
    );
    // An empty default subset finds nothing ...
    config.default_subset = BTreeMap::from([("v".into(), "9".into())]);
    let mut lb = SubsetLb::build(&table(&HOSTS, config.clone())).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).1, None);
    // ... unless panic_mode_any is on.
    config.panic_mode_any = true;
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    assert_eq!(
        picks(&mut lb, &[("zone", "c")], 40),
        (set(&["h0", "h1", "h2", "h3"]), Some(Fallback::PanicAny))
    );
    assert_eq!(lb.stats().panics, 40);
}

#[test]
fn default_subset_follows_updates() {
    let mut config = config(FallbackPolicy::DefaultSubset);
    config.default_subset = BTreeMap::from([("v".into(), "1".into())]);
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    lb.remove_host("http://h0").unwrap();
    lb.add_host(Host::new("http://new").with_label("v", "1"))
        .unwrap();
    let expected: BTreeSet<String> = ["http://h2", "http://new"].map(String::from).into();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 20).0, expected);
}

#[test]
fn panic_mode_any_needs_a_fallback_policy() {
    // As in Envoy: with NO_FALLBACK there is no fallback result to panic about.
    let mut config = config(FallbackPolicy::NoFallback);
    config.panic_mode_any = true;
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).1, None);
}

fn selector_fallback(fallback: SelectorFallback, keys_subset: &[&str]) -> SubsetLb {
    let mut config = config(FallbackPolicy::NoFallback);
    config.default_subset = BTreeMap::from([("zone".into(), "b".into())]);
    config.selectors[1].fallback_policy = fallback;
    config.selectors[1].fallback_keys_subset =
        keys_subset.iter().map(|k| String::from(*k)).collect();
    SubsetLb::build(&table(&HOSTS, config)).unwrap()
}

#[test]
fn selector_fallbacks() {
    let missing = [("zone", "a"), ("v", "3")];
    let mut lb = selector_fallback(SelectorFallback::AnyEndpoint, &[]);
    assert_eq!(
        picks(&mut lb, &missing, 40),
        (set(&["h0", "h1", "h2", "h3"]), Some(Fallback::AnyEndpoint))
    );
    // The selector's fallback is not the top-level one: no fallback counted.
    assert_eq!(lb.stats().fallbacks, 0);
    let mut lb = selector_fallback(SelectorFallback::DefaultSubset, &[]);
    assert_eq!(
        picks(&mut lb, &missing, 20),
        (set(&["h2"]), Some(Fallback::DefaultSubset))
    );
    let mut lb = selector_fallback(SelectorFallback::KeysSubset, &["zone"]);
    assert_eq!(
        picks(&mut lb, &missing, 20),
        (set(&["h0", "h1"]), Some(Fallback::KeysSubset))
    );
    let mut lb = selector_fallback(SelectorFallback::NoFallback, &[]);
    assert_eq!(picks(&mut lb, &missing, 5).1, None);
    // Only requests with exactly the selector's keys use its fallback.
    let mut lb = selector_fallback(SelectorFallback::AnyEndpoint, &[]);
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).1, None);
}

/// Beyond Envoy (envoy#25654): a subset whose hosts are all unhealthy counts as no match for
/// a selector with `fallback_on_unhealthy`, so its fallback (here the default subset) serves;
/// without it, the subset's own unhealthy host is picked in panic, as Envoy does.
#[test]
fn fallback_on_unhealthy_skips_a_subset_without_healthy_hosts() {
    let request = [("zone", "a"), ("v", "2")];
    for on in [false, true] {
        let mut config = config(FallbackPolicy::NoFallback);
        config.default_subset = BTreeMap::from([("zone".into(), "b".into())]);
        config.selectors[1].fallback_policy = SelectorFallback::DefaultSubset;
        config.selectors[1].fallback_on_unhealthy = on;
        let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
        assert_eq!(
            picks(&mut lb, &request, 10),
            (set(&["h1"]), Some(Fallback::None))
        );
        lb.set_healthy("http://h1", false).unwrap();
        let expected = match on {
            true => (set(&["h2"]), Some(Fallback::DefaultSubset)),
            false => (set(&["h1"]), Some(Fallback::None)),
        };
        assert_eq!(
            picks(&mut lb, &request, 10),
            expected,
            "fallback_on_unhealthy {on}"
        );
        // Healthy again: the subset serves again.
        lb.set_healthy("http://h1", true).unwrap();
        assert_eq!(picks(&mut lb, &request, 10).0, set(&["h1"]));
        // Other selectors keep Envoy's behaviour: zone=a has a healthy host left anyway,
        // and {zone=b} has no fallback_on_unhealthy.
        lb.set_healthy("http://h2", false).unwrap();
        assert_eq!(picks(&mut lb, &[("zone", "b")], 10).0, set(&["h2"]));
    }
}

#[test]
fn keys_subset_falls_through_to_the_next_lookup() {
    // zone=c has no subset either: the cut request takes the top-level fallback.
    let mut config = config(FallbackPolicy::AnyEndpoint);
    config.selectors[1].fallback_policy = SelectorFallback::KeysSubset;
    config.selectors[1].fallback_keys_subset = vec!["zone".into()];
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    assert_eq!(
        picks(&mut lb, &[("zone", "c"), ("v", "1")], 5).1,
        Some(Fallback::AnyEndpoint)
    );
}

/// A retry excluding a host removed since leaves out only that host, not the one that took its
/// slot: the slot alone excluded the new host, and a subset of one found none.
#[test]
fn a_retry_excluding_a_removed_host_spares_the_host_in_its_slot() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"]]);
    let mut lb = SubsetLb::build(&table(&["zone=z"], config)).unwrap();
    let request = md(&lb, &[("zone", "z")]);
    let old = lb.select(&request, 1).unwrap().host;
    lb.release(old);
    lb.remove_host("http://h0").unwrap();
    let new = lb
        .add_host(Host::new("http://b").with_label("zone", "z"))
        .unwrap();
    assert_eq!(new.slot, old.slot, "the test needs the slot reused");
    assert_eq!(lb.address(old), None);
    let retried = lb.select_retry(&request, 2, old).map(|s| s.host);
    assert_eq!(retried, Some(new));
    assert_eq!(lb.select_retry(&request, 3, new), None);
}

/// The host of a single-host subset is its lowest address, not its lowest slot: a host added
/// later may take a freed lower slot, and every isolate (built from the table, or updated by
/// deltas) must send the subset's requests to the same host.
#[test]
fn single_host_per_subset_takes_the_lowest_address() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"]]);
    config.selectors[0].single_host_per_subset = true;
    let mut lb = SubsetLb::build(&table(&HOSTS, config.clone())).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h0"]));
    assert_eq!(lb.stats().single_host_collisions, 1);
    let h0 = lb.host_id("http://h0").unwrap();
    assert_eq!(lb.select_retry(&md(&lb, &[("zone", "a")]), 1, h0), None);
    lb.remove_host("http://h0").unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h1"]));
    lb.add_host(Host::new("http://z").with_label("zone", "a"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h1"]));
    lb.add_host(Host::new("http://a").with_label("zone", "a"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["a"]));
    lb.remove_host("http://a").unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h1"]));
    // A build takes the same host whatever the table's order (reversed, h1 has the lower
    // slot).
    let mut reversed = table(&HOSTS, config);
    reversed.hosts.reverse();
    let mut built = SubsetLb::build(&reversed).unwrap();
    assert_eq!(picks(&mut built, &[("zone", "a")], 20).0, set(&["h0"]));
}

#[test]
fn a_subset_of_one_host_grows_into_a_set_per_kind() {
    // {zone=a} and {zone=a, v=1} hold only h0, by its slot; h1 joins both, the first
    // single-host: each gets its own set of the two.
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors[0].single_host_per_subset = true;
    let mut lb = SubsetLb::build(&table(&["zone=a,v=1"], config)).unwrap();
    lb.add_host(
        Host::new("http://h1")
            .with_label("zone", "a")
            .with_label("v", "1"),
    )
    .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h0"]));
    assert_eq!(
        picks(&mut lb, &[("zone", "a"), ("v", "1")], 20).0,
        set(&["h0", "h1"])
    );
    assert_eq!(lb.stats().single_host_collisions, 1);
    lb.remove_host("http://h0").unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h1"]));
    assert_eq!(
        picks(&mut lb, &[("zone", "a"), ("v", "1")], 20).0,
        set(&["h1"])
    );
    lb.remove_host("http://h1").unwrap();
    assert_eq!(lb.stats().subsets_active, 0);
    assert_eq!(lb.stats().subsets_removed, 2);
}

#[test]
fn single_host_collisions_count_per_subset_as_a_build_does() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"], &["v"], &["zone", "v"]]);
    config.selectors[0].single_host_per_subset = true;
    config.selectors[1].single_host_per_subset = true;
    let hosts = ["zone=a,v=1", "zone=a,v=1", "zone=a,v=2", "zone=b,v=1"];
    let mut lb = SubsetLb::build(&table(&hosts[..1], config.clone())).unwrap();
    for (i, labels) in hosts.iter().enumerate().skip(1) {
        let mut host = Host::new(format!("http://h{i}"));
        for (k, v) in labels.split(',').filter_map(|p| p.split_once('=')) {
            host = host.with_label(k, v);
        }
        lb.add_host(host).unwrap();
    }
    let built = SubsetLb::build(&table(&hosts, config)).unwrap();
    // zone=a: 3 hosts, v=1: 3 hosts: two left out of each.
    assert_eq!(built.stats().single_host_collisions, 4);
    assert_eq!(lb.stats().single_host_collisions, 4);
}

/// A one-key subset whose value id lies far past the others (many values of a key no selector
/// has alone came first) is kept in the hash table, not by growing the array to its id.
#[test]
fn one_key_subsets_with_far_ids_stay_out_of_the_array() {
    let labels: Vec<String> = (0..3000)
        .map(|i| format!("zone={},pod=p{i}", if i < 2999 { "a" } else { "b" }))
        .collect();
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"]]);
    let mut lb = SubsetLb::build(&table(&refs, config)).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "b")], 5).0, set(&["h2999"]));
    assert_eq!(picks(&mut lb, &[("zone", "a")], 3).0.len(), 3);
    lb.add_host(Host::new("http://x").with_label("zone", "b"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "b")], 20).0, set(&["h2999", "x"]));
    lb.add_host(Host::new("http://y").with_label("zone", "c"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).0, set(&["y"]));
    lb.remove_host("http://y").unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).0, BTreeSet::new());
}

/// A key unique per host makes a subset per host, kept small: the subset is its value id in
/// the table's array (no record), and a value up to 15 bytes is its fingerprint (no text).
/// Before, such an index held ~75 bytes a host; ~31 is the 3 MiB at 100k hosts asked for (the
/// hash table's load, and so the figure, varies a few bytes with the host count).
#[test]
fn a_key_unique_per_host_keeps_an_index_of_few_bytes_a_host() {
    let hosts = 20_000;
    let labels: Vec<String> = (0..hosts).map(|i| format!("id=host-{i}")).collect();
    let refs: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["id"]]);
    let mut lb = SubsetLb::build(&table(&refs, config)).unwrap();
    let per_host = lb.index_heap_bytes() / hosts;
    assert!(per_host <= 34, "{per_host} bytes a host");
    // Subsets in the array come and go with their hosts.
    lb.remove_host("http://h7").unwrap();
    assert_eq!(picks(&mut lb, &[("id", "host-7")], 3).0, BTreeSet::new());
    assert_eq!(lb.stats().subsets_active, hosts as u64 - 1);
    lb.add_host(Host::new("http://x").with_label("id", "host-7"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("id", "host-7")], 3).0, set(&["x"]));
    assert_eq!(picks(&mut lb, &[("id", "host-8")], 3).0, set(&["h8"]));
}

#[test]
fn a_subset_of_one_unhealthy_host_picks_as_a_set_would() {
    for (threshold, expected) in [(50, Some(true)), (0, None)] {
        let mut config = config(FallbackPolicy::NoFallback);
        config.panic_threshold = threshold;
        let mut t = table(&["zone=a", "zone=b"], config);
        t.hosts[0].healthy = false;
        let mut lb = SubsetLb::build(&t).unwrap();
        let chosen = lb.select(&md(&lb, &[("zone", "a")]), 7);
        assert_eq!(chosen.map(|c| c.panic), expected, "threshold {threshold}");
        lb.set_healthy("http://h0", true).unwrap();
        let chosen = lb.select(&md(&lb, &[("zone", "a")]), 7).unwrap();
        assert!(!chosen.panic);
        assert_eq!(
            lb.select_retry(&md(&lb, &[("zone", "a")]), 8, chosen.host),
            None
        );
    }
}

#[test]
fn list_as_any_puts_a_host_in_each_listed_subset() {
    let mut t = table(&["", ""], config(FallbackPolicy::NoFallback));
    t.hosts[0].labels.insert("zone".into(), "a,b".into());
    t.hosts[1].labels.insert("zone".into(), "b".into());
    let mut lb = SubsetLb::build(&t).unwrap();
    // Off: "a,b" is one value.
    assert_eq!(picks(&mut lb, &[("zone", "a")], 5).0, BTreeSet::new());
    assert_eq!(picks(&mut lb, &[("zone", "a,b")], 5).0, set(&["h0"]));
    t.subset.list_as_any = true;
    let mut lb = SubsetLb::build(&t).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 5).0, set(&["h0"]));
    assert_eq!(picks(&mut lb, &[("zone", "b")], 20).0, set(&["h0", "h1"]));
    assert_eq!(picks(&mut lb, &[("zone", "a,b")], 5).0, BTreeSet::new());
    // A value listed twice, apart: the host is in its subset once, and leaves it whole.
    t.hosts[0].labels.insert("zone".into(), "a,b,a".into());
    t.hosts[1].labels.insert("zone".into(), "a".into());
    let mut lb = SubsetLb::build(&t).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h0", "h1"]));
    lb.remove_host("http://h1").unwrap();
    lb.remove_host("http://h0").unwrap();
    assert_eq!(lb.stats().subsets_active, 0);
    assert_eq!(picks(&mut lb, &[("zone", "a")], 5).0, BTreeSet::new());
    // Items are trimmed and empty ones dropped, in a build and in a host added later.
    t.hosts[0].labels.insert("zone".into(), " a , b,,".into());
    t.hosts[1].labels.insert("zone".into(), ", ".into());
    let mut lb = SubsetLb::build(&t).unwrap();
    lb.add_host(Host::new("http://n").with_label("zone", "c ,b"))
        .unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 5).0, set(&["h0"]));
    assert_eq!(picks(&mut lb, &[("zone", "b")], 20).0, set(&["h0", "n"]));
    assert_eq!(picks(&mut lb, &[("zone", "c")], 5).0, set(&["n"]));
    for absent in [" a ", "", " "] {
        assert_eq!(picks(&mut lb, &[("zone", absent)], 5).0, BTreeSet::new());
    }
    assert_eq!(lb.stats().subsets_active, 3);
}

/// `n` distinct items and a few repeated (which count once), as a `list_as_any` value.
fn items(prefix: &str, n: usize) -> String {
    let items: Vec<String> = (0..n).map(|i| format!("{prefix}{i}")).collect();
    format!("{}, {}", items.join(","), items[..n.min(3)].join(" , "))
}

#[test]
fn list_as_any_refuses_a_host_whose_lists_make_too_many_subsets() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.list_as_any = true;
    // Selectors zone and zone x v: 32 + 32 x 31 subsets, at the limit.
    let mut t = table(&["zone=a", ""], config);
    t.hosts[1].labels.insert("zone".into(), items("z", 32));
    t.hosts[1].labels.insert("v".into(), items("v", 31));
    assert_eq!(MAX_LIST_SUBSETS, 1024);
    let mut lb = SubsetLb::build(&t).unwrap();
    assert_eq!(lb.stats().subsets_active, 1 + 32 + 32 * 31);
    assert_eq!(SubsetLb::decode(&t.encode().unwrap()).unwrap().len(), 2);
    // A 32nd version makes 1,056, for the build, the decoders and validation alike.
    t.hosts[1].labels.insert("v".into(), items("v", 32));
    let refused = |index| HostTableError::TooManyListSubsets { index, count: 1056 };
    assert_eq!(t.validate(), Err(refused(1)));
    let bytes = t.encode_unchecked();
    assert_eq!(HostTable::decode(&bytes), Err(refused(1)));
    let table_refused = Err(SubsetError::Table(refused(1)));
    assert_eq!(SubsetLb::decode(&bytes).map(|lb| lb.len()), table_refused);
    assert_eq!(SubsetLb::build(&t).map(|lb| lb.len()), table_refused);
    assert_eq!(
        SubsetLb::build_validated(&t).map(|lb| lb.len()),
        table_refused
    );
    // An added host is refused likewise, the index unchanged.
    let host = Host::new("http://n")
        .with_label("zone", items("z", 32))
        .with_label("v", items("v", 32));
    assert_eq!(lb.add_host(host), Err(SubsetError::Table(refused(2))));
    assert_eq!((lb.len(), lb.stats().subsets_active), (2, 1 + 32 + 32 * 31));
    // Without `list_as_any` each value is one.
    t.subset.list_as_any = false;
    assert_eq!(SubsetLb::build(&t).unwrap().stats().subsets_active, 3);
}

#[test]
fn allow_redundant_keys_ignores_extra_request_keys() {
    let mut config = config(FallbackPolicy::NoFallback);
    let request = [("zone", "a"), ("v", "2"), ("extra", "x")];
    let mut lb = SubsetLb::build(&table(&HOSTS, config.clone())).unwrap();
    assert_eq!(picks(&mut lb, &request, 5).1, None);
    config.allow_redundant_keys = true;
    let mut lb = SubsetLb::build(&table(&HOSTS, config.clone())).unwrap();
    // The first selector whose keys the request has is ["zone"].
    assert_eq!(
        picks(&mut lb, &request, 20),
        (set(&["h0", "h1"]), Some(Fallback::None))
    );
    config.selectors.reverse();
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    assert_eq!(
        picks(&mut lb, &request, 20),
        (set(&["h1"]), Some(Fallback::None))
    );
}

/// A pair beyond the metadata's capacity may be a selector's key: cut to the keys it has,
/// the request would go to a wider subset (here the zone's `v=1` host for `v=2`). It matches
/// no subset instead, and the top-level fallback decides.
#[test]
fn a_pair_dropped_for_room_matches_no_subset_even_with_redundant_keys() {
    let extra: Vec<String> = (0..METADATA_CAPACITY).map(|i| format!("x{i}=1")).collect();
    let hosts = ["zone=a,v=1", "zone=a,v=2"].map(|h| format!("{h},{}", extra.join(",")));
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["v", "zone"], &["zone"]]);
    config.allow_redundant_keys = true;
    let hosts: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let mut lb = SubsetLb::build(&table(&hosts, config)).unwrap();
    let mut request = vec![("zone", "a")];
    request.extend(
        (0..METADATA_CAPACITY - 1).map(|i| (["x0", "x1", "x2", "x3", "x4", "x5", "x6"][i], "1")),
    );
    assert_eq!(
        picks(&mut lb, &request, 8),
        (set(&["h0", "h1"]), Some(Fallback::None))
    );
    request.push(("v", "2"));
    let md = md(&lb, &request);
    assert!(md.has_foreign_key() && md.len() == METADATA_CAPACITY);
    assert_eq!(picks(&mut lb, &request, 8), (BTreeSet::new(), None));
    request.truncate(2);
    request.push(("v", "2"));
    assert_eq!(
        picks(&mut lb, &request, 8),
        (set(&["h1"]), Some(Fallback::None))
    );
}

#[test]
fn metadata_fallbacks_are_tried_in_order() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.metadata_fallbacks = vec![
        BTreeMap::from([("v".into(), "9".into())]),
        BTreeMap::from([("v".into(), "2".into())]),
    ];
    let mut lb = SubsetLb::build(&table(&HOSTS, config)).unwrap();
    let request = md(&lb, &[("zone", "a"), ("v", "7")]);
    let chosen = lb.select(&request, 1).unwrap();
    assert_eq!(lb.address(chosen.host), Some("http://h1"));
    assert_eq!(
        (chosen.fallback, chosen.metadata_fallback),
        (Fallback::None, Some(1))
    );
    // The request's own metadata comes first.
    let request = md(&lb, &[("zone", "a"), ("v", "1")]);
    assert_eq!(lb.select(&request, 1).unwrap().metadata_fallback, None);
}

#[test]
fn health_panic_threshold() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"]]);
    let mut t = table(&["zone=a", "zone=a", "zone=a"], config);
    let mut lb = SubsetLb::build(&t).unwrap();
    lb.set_healthy("http://h0", false).unwrap();
    // 2 of 3 healthy: above 50%, unhealthy hosts are skipped.
    assert_eq!(picks(&mut lb, &[("zone", "a")], 30).0, set(&["h1", "h2"]));
    lb.set_healthy("http://h1", false).unwrap();
    // 1 of 3: panic, every host.
    assert_eq!(
        picks(&mut lb, &[("zone", "a")], 60).0,
        set(&["h0", "h1", "h2"])
    );
    let chosen = lb.select(&md(&lb, &[("zone", "a")]), 3).unwrap();
    assert!(chosen.panic);
    assert!(lb.stats().health_panics > 0);
    // Threshold 0 never panics: only the healthy host, and none once it is down too.
    t.subset.panic_threshold = 0;
    let mut lb = SubsetLb::build(&t).unwrap();
    lb.set_healthy("http://h0", false).unwrap();
    lb.set_healthy("http://h1", false).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 20).0, set(&["h2"]));
    lb.set_healthy("http://h2", false).unwrap();
    assert_eq!(picks(&mut lb, &[("zone", "a")], 5).0, BTreeSet::new());
}

fn counts(policy: LbPolicy, weights: &[u32], n: u64) -> Vec<u32> {
    tally(&mut weighed(policy, weights), n, 0)
}

/// Hosts `h0`.. of `weights`, every request falling back to all of them.
fn weighed(policy: LbPolicy, weights: &[u32]) -> SubsetLb {
    let mut config = SubsetConfig {
        child_policy: policy,
        fallback_policy: FallbackPolicy::AnyEndpoint,
        ..SubsetConfig::default()
    };
    config.selectors = vec![];
    let mut t = table(&vec![""; weights.len()], config);
    for (h, &w) in t.hosts.iter_mut().zip(weights) {
        h.weight = w;
    }
    SubsetLb::build(&t).unwrap()
}

/// Picks per slot of `n` requests with entropy from `seed` on (released, but for
/// least-request, whose counts then grow).
fn tally(lb: &mut SubsetLb, n: u64, seed: u64) -> Vec<u32> {
    let release = lb.options.policy != LbPolicy::LeastRequest;
    tally_releasing(lb, n, seed, release)
}

/// [`tally`], each request released or not as `release` says.
fn tally_releasing(lb: &mut SubsetLb, n: u64, seed: u64, release: bool) -> Vec<u32> {
    let md = lb.metadata();
    let mut counts = vec![0; lb.len()];
    for i in seed..seed + n {
        let s = lb
            .select(&md, i.wrapping_mul(0x2545_f491_4f6c_dd1d))
            .unwrap();
        counts[s.host.slot as usize] += 1;
        if release {
            lb.release(s.host);
        }
    }
    counts
}

#[test]
fn round_robin_takes_turns() {
    assert_eq!(
        counts(LbPolicy::RoundRobin, &[2, 2, 2], 300),
        [100, 100, 100]
    );
}

/// Round robin inside subsets whose members are ranges of the chains (where the lookup's fast
/// path hints the next member's slot to the cache): turns in one order through each wrap, the
/// last subset of the chains included (its last member has no next one in the chains).
#[test]
fn round_robin_takes_turns_in_chained_subsets() {
    let config = SubsetConfig {
        selectors: selectors(&[&["k"], &["k", "j"]]),
        ..SubsetConfig::default()
    };
    let hosts = [
        "k=a,j=x", "k=b,j=x", "k=a,j=y", "k=b,j=x", "k=b,j=y", "k=a,j=x",
    ];
    let mut lb = SubsetLb::build(&table(&hosts, config)).unwrap();
    for pairs in [&[("k", "b")][..], &[("k", "a")], &[("k", "b"), ("j", "x")]] {
        let md = md(&lb, pairs);
        let picks: Vec<u32> = (0..12u64)
            .map(|i| {
                let s = lb.select(&md, i).unwrap();
                assert_eq!(s.fallback, Fallback::None);
                lb.release(s.host);
                s.host.slot
            })
            .collect();
        let members: BTreeSet<u32> = picks.iter().copied().collect();
        let n = members.len();
        let wanted = hosts
            .iter()
            .filter(|h| pairs.iter().all(|(k, v)| h.contains(&format!("{k}={v}"))));
        assert_eq!(n, wanted.count(), "{pairs:?}: {picks:?}");
        // Every member once a cycle (`n` distinct picks, counted above), and the same order
        // each cycle: the members' order in the chains, which groups them by the subsets
        // that share their prefix, not by slot.
        assert!(
            picks.windows(n + 1).all(|w| w[0] == w[n]),
            "{pairs:?}: {picks:?}"
        );
    }
}

/// Round robin over hosts of different weights gives each as many turns per cycle as its
/// weight, as Envoy's does, and spreads a heavy host's turns over the cycle.
#[test]
fn round_robin_takes_turns_by_weight() {
    let mut lb = weighed(LbPolicy::RoundRobin, &[1, 5, 1, 1]);
    let md = lb.metadata();
    let order: Vec<u32> = (0..800)
        .map(|i| {
            let s = lb.select(&md, i).unwrap();
            lb.release(s.host);
            s.host.slot
        })
        .collect();
    // Every window of a cycle (8 turns), not only the first, holds each host by its weight.
    for window in order.windows(8) {
        let mut c = [0; 4];
        window.iter().for_each(|&s| c[s as usize] += 1);
        assert_eq!(c, [1, 5, 1, 1], "{order:?}");
    }
    let longest = order.chunk_by(|a, b| a == b).map(<[u32]>::len).max();
    assert!(longest < Some(5), "{order:?}");
}

/// Weighted round robin follows health and weight changes, picks in panic by weight, and
/// takes plain turns again once the weights are even.
#[test]
fn weighted_round_robin_follows_changes() {
    let mut lb = weighed(LbPolicy::RoundRobin, &[1, 3, 2, 2]);
    assert_eq!(tally(&mut lb, 80, 0), [10, 30, 20, 20]);
    lb.set_healthy("http://h1", false).unwrap();
    assert_eq!(tally(&mut lb, 50, 0), [10, 0, 20, 20]);
    lb.set_weight("http://h2", 6).unwrap();
    assert_eq!(tally(&mut lb, 90, 0), [10, 0, 60, 20]);
    // 1 of 4 healthy: panic, every host by its weight.
    lb.set_healthy("http://h0", false).unwrap();
    lb.set_healthy("http://h3", false).unwrap();
    assert_eq!(tally(&mut lb, 120, 0), [10, 30, 60, 20]);
    for h in 0..4 {
        lb.set_healthy(&format!("http://h{h}"), true).unwrap();
        lb.set_weight(&format!("http://h{h}"), 7).unwrap();
    }
    assert_eq!(tally(&mut lb, 40, 0), [10, 10, 10, 10]);
}

/// Setting a weight a host already has (as a delta does for every host it updates) keeps the
/// sums and the turn; a weight changed outside the default subset leaves its set's weights
/// even.
#[test]
fn weighted_round_robin_keeps_its_turn_through_unchanged_weights() {
    let mut lb = weighed(LbPolicy::RoundRobin, &[1, 5, 1, 1]);
    let before = tally(&mut lb, 3, 0);
    lb.set_weight("http://h1", 5).unwrap();
    // The cycle goes on where it was: 3 + 5 turns close it.
    let after = tally(&mut lb, 5, 3);
    let cycle: Vec<u32> = before.iter().zip(&after).map(|(a, b)| a + b).collect();
    assert_eq!(cycle, [1, 5, 1, 1]);

    let mut config = config(FallbackPolicy::DefaultSubset);
    config.default_subset = BTreeMap::from([("zone".into(), "a".into())]);
    let mut lb = SubsetLb::build(&table(&["zone=a", "zone=a", "zone=b"], config)).unwrap();
    lb.set_weight("http://h2", 2).unwrap();
    // The default subset's hosts kept weight 1: its picks ignore the weight changed outside.
    assert_eq!(lb.weighted_hosts, 1);
}

/// A retry under weighted round robin never takes the failed host.
#[test]
fn weighted_round_robin_retries_elsewhere() {
    let mut lb = weighed(LbPolicy::RoundRobin, &[1, 50, 1]);
    let md = lb.metadata();
    for seed in 0..50 {
        let first = lb.select(&md, seed).unwrap();
        let retry = lb.select_retry(&md, seed + 1, first.host).unwrap();
        assert_ne!(first.host, retry.host);
        lb.release(first.host);
        lb.release(retry.host);
    }
    let heavy = lb.host_id("http://h1").unwrap();
    let md = lb.metadata();
    let others = (0..40).filter(|&seed| {
        lb.select_retry(&md, seed, heavy).is_some_and(|s| {
            lb.release(s.host);
            s.host != heavy
        })
    });
    assert_eq!(others.count(), 40);
}

#[test]
fn weighted_picks_in_proportion() {
    let c = counts(LbPolicy::Weighted, &[1, 3, 6], 10_000);
    // Expected 1000 / 3000 / 6000; a 10% band is > 10 standard deviations.
    for (got, want) in c.iter().zip([1000, 3000, 6000]) {
        assert!(got.abs_diff(want) < want / 10, "{c:?}");
    }
}

/// One heavy host among light ones: rejection sampling (a uniform member kept with
/// probability weight / max) mostly draws light members and rejects them, so its last resort
/// must keep the proportions too (a plain scan picked nearly uniformly: ~42% for the heavy
/// host instead of 94%).
#[test]
fn weighted_picks_in_proportion_when_weights_are_skewed() {
    let mut weights = vec![1; 63];
    weights.push(1000);
    let c = counts(LbPolicy::Weighted, &weights, 20_000);
    // Expected 20000 x 1000 / 1063 = 18815 for the heavy host, ~19 for each light one.
    assert!(c[63].abs_diff(18_815) < 400, "{c:?}");
    let light: u32 = c[..63].iter().sum();
    assert!(light.abs_diff(1185) < 400, "{c:?}");
}

/// The prefix sums of a weighted set follow its changes: a weight lowered (and `max_weight`
/// with it), a host marked unhealthy, then healthy again.
#[test]
fn weighted_picks_follow_weight_and_health_changes() {
    let mut weights = vec![1; 63];
    weights.push(1000);
    let mut lb = weighed(LbPolicy::Weighted, &weights);
    assert!(tally(&mut lb, 2000, 0)[63] > 1700);
    lb.set_healthy("http://h63", false).unwrap();
    assert_eq!(tally(&mut lb, 2000, 2000)[63], 0);
    lb.set_healthy("http://h63", true).unwrap();
    assert!(tally(&mut lb, 2000, 4000)[63] > 1700);
    lb.set_weight("http://h63", 1).unwrap();
    let c = tally(&mut lb, 6400, 6000);
    // Uniform now: 100 each expected; 60-140 is 4 standard deviations.
    assert!(c.iter().all(|n| n.abs_diff(100) < 40), "{c:?}");
}

/// Random picks stay uniform over the eligible hosts when most are not (panic disabled): a
/// scan from a random start for the first eligible one after the draws missed would favour
/// the host after the longest run of unhealthy ones (~59% to 41% here).
#[test]
fn random_picks_are_uniform_among_few_eligible_hosts() {
    let mut lb = weighed(LbPolicy::Random, &[1; 40]);
    lb.options.panic_threshold = 0;
    for i in 0..38 {
        lb.set_healthy(&format!("http://h{i}"), false).unwrap();
    }
    let c = tally(&mut lb, 4000, 0);
    // Expected 2000 each; 150 is ~5 standard deviations.
    assert!(
        c[38].abs_diff(2000) < 150 && c[39].abs_diff(2000) < 150,
        "{c:?}"
    );
}

/// Round robin starts each set at a random member, not every isolate at the first.
#[test]
fn round_robin_starts_at_a_random_member() {
    let firsts: BTreeSet<u32> = (0..32)
        .map(|seed| {
            let mut lb = weighed(LbPolicy::RoundRobin, &[1; 8]);
            let md = lb.metadata();
            lb.select(&md, seed * 0x9e37_79b9).unwrap().host.slot
        })
        .collect();
    assert!(firsts.len() > 4, "{firsts:?}");
}

#[test]
fn random_is_uniform() {
    let c = counts(LbPolicy::Random, &[1, 9, 1, 1], 8000);
    assert!(c.iter().all(|&n| n.abs_diff(2000) < 200), "{c:?}");
}

/// Least request over different weights: idle hosts are picked in proportion to weight, and
/// requests held open settle in proportion to weight too.
#[test]
fn least_request_follows_weights() {
    let c = counts_released(LbPolicy::LeastRequest, &[1, 3], 8000);
    // Expected 2000 / 6000; 300 is ~7 standard deviations.
    assert!(c[0].abs_diff(2000) < 300, "{c:?}");
    // Nothing released: in flight per unit of weight stays level.
    let c = counts(LbPolicy::LeastRequest, &[1, 3, 4], 8000);
    for (got, want) in c.iter().zip([1000, 3000, 4000]) {
        assert!(got.abs_diff(want) <= 8, "{c:?}");
    }
}

fn counts_released(policy: LbPolicy, weights: &[u32], n: u64) -> Vec<u32> {
    tally_releasing(&mut weighed(policy, weights), n, 0, true)
}

#[test]
fn least_request_prefers_idle_hosts() {
    // Nothing is released: each pick raises its host's load, so p2c keeps loads level
    // (random picking would spread them by ~sqrt(n)).
    let c = counts(LbPolicy::LeastRequest, &[1, 1, 1, 1], 4000);
    let (min, max) = (c.iter().min().unwrap(), c.iter().max().unwrap());
    assert!(max - min <= 8, "{c:?}");
}

#[test]
fn identical_subsets_share_storage() {
    // Every host has c=1: {a=x} and {a=x, c=1} are the same hosts.
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["a"], &["a", "c"]]);
    let t = table(&["a=1,c=1", "a=1,c=1", "a=2,c=1"], config);
    let mut lb = SubsetLb::build(&t).unwrap();
    assert_eq!(lb.stats().subsets_active, 4);
    // A host joining only one of two sharers gets that one a copy.
    lb.add_host(Host::new("http://x").with_label("a", "1"))
        .unwrap();
    assert_eq!(
        picks(&mut lb, &[("a", "1"), ("c", "1")], 30).0,
        set(&["h0", "h1"])
    );
    assert_eq!(picks(&mut lb, &[("a", "1")], 30).0.len(), 3);
}

/// A host joining some of the subsets that share a set gets them a copy (sharing the
/// original's range of the chains): both sets then hold each old host, pick only their own
/// live hosts through removals, and a removed host's slot goes to a new host (of another
/// subset) only once neither set can pick it any more (counting one holder only fails this).
#[test]
fn a_split_set_and_its_sharers_let_go_of_removed_hosts() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["a"], &["a", "c"]]);
    let mut lb = SubsetLb::build(&table(&["a=1,c=1"; 6], config)).unwrap();
    lb.add_host(Host::new("http://x").with_label("a", "1"))
        .unwrap();
    let (both, one) = ([("a", "1"), ("c", "1")], [("a", "1")]);
    let everyone = ["h0", "h1", "h2", "h3", "h4", "h5"];
    assert_eq!(picks(&mut lb, &both, 60).0, set(&everyone));
    assert_eq!(picks(&mut lb, &one, 60).0.len(), 7);
    // x first: the copy then holds 7 entries for 6 live hosts and drops its tombstones after
    // 3 more removals (more than half), when the original, 6 for 3, keeps them.
    let gone = ["http://x", "http://h0", "http://h1", "http://h2"];
    for (gone, left) in gone.into_iter().zip([6, 5, 4, 3]) {
        lb.remove_host(gone).unwrap();
        // New hosts elsewhere take any slot freed: none may show up in the sets below.
        let elsewhere = Host::new(format!("{gone}-elsewhere")).with_label("a", "2");
        lb.add_host(elsewhere).unwrap();
        let (in_both, in_one) = (picks(&mut lb, &both, 60).0, picks(&mut lb, &one, 60).0);
        assert_eq!(in_both.len(), left, "{in_both:?}");
        assert!(!in_both.contains(gone));
        // {a=1} is {a=1, c=1} and x while x is there.
        let mut want = in_both;
        if lb.host_id("http://x").is_some() {
            want.insert("http://x".into());
        }
        assert_eq!(in_one, want);
    }
    // More hosts elsewhere, to take every slot freed so far.
    for i in 0..4 {
        let elsewhere = Host::new(format!("http://more-{i}")).with_label("a", "2");
        lb.add_host(elsewhere).unwrap();
    }
    assert_eq!(picks(&mut lb, &both, 60).0, set(&["h3", "h4", "h5"]));
    assert_eq!(picks(&mut lb, &one, 60).0, set(&["h3", "h4", "h5"]));
    assert_eq!(picks(&mut lb, &[("a", "2")], 60).0.len(), 8);
}

#[test]
fn empty_subsets_are_dropped_and_slots_reused() {
    let mut config = config(FallbackPolicy::NoFallback);
    config.selectors = selectors(&[&["zone"]]);
    let mut lb = SubsetLb::build(&table(&["zone=a", "zone=b"], config)).unwrap();
    let old = lb.host_id("http://h1").unwrap();
    lb.remove_host("http://h1").unwrap();
    let stats = lb.stats();
    assert_eq!((stats.subsets_active, stats.subsets_removed), (1, 1));
    assert_eq!(picks(&mut lb, &[("zone", "b")], 3).1, None);
    let new = lb
        .add_host(Host::new("http://n").with_label("zone", "b"))
        .unwrap();
    assert_eq!(new.slot, old.slot, "the freed slot is reused");
    assert_ne!(new, old);
    assert_eq!(lb.address(old), None);
    lb.release(old); // stale: ignored
    assert_eq!(lb.stats().subsets_created, 3);
}

#[test]
fn retry_excludes_the_failed_host() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    let request = md(&lb, &[("zone", "a")]);
    for seed in 0..20 {
        let first = lb.select(&request, seed).unwrap();
        let retry = lb.select_retry(&request, seed + 1, first.host).unwrap();
        assert_ne!(first.host, retry.host);
        assert_eq!(lb.in_flight(first.host), Some(1));
        lb.release(first.host);
        lb.release(retry.host);
    }
}

#[test]
fn updates_are_refused_with_reasons() {
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    let err = lb.add_host(Host::new("http://h0")).unwrap_err();
    assert_eq!(err, SubsetError::DuplicateAddress("http://h0".into()));
    assert!(matches!(
        lb.add_host(Host::new("")),
        Err(SubsetError::Table(_))
    ));
    assert_eq!(
        lb.remove_host("http://zz"),
        Err(SubsetError::UnknownHost("http://zz".into()))
    );
    assert!(lb.set_weight("http://h0", 0).is_err());
    assert!(lb.set_healthy("http://zz", true).is_err());
    assert_eq!(lb.len(), 4);
}

#[test]
fn metadata_records_unknown_and_overflowing_keys() {
    let lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    let mut m = lb.metadata();
    assert!(m.is_empty());
    lb.set(&mut m, "zone", "a");
    lb.set(&mut m, "zone", "b");
    assert_eq!(m.len(), 1);
    lb.set(&mut m, "unknown", "a");
    assert!(m.has_foreign_key() && !m.is_empty());
    let mut full = lb.metadata();
    for i in 0..METADATA_CAPACITY as u32 + 1 {
        full.put_ids(i, 0);
    }
    assert_eq!(full.len(), METADATA_CAPACITY);
    assert!(full.has_foreign_key());
}

#[test]
fn build_validated_skips_only_what_the_index_does_not_need() {
    let mut config = config(FallbackPolicy::AnyEndpoint);
    config.selectors = selectors(&[&["zone"]]);
    let mut t = table(&["zone=a", "zone=b"], config);
    let lb = SubsetLb::build_validated(&t).unwrap();
    assert_eq!(lb.stats(), SubsetLb::build(&t).unwrap().stats());
    // An address validation refuses: not checked again.
    t.hosts[0].address = "not a url".into();
    assert!(SubsetLb::build(&t).is_err());
    assert_eq!(SubsetLb::build_validated(&t).unwrap().len(), 2);
    // What the index relies on still is.
    t.hosts[0].weight = 0;
    assert!(SubsetLb::build_validated(&t).is_err());
    t.hosts[0].weight = 1;
    t.hosts[0].address = t.hosts[1].address.clone();
    assert!(SubsetLb::build_validated(&t).is_err());
}

#[test]
fn nested_selectors_share_one_order_of_hosts() {
    // All 15 selectors of 4 keys: 6 chains (the 6 pairs nest in none of each other) hold the
    // members of every set of two or more hosts, n slots each.
    let keys = ["a", "b", "c", "d"];
    let mut config = config(FallbackPolicy::NoFallback);
    let all: Vec<Vec<&str>> = (1u32..16)
        .map(|m| {
            (0..4)
                .filter(|k| m & (1 << k) != 0)
                .map(|k| keys[k])
                .collect()
        })
        .collect();
    config.selectors = selectors(&all.iter().map(|s| &s[..]).collect::<Vec<_>>());
    let labels: Vec<String> = (0..200)
        .map(|i| {
            format!(
                "a={},b={},c={},d={}",
                i % 2,
                i / 2 % 2,
                i / 4 % 2,
                i / 8 % 2
            )
        })
        .collect();
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let mut lb = SubsetLb::build(&table(&labels, config)).unwrap();
    // Hosts join (as members of the sets' own) and leave (as tombstones) a chained set.
    let (a0b1, _) = picks(&mut lb, &[("a", "0"), ("b", "1")], 400);
    assert_eq!(a0b1.len(), 50);
    lb.add_host(
        Host::new("http://new")
            .with_label("a", "0")
            .with_label("b", "1"),
    )
    .unwrap();
    lb.remove_host("http://h2").unwrap();
    let (now, _) = picks(&mut lb, &[("a", "0"), ("b", "1")], 400);
    assert_eq!(now.len(), 50);
    assert!(now.contains("http://new") && !now.contains("http://h2"));
    for i in (0..200).filter(|&i| i != 2) {
        lb.remove_host(&format!("http://h{i}")).unwrap();
    }
    assert_eq!(
        picks(&mut lb, &[("a", "0"), ("b", "1")], 4).0,
        set(&["new"])
    );
}

#[test]
fn tables_in_address_order_find_hosts_before_and_after_changes() {
    // `http://h0` to `h3` ascend: found by search until a host is added or removed.
    let mut lb = SubsetLb::build(&table(&HOSTS, config(FallbackPolicy::NoFallback))).unwrap();
    let found = |lb: &SubsetLb, a: &str| {
        lb.host_id(a)
            .and_then(|id| lb.address(id))
            .map(String::from)
    };
    for i in 0..4 {
        let address = format!("http://h{i}");
        assert_eq!(found(&lb, &address), Some(address));
    }
    assert_eq!(found(&lb, "http://h"), None);
    assert_eq!(found(&lb, "http://h10"), None);
    lb.set_healthy("http://h3", false).unwrap();
    let err = lb.add_host(Host::new("http://h2")).unwrap_err();
    assert_eq!(err, SubsetError::DuplicateAddress("http://h2".into()));

    lb.remove_host("http://h1").unwrap();
    lb.add_host(Host::new("http://a").with_label("zone", "a"))
        .unwrap();
    for address in ["http://h0", "http://h2", "http://h3", "http://a"] {
        assert_eq!(found(&lb, address).as_deref(), Some(address));
    }
    assert_eq!(found(&lb, "http://h1"), None);
    let zone_a = md(&lb, &[("zone", "a")]);
    let mut picked = BTreeSet::new();
    for n in 0..8 {
        let chosen = lb.select(&zone_a, n).unwrap();
        picked.insert(String::from(lb.address(chosen.host).unwrap()));
        lb.release(chosen.host);
    }
    assert_eq!(
        picked,
        BTreeSet::from(["http://a".into(), "http://h0".into()])
    );
}

#[test]
fn repeated_addresses_in_address_order_are_refused() {
    let mut repeated = table(&HOSTS, config(FallbackPolicy::NoFallback));
    repeated.hosts[2].address = "http://h1".into();
    let expected = SubsetError::Table(crate::HostTableError::DuplicateAddress {
        first: 1,
        index: 2,
        address: "http://h1".into(),
    });
    assert_eq!(SubsetLb::build(&repeated).unwrap_err(), expected);
    assert_eq!(SubsetLb::build_validated(&repeated).unwrap_err(), expected);
    let bytes = repeated.encode_unchecked();
    assert_eq!(SubsetLb::decode(&bytes).unwrap_err(), expected);
}
