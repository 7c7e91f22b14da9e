#![allow(clippy::unwrap_used, clippy::expect_used)]
extern crate std;

mod options;
mod reference;

use std::collections::{BTreeMap, BTreeSet};
use std::format;
use std::string::{String, ToString};

use std::vec::Vec;

use proptest::prelude::*;

use super::*;
use crate::{Host, HostTable, HostTableError, LbPolicy, SubsetConfig, SubsetSelector};
use reference::{Reference, Request};

/// Addresses the index picks for zone `zone` over many requests.
pub(crate) fn picked(lb: &mut SubsetLb, zone: &str) -> std::collections::BTreeSet<String> {
    let mut md = lb.metadata();
    lb.set(&mut md, "zone", zone);
    (0..64u64)
        .filter_map(|e| {
            let chosen = lb.select(&md, e)?;
            lb.release(chosen.host);
            Some(lb.address(chosen.host)?.to_string())
        })
        .collect()
}

const KEYS: [&str; 4] = ["a", "b", "c", "d"];
/// Values of host labels; "1,2" is a list under `list_as_any` and a plain value otherwise.
const VALUES: [&str; 6] = ["1", "2", "3", "1,2", "2,3", " 1, 3,"];

pub(super) fn labels() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(&KEYS[..]).prop_map(str::to_string),
        prop::sample::select(&VALUES[..]).prop_map(str::to_string),
        0..=4,
    )
}

/// Values from a pool wider than a key's lanes hold, among them long ones of one fingerprint
/// (same first 8 and last 7 bytes): keys with many values, which move from their lanes to a
/// hash table of their own during the build.
fn wide_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&VALUES[..]).prop_map(str::to_string),
        (0..40u32).prop_map(|i| format!("w{i}")),
        (0..4u32).prop_map(|i| format!("0123456789-abcdef-{i}-0123456789")),
    ]
}

fn wide_labels(max: usize) -> impl Strategy<Value = BTreeMap<String, String>> {
    let key = prop::sample::select(&KEYS[..]).prop_map(str::to_string);
    prop::collection::btree_map(key, wide_value(), 0..=max)
}

pub(super) fn host_parts() -> impl Strategy<Value = (BTreeMap<String, String>, bool, u32)> {
    host_parts_with(labels())
}

/// A host's labels (from `labels`), health and weight.
fn host_parts_with(
    labels: impl Strategy<Value = BTreeMap<String, String>>,
) -> impl Strategy<Value = (BTreeMap<String, String>, bool, u32)> {
    (labels, prop::bool::weighted(0.8), 1..5u32)
}

pub(super) fn host(
    n: usize,
    (labels, healthy, weight): (BTreeMap<String, String>, bool, u32),
) -> Host {
    Host {
        address: format!("http://10.0.{}.{}", n / 250, n % 250),
        weight,
        healthy,
        labels,
    }
}

fn keys_of(mask: u8) -> Vec<String> {
    (0..4)
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| KEYS[i].to_string())
        .collect()
}

const SELECTOR_FALLBACKS: [SelectorFallback; 5] = [
    SelectorFallback::NotDefined,
    SelectorFallback::NoFallback,
    SelectorFallback::AnyEndpoint,
    SelectorFallback::DefaultSubset,
    SelectorFallback::KeysSubset,
];

/// A selector from raw draws: keys from a mask, a fallback, a keys subset from another mask
/// (cut to a strict subset; its high bit sets `fallback_on_unhealthy`), single host or not.
fn selector((mask, fallback, sub, single): (u8, usize, u8, bool)) -> SubsetSelector {
    let keys = keys_of(mask);
    let mut fallback_policy = SELECTOR_FALLBACKS[fallback];
    let mut fallback_keys_subset = Vec::new();
    if fallback_policy == SelectorFallback::KeysSubset {
        let subset: Vec<String> = keys_of(mask & sub);
        fallback_keys_subset = match subset.len() {
            n if n > 0 && n < keys.len() => subset,
            _ => keys[..keys.len() - 1].to_vec(),
        };
        if fallback_keys_subset.is_empty() {
            fallback_policy = SelectorFallback::NotDefined;
        }
    }
    SubsetSelector {
        keys,
        fallback_policy,
        fallback_keys_subset,
        single_host_per_subset: single,
        fallback_on_unhealthy: sub & 0x80 != 0,
    }
}

pub(super) fn pairs(max: usize) -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map(
        prop::sample::select(&["a", "b", "c", "d", "x"][..]).prop_map(str::to_string),
        prop::sample::select(&["1", "2", "3", "9"][..]).prop_map(str::to_string),
        0..=max,
    )
}

pub(super) fn config() -> impl Strategy<Value = SubsetConfig> {
    let selectors = prop::collection::vec(
        (1..16u8, 0..5usize, any::<u8>(), prop::bool::weighted(0.2)),
        0..6,
    );
    let policy = prop::sample::select(
        &[
            FallbackPolicy::NoFallback,
            FallbackPolicy::AnyEndpoint,
            FallbackPolicy::DefaultSubset,
        ][..],
    );
    let child = prop::sample::select(
        &[
            LbPolicy::RoundRobin,
            LbPolicy::Weighted,
            LbPolicy::Random,
            LbPolicy::LeastRequest,
        ][..],
    );
    let flags = (any::<bool>(), any::<bool>(), any::<bool>());
    let fallbacks =
        prop::collection::vec(pairs(2).prop_filter("non-empty", |p| !p.is_empty()), 0..3);
    let threshold = prop::sample::select(&[0u8, 50, 100][..]);
    (
        selectors,
        policy,
        pairs(2),
        flags,
        fallbacks,
        child,
        threshold,
    )
        .prop_map(
            |(
                raw,
                fallback_policy,
                default_subset,
                (panic_mode_any, list_as_any, allow_redundant_keys),
                metadata_fallbacks,
                child_policy,
                panic_threshold,
            )| {
                let mut selectors: Vec<SubsetSelector> = Vec::new();
                for s in raw.into_iter().map(selector) {
                    let same = |o: &SubsetSelector| o.keys == s.keys;
                    if !selectors.iter().any(same) {
                        selectors.push(s);
                    }
                }
                SubsetConfig {
                    fallback_policy,
                    default_subset,
                    selectors,
                    panic_mode_any,
                    list_as_any,
                    allow_redundant_keys,
                    metadata_fallbacks,
                    child_policy,
                    panic_threshold,
                }
            },
        )
}

#[derive(Debug, Clone)]
enum Op {
    Add((BTreeMap<String, String>, bool, u32)),
    Remove(usize),
    Health(usize, bool),
    Weight(usize, u32),
}

fn op() -> impl Strategy<Value = Op> {
    op_with(labels())
}

/// Updates whose added hosts carry `labels`.
fn op_with(
    labels: impl Strategy<Value = BTreeMap<String, String>> + 'static,
) -> impl Strategy<Value = Op> {
    prop_oneof![
        host_parts_with(labels).prop_map(Op::Add),
        any::<usize>().prop_map(Op::Remove),
        (any::<usize>(), any::<bool>()).prop_map(|(i, h)| Op::Health(i, h)),
        (any::<usize>(), 1..9u32).prop_map(|(i, w)| Op::Weight(i, w)),
    ]
}

/// Applies `op` to the index and to the reference's host list.
fn apply(lb: &mut SubsetLb, hosts: &mut Vec<Host>, next: &mut usize, op: Op) {
    match op {
        Op::Add(parts) => {
            let h = host(*next, parts);
            *next += 1;
            lb.add_host(h.clone()).unwrap();
            hosts.push(h);
        }
        Op::Remove(i) if !hosts.is_empty() => {
            let h = hosts.remove(i % hosts.len());
            lb.remove_host(&h.address).unwrap();
            assert_eq!(lb.host_id(&h.address), None);
        }
        Op::Health(i, healthy) if !hosts.is_empty() => {
            let n = hosts.len();
            hosts[i % n].healthy = healthy;
            lb.set_healthy(&hosts[i % n].address, healthy).unwrap();
        }
        Op::Weight(i, weight) if !hosts.is_empty() => {
            let n = hosts.len();
            hosts[i % n].weight = weight;
            lb.set_weight(&hosts[i % n].address, weight).unwrap();
        }
        _ => {}
    }
}

pub(super) fn metadata(lb: &SubsetLb, request: &Request) -> Metadata {
    let mut md = lb.metadata();
    for (k, v) in request {
        lb.set(&mut md, k, v);
    }
    md
}

/// The index and the reference agree on every request: same fallback, same panic, a host the
/// reference allows; the retry too; on the number of active subsets, and on each one's hosts
/// (those of `single_host_per_subset` aside, which keep one).
pub(super) fn agree(
    lb: &mut SubsetLb,
    hosts: &[Host],
    config: &SubsetConfig,
    requests: &[Request],
) {
    let reference = Reference {
        config,
        hosts: hosts.iter().collect(),
    };
    let active = reference.active_subsets();
    assert_eq!(
        lb.stats().subsets_active,
        active.len() as u64,
        "active subsets"
    );
    for subset in &active {
        if reference
            .selector_for(subset)
            .is_some_and(|s| s.single_host_per_subset)
        {
            continue;
        }
        let hosts = reference.members(subset).into_iter();
        let hosts: BTreeSet<String> = hosts.map(|h| h.address.clone()).collect();
        let md = metadata(lb, subset);
        assert_eq!(subset_hosts(lb, &md), Some(hosts), "subset {subset:?}");
    }
    // Every host is found by its address, by binary search or hash table.
    for h in hosts {
        let id = lb.host_id(&h.address).expect("a host of the table");
        assert_eq!(lb.address(id), Some(&*h.address));
    }
    assert_eq!(lb.host_id("http://10.0.0.1:1"), None);
    for (n, request) in requests.iter().enumerate() {
        let md = metadata(lb, request);
        let expected = reference.select(request, None);
        let chosen = lb.select(&md, n as u64);
        check(lb, chosen, expected.as_ref(), request);
        let Some(chosen) = chosen else { continue };
        let address = lb.address(chosen.host).unwrap().to_string();
        let expected = reference.select(request, Some(&address));
        let retried = lb.select_retry(&md, !(n as u64), chosen.host);
        check(lb, retried, expected.as_ref(), request);
        if let Some(retried) = retried {
            assert_ne!(retried.host, chosen.host);
            lb.release(retried.host);
        }
        lb.release(chosen.host);
    }
}

/// The addresses of the live hosts of `md`'s subset, as the index holds them.
fn subset_hosts(lb: &SubsetLb, md: &Metadata) -> Option<BTreeSet<String>> {
    let (kvs, len) = md.kvs();
    let members = lb.subsets.members(lb.subsets.get(&kvs[..len])?);
    let address = |s: u32| lb.slots[s as usize].address.to_string();
    Some(members.iter().map(address).collect())
}

fn check(
    lb: &SubsetLb,
    chosen: Option<Selection>,
    expected: Option<&reference::Expected>,
    request: &Request,
) {
    match (chosen, expected) {
        (None, None) => {}
        (Some(c), Some(e)) => {
            let address = lb.address(c.host).unwrap();
            assert_eq!(
                (c.fallback, c.metadata_fallback, c.panic),
                (e.fallback, e.metadata_fallback, e.panic),
                "request {request:?}"
            );
            assert!(
                e.pool.contains(address),
                "request {request:?}: {address} not in {:?}",
                e.pool
            );
        }
        (c, e) => panic!("request {request:?}: index chose {c:?}, reference {e:?}"),
    }
}

/// The index read in place from the table's encoding ([`SubsetLb::decode`]) agrees with the
/// reference as the one built from the table does, with the same subsets.
fn same_as_decoded(lb: &SubsetLb, table: &HostTable, requests: &[Request]) {
    let mut decoded = SubsetLb::decode(&table.encode().unwrap()).unwrap();
    assert_eq!(decoded.stats(), lb.stats());
    assert_eq!(decoded.version(), lb.version());
    agree(&mut decoded, &table.hosts, &table.subset, requests);
}

/// Builds a table from `parts` (its hosts in address order if `in_order`, as the daemon serves
/// them, else in an order where `10.0.0.10` comes before `10.0.0.2`), checks the index against
/// the reference, applies `ops` (checking after each one if `every_step`, else once at the
/// end), and returns the index and its hosts.
fn build_and_update(
    parts: Vec<(BTreeMap<String, String>, bool, u32)>,
    config: &SubsetConfig,
    requests: &[Request],
    (ops, in_order): (Vec<Op>, bool),
    every_step: bool,
) -> (SubsetLb, Vec<Host>) {
    let mut hosts: Vec<Host> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| host(i, p))
        .collect();
    if in_order {
        hosts.sort_by(|a, b| a.address.cmp(&b.address));
    }
    let table = HostTable {
        version: 1,
        hosts: hosts.clone(),
        subset: config.clone(),
    };
    let mut lb = SubsetLb::build(&table).unwrap();
    same_as_decoded(&lb, &table, requests);
    agree(&mut lb, &hosts, config, requests);
    let mut next = hosts.len();
    for op in ops {
        apply(&mut lb, &mut hosts, &mut next, op);
        if every_step {
            agree(&mut lb, &hosts, config, requests);
        }
    }
    if !every_step {
        agree(&mut lb, &hosts, config, requests);
    }
    (lb, hosts)
}

/// A table large enough for dense ids and of few of them, so that a build from its bytes sets
/// their bits as it reads the labels, with one id too rare to be dense (`canary`, listed from
/// its bits): the decoded index agrees with the reference, through fallbacks and unhealthy hosts.
#[test]
fn decoded_dense_and_sparse_ids_agree_with_the_reference() {
    let mut hosts: Vec<Host> = (0..200)
        .map(|i| {
            let version = if i % 50 == 7 { "canary" } else { "stable" };
            let labels = BTreeMap::from([
                ("version".to_string(), version.to_string()),
                ("zone".to_string(), format!("z{}", i % 3)),
            ]);
            host(i, (labels, i % 11 != 0, 1))
        })
        .collect();
    hosts.sort_by(|a, b| a.address.cmp(&b.address));
    let subset = SubsetConfig {
        selectors: ["zone", "version", "zone,version"]
            .map(|keys| SubsetSelector::new(keys.split(',')))
            .into(),
        fallback_policy: crate::FallbackPolicy::AnyEndpoint,
        ..SubsetConfig::default()
    };
    let mut requests: Vec<Request> = Vec::new();
    for zone in ["z0", "z1", "z2", "z9"] {
        for version in ["stable", "canary", "beta"] {
            let pairs = [("zone", zone), ("version", version)];
            requests.push(pairs.map(|(k, v)| (k.to_string(), v.to_string())).into());
            requests.push(BTreeMap::from([(
                "version".to_string(),
                version.to_string(),
            )]));
        }
    }
    let table = HostTable {
        version: 3,
        hosts,
        subset,
    };
    let lb = SubsetLb::build(&table).unwrap();
    same_as_decoded(&lb, &table, &requests);
    // Every member, not only a member: round robin over twice the hosts picks each host of a
    // set, so a host missing from a subset's bits (or listed twice) shows.
    let mut decoded = SubsetLb::decode(&table.encode().unwrap()).unwrap();
    assert_eq!(decoded.options.policy, LbPolicy::RoundRobin);
    let reference = Reference {
        config: &table.subset,
        hosts: table.hosts.iter().collect(),
    };
    for request in &requests {
        let md = metadata(&decoded, request);
        let picked: std::collections::BTreeSet<String> = (0..400u64)
            .filter_map(|e| {
                let chosen = decoded.select(&md, e)?;
                decoded.release(chosen.host);
                Some(decoded.address(chosen.host)?.to_string())
            })
            .collect();
        let expected = reference.select(request, None).map(|e| e.pool);
        assert_eq!(Some(picked), expected, "request {request:?}");
    }
}

/// Keys of eight ids, 7 bits a lane, over 200 values a key: ids spill into the lanes above,
/// and the index must still agree with the reference through adds and removes (the property
/// tests' few keys never get there). Half the requests mix two hosts' labels: subsets no host
/// has. (`subset_keys_beyond_their_lanes_compare_ids` makes keys collide on purpose.)
#[test]
fn spilled_keys_agree_with_the_reference_through_updates() {
    let keys: Vec<String> = (0..8).map(|i| format!("k{i}")).collect();
    let config = SubsetConfig {
        selectors: alloc::vec![
            SubsetSelector::new(keys.iter().map(String::as_str)),
            SubsetSelector::new(["k0", "k1"]),
        ],
        ..SubsetConfig::default()
    };
    let mut rng = 0x1234_5678_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let make = |n: usize, r: u64| {
        let mut h = Host::new(format!("http://10.0.{}.{}", n / 250, n % 250));
        for (i, k) in keys.iter().enumerate() {
            h.labels
                .insert(k.clone(), ((r >> (i * 7)) % 200).to_string());
        }
        h
    };
    let mut hosts: Vec<Host> = (0..300).map(|n| make(n, next())).collect();
    let table = HostTable {
        version: 1,
        hosts: hosts.clone(),
        subset: config.clone(),
    };
    let mut lb = SubsetLb::build(&table).unwrap();
    let mut added = hosts.len();
    for step in 0..400 {
        let r = next();
        if r % 3 == 0 && !hosts.is_empty() {
            let h = hosts.remove((r as usize / 3) % hosts.len());
            lb.remove_host(&h.address).unwrap();
        } else {
            let h = make(added, next());
            added += 1;
            lb.add_host(h.clone()).unwrap();
            hosts.push(h);
        }
        if step % 20 == 0 {
            let mixed = hosts.iter().zip(hosts.iter().rev()).map(|(a, b)| {
                let mut labels = a.labels.clone();
                labels.extend(b.labels.iter().skip(4).map(|(k, v)| (k.clone(), v.clone())));
                labels
            });
            let requests: Vec<Request> = hosts
                .iter()
                .map(|h| h.labels.clone())
                .take(40)
                .chain(mixed.take(40))
                .collect();
            agree(&mut lb, &hosts, &config, &requests);
        }
    }
    let rebuilt = HostTable {
        version: 2,
        hosts,
        subset: config,
    };
    let rebuilt = SubsetLb::build(&rebuilt).unwrap();
    assert_eq!(rebuilt.stats().subsets_active, lb.stats().subsets_active);
}

/// Two keys unique per host, in a selector together and one each: a node below the root has
/// one candidate and a thousand values of its key, and visits the candidate's value alone
/// (`Walk::values_among`), where it intersected every value. The index agrees with the
/// reference, built and decoded, through adds and removes, on requests naming a host, mixing
/// two hosts' values (no such subset) and naming one key.
#[test]
fn two_keys_unique_per_host_in_one_selector_agree_with_the_reference() {
    let config = SubsetConfig {
        selectors: alloc::vec![
            SubsetSelector::new(["pod", "ip"]),
            SubsetSelector::new(["pod"]),
            SubsetSelector::new(["ip"]),
        ],
        ..SubsetConfig::default()
    };
    let make = |n: usize| {
        Host::new(format!("http://10.1.{}.{}", n / 250, n % 250))
            .with_label("pod", format!("pod-{n}"))
            .with_label("ip", format!("10.0.{}.{}", n / 250, n % 250))
    };
    let mut hosts: Vec<Host> = (0..1000).map(make).collect();
    let requests = |hosts: &[Host]| -> Vec<Request> {
        let one = hosts.iter().step_by(7).map(|h| h.labels.clone());
        let mixed = hosts
            .iter()
            .zip(hosts.iter().skip(1))
            .step_by(11)
            .map(|(a, b)| {
                let mut labels = a.labels.clone();
                labels.insert("ip".into(), b.labels["ip"].clone());
                labels
            });
        let pod_only = hosts.iter().step_by(13).map(|h| {
            let mut labels = h.labels.clone();
            labels.remove("ip");
            labels
        });
        one.chain(mixed).chain(pod_only).collect()
    };
    let table = HostTable {
        version: 1,
        hosts: hosts.clone(),
        subset: config.clone(),
    };
    let mut lb = SubsetLb::build(&table).unwrap();
    assert_eq!(lb.stats().subsets_active, 3 * 1000);
    same_as_decoded(&lb, &table, &requests(&hosts));
    agree(&mut lb, &hosts, &config, &requests(&hosts));
    for n in 1000..1100 {
        let gone = hosts.swap_remove(n % 97);
        lb.remove_host(&gone.address).unwrap();
        let h = make(n);
        lb.add_host(h.clone()).unwrap();
        hosts.push(h);
    }
    agree(&mut lb, &hosts, &config, &requests(&hosts));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn index_agrees_with_reference(
        parts in prop::collection::vec(host_parts(), 0..24),
        config in config(),
        requests in prop::collection::vec(pairs(4), 1..12),
        ops in prop::collection::vec(op(), 0..24),
        in_order in any::<bool>(),
    ) {
        let (lb, hosts) = build_and_update(parts, &config, &requests, (ops, in_order), true);
        // A fresh build of the final table agrees too (and with the updated index's count).
        let rebuilt = SubsetLb::build(&HostTable { version: 2, hosts: hosts.clone(), subset: config.clone() }).unwrap();
        prop_assert_eq!(rebuilt.stats().subsets_active, lb.stats().subsets_active);
        prop_assert_eq!(
            rebuilt.stats().single_host_collisions,
            lb.stats().single_host_collisions
        );
    }

    /// Tables large enough for the dense key=value lists to become bitsets (64 slots and more).
    #[test]
    fn large_tables_agree_with_reference(
        parts in prop::collection::vec(host_parts(), 200..700),
        config in config(),
        requests in prop::collection::vec(pairs(4), 1..12),
        ops in prop::collection::vec(op(), 0..6),
        in_order in any::<bool>(),
    ) {
        build_and_update(parts, &config, &requests, (ops, in_order), false);
    }

    /// Keys with more values than their lanes hold, in the build and in the updates after it.
    #[test]
    fn many_valued_keys_agree_with_reference(
        parts in prop::collection::vec(host_parts_with(wide_labels(4)), 0..200),
        config in config(),
        requests in prop::collection::vec(wide_labels(4), 1..12),
        ops in prop::collection::vec(op_with(wide_labels(4)), 0..12),
        in_order in any::<bool>(),
    ) {
        build_and_update(parts, &config, &requests, (ops, in_order), true);
    }

    /// All hosts healthy and of one weight: sets are counted without reading the slots, and
    /// picks in sets without tombstones read none, until the updates break the uniformity.
    #[test]
    fn uniform_tables_agree_with_reference(
        labels in prop::collection::vec(labels(), 0..300),
        config in config(),
        requests in prop::collection::vec(pairs(4), 1..12),
        ops in prop::collection::vec(op(), 0..12),
        in_order in any::<bool>(),
    ) {
        let parts = labels.into_iter().map(|l| (l, true, 2)).collect();
        build_and_update(parts, &config, &requests, (ops, in_order), true);
    }

    /// Hosts whose lists put them in around `MAX_LIST_SUBSETS` subsets: validation, both
    /// decoders, both builds and adding the last host to the others' index refuse the same
    /// tables with the same error.
    #[test]
    fn the_list_cap_is_one_rule_on_every_path(
        lists in prop::collection::vec(prop::collection::vec(0usize..40, 3), 1..4),
        selectors in prop::collection::btree_set(1u8..8, 1..5),
    ) {
        let keys = ["a", "b", "c"];
        let hosts: Vec<Host> = lists.iter().enumerate().map(|(i, counts)| {
            let mut host = Host::new(format!("http://h{i}"));
            for (key, &n) in keys.iter().zip(counts) {
                // Items repeat from the 30th on (`x0` again): they count once.
                let items: Vec<String> = (0..n).map(|j| format!("x{}", j % 30)).collect();
                host.labels.insert((*key).into(), items.join(","));
            }
            host
        }).collect();
        let selectors = selectors.iter().map(|&mask| {
            let chosen = keys.iter().enumerate().filter(|(k, _)| mask & (1 << k) != 0);
            SubsetSelector::new(chosen.map(|(_, key)| *key))
        });
        let subset = SubsetConfig { list_as_any: true, selectors: selectors.collect(), ..SubsetConfig::default() };
        let table = HostTable { version: 1, hosts, subset };
        let verdict = table.validate().map_err(SubsetError::Table);
        let bytes = table.encode_unchecked();
        prop_assert_eq!(HostTable::decode(&bytes).map(drop).map_err(SubsetError::Table), verdict.clone());
        prop_assert_eq!(SubsetLb::decode(&bytes).map(drop), verdict.clone());
        prop_assert_eq!(SubsetLb::build(&table).map(drop), verdict.clone());
        prop_assert_eq!(SubsetLb::build_validated(&table).map(drop), verdict.clone());
        let mut others = table.clone();
        let last = others.hosts.pop().unwrap();
        if let Ok(mut lb) = SubsetLb::build(&others) {
            let index = others.hosts.len();
            let expected = match &verdict {
                Err(SubsetError::Table(HostTableError::TooManyListSubsets { index: i, count })) if *i == index => {
                    Err(SubsetError::Table(HostTableError::TooManyListSubsets { index, count: *count }))
                }
                _ => Ok(()),
            };
            prop_assert_eq!(lb.add_host(last).map(drop), expected);
        }
    }

    #[test]
    fn every_host_is_picked_from_its_subset(n in 1usize..40, seed in any::<u64>()) {
        // Weights differ (1 to 4) when the seed is odd: round robin and least request weigh.
        let weight = |i: usize| 1 + (seed as u32 & 1) * (i % 4) as u32;
        let hosts: Vec<Host> = (0..n).map(|i| host(i, (BTreeMap::from([("a".into(), (i % 3).to_string())]), true, weight(i)))).collect();
        let mut table = HostTable { version: 1, hosts, subset: SubsetConfig::default() };
        table.subset.selectors.push(SubsetSelector::new(["a"]));
        for policy in [LbPolicy::RoundRobin, LbPolicy::Weighted, LbPolicy::Random, LbPolicy::LeastRequest] {
            table.subset.child_policy = policy;
            let mut lb = SubsetLb::build(&table).unwrap();
            let mut md = lb.metadata();
            lb.set(&mut md, "a", "1");
            for i in 0..20u64 {
                let Some(c) = lb.select(&md, seed ^ i) else {
                    prop_assert!(n < 2);
                    continue;
                };
                let slot = c.host.slot as usize;
                prop_assert_eq!(slot % 3, 1);
            }
        }
    }
}
