//! Subset load balancing workloads and the peer `edgewise::SubsetLb` is measured against,
//! shared by the criterion bench (`benches/subset.rs`) and the `subset_wasm` binary (native and
//! `wasm32-wasip1` under Node).
//!
//! Scenarios (issue 4):
//! - [`Scenario::FourByThree`]: 4 keys, each with one of 3 random values per host, and all 15
//!   selectors over them (255 subsets): the benchmark of the MOSN article.
//! - [`Scenario::Mosn`]: MOSN's own benchmark scheme: `zone` random over 3 values, three labels
//!   constant across hosts, 15 selectors over the 4 keys.
//! - [`Scenario::Unique`]: one key whose value is unique per host (Envoy's worst case, one
//!   subset per host).
//! - [`Scenario::Pairs`], for the profiling examples only: two keys unique per host, in a
//!   selector together and one each (a build that once made hosts² intersections).
//!
//! The peer, [`FullScan`], is MOSN's build before its inverted index (`createSubsets` in
//! `pkg/upstream/cluster/subset_loadbalancer.go`, written anew in Rust): for each host and each
//! selector, find or create the subset of the host's values in a trie of hash maps, and when it
//! is new, filter all hosts with `HostMatches` into its host list: O(subsets x hosts x keys).

use std::collections::HashMap;

use edgewise::{Host, HostTable, SubsetConfig, SubsetSelector};
use rustc_hash::FxBuildHasher;

use crate::workload::SplitMix64;

/// Host counts of the build benchmarks.
pub const SIZES: [usize; 2] = [8_000, 100_000];

/// A host table shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// (a) 4 keys x 3 random values, all 15 selectors.
    FourByThree,
    /// (b) zone random over 3, three constant labels, all 15 selectors.
    Mosn,
    /// (c) one key unique per host, one selector.
    Unique,
    /// Two keys unique per host (`pod`, `ip`), their three selectors: not in [`Scenario::ALL`]
    /// (its full scan grows with hosts², as unique's does), only in the profiling examples.
    Pairs,
}

impl Scenario {
    /// All three, in table order.
    pub const ALL: [Scenario; 3] = [Scenario::FourByThree, Scenario::Mosn, Scenario::Unique];

    /// What the profiling examples take: [`Scenario::ALL`] and [`Scenario::Pairs`].
    pub const PROFILED: [Scenario; 4] = [
        Scenario::FourByThree,
        Scenario::Mosn,
        Scenario::Unique,
        Scenario::Pairs,
    ];

    /// Short name for tables and bench ids.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::FourByThree => "4x3",
            Scenario::Mosn => "mosn",
            Scenario::Unique => "unique",
            Scenario::Pairs => "pairs",
        }
    }

    /// The scenario of [`Scenario::name`] `name`.
    pub fn named(name: &str) -> Option<Scenario> {
        Scenario::PROFILED.into_iter().find(|s| s.name() == name)
    }

    /// `SCENARIO HOSTS ROUNDS`, the profiling examples' first arguments (`rounds` > 0).
    pub fn profile_args(args: &[String]) -> Option<(Scenario, usize, usize)> {
        let number = |i: usize| args.get(i).and_then(|a| a.parse::<usize>().ok());
        let scenario = Scenario::named(args.first()?)?;
        Some((scenario, number(1)?, number(2).filter(|&r| r > 0)?))
    }

    /// The label keys of its hosts, which requests set.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Scenario::FourByThree => &["k0", "k1", "k2", "k3"],
            Scenario::Mosn => &["zone", "mosn_aig", "mosn_version", "mosn_env"],
            Scenario::Unique => &["id"],
            Scenario::Pairs => &["pod", "ip"],
        }
    }

    /// The label values of host `i`.
    fn labels(self, i: usize, rng: &mut SplitMix64) -> Vec<(&'static str, String)> {
        let keys = self.keys();
        match self {
            Scenario::FourByThree => keys
                .iter()
                .map(|&k| (k, format!("v{}", rng.below(3))))
                .collect(),
            Scenario::Mosn => vec![
                (keys[0], format!("zone{}", rng.below(3))),
                (keys[1], "aig1".into()),
                (keys[2], "1.0.0".into()),
                (keys[3], "prod".into()),
            ],
            Scenario::Unique => vec![(keys[0], format!("host-{i}"))],
            Scenario::Pairs => vec![(keys[0], format!("pod-{i}")), (keys[1], ip(i))],
        }
    }

    /// The subset selectors: every non-empty subset of the keys.
    pub fn selectors(self) -> Vec<Vec<String>> {
        let keys = self.keys();
        (1..1u32 << keys.len())
            .map(|mask| {
                (0..keys.len())
                    .filter(|b| mask & (1 << b) != 0)
                    .map(|b| keys[b].to_owned())
                    .collect()
            })
            .collect()
    }

    /// A table of `n` hosts, the same for a given seed on every target, in address order as
    /// the daemon serves it.
    pub fn table(self, n: usize, seed: u64) -> HostTable {
        let mut table = self.unsorted_table(n, seed);
        table.sort_hosts();
        table
    }

    /// [`Scenario::table`] in the order it was made, not the addresses' (`10.0.0.10` before
    /// `10.0.0.2`): a table the daemon did not serve, which the build hashes to prove its
    /// addresses unique.
    fn unsorted_table(self, n: usize, seed: u64) -> HostTable {
        let mut rng = SplitMix64::new(seed);
        let hosts = (0..n)
            .map(|i| {
                let mut host = Host::new(address(i));
                for (k, v) in self.labels(i, &mut rng) {
                    host = host.with_label(k, v);
                }
                host
            })
            .collect();
        let subset = SubsetConfig {
            selectors: self
                .selectors()
                .into_iter()
                .map(SubsetSelector::new)
                .collect(),
            ..SubsetConfig::default()
        };
        HostTable {
            version: 1,
            hosts,
            subset,
        }
    }

    /// `count` requests carrying every key of the scenario, with values of random hosts (so
    /// each names an existing subset).
    pub fn requests(
        self,
        table: &HostTable,
        count: usize,
        seed: u64,
    ) -> Vec<Vec<(String, String)>> {
        let mut rng = SplitMix64::new(seed);
        (0..count)
            .map(|_| {
                let host = &table.hosts[rng.below(table.hosts.len())];
                host.labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .collect()
    }

    /// `requests` with each key as its position in [`Scenario::keys`] (a key it lacks past
    /// them, which matches nothing), for
    /// [`SubsetLb::set_values`](edgewise::SubsetLb::set_values) with keys resolved from
    /// those: a proxy's attributes, each read from its header, come with their positions.
    pub fn keyed<'t>(self, requests: &[Vec<(&'t str, &'t str)>]) -> Vec<Vec<(usize, &'t str)>> {
        let keys = self.keys();
        let at = |k: &str| keys.iter().position(|n| *n == k).unwrap_or(keys.len());
        requests
            .iter()
            .map(|r| r.iter().map(|&(k, v)| (at(k), v)).collect())
            .collect()
    }
}

/// Requests as a proxy holds them once parsed: each one's header text in one buffer (here all
/// requests' back to back), its pairs as slices of that text, not a heap string per header
/// (which put every header of a lookup bench's 1,024 requests in its own cache line).
#[derive(Debug, Clone)]
pub struct Parsed {
    text: String,
    /// Per pair, the key's span and the value's span.
    pairs: Vec<(Span, Span)>,
    /// Per request, where its pairs end in `pairs`.
    ends: Vec<u32>,
}

type Span = (u32, u32);

impl Parsed {
    pub fn new(requests: &[Vec<(String, String)>]) -> Parsed {
        let mut parsed = Parsed {
            text: String::new(),
            pairs: Vec::new(),
            ends: Vec::new(),
        };
        for request in requests {
            for (k, v) in request {
                let pair = (parsed.push(k), parsed.push(v));
                parsed.pairs.push(pair);
            }
            parsed.ends.push(parsed.pairs.len() as u32);
        }
        parsed
    }

    fn push(&mut self, s: &str) -> Span {
        let start = self.text.len() as u32;
        self.text.push_str(s);
        (start, self.text.len() as u32)
    }

    /// Per request, its (key, value) pairs as slices of the text, as a parser's array of
    /// header slices.
    pub fn requests(&self) -> Vec<Vec<(&str, &str)>> {
        let text = |(s, e): Span| &self.text[s as usize..e as usize];
        let starts = core::iter::once(0).chain(self.ends.iter().copied());
        starts
            .zip(&self.ends)
            .map(|(start, &end)| {
                let pairs = &self.pairs[start as usize..end as usize];
                pairs.iter().map(|&(k, v)| (text(k), text(v))).collect()
            })
            .collect()
    }
}

/// `table` at the next version with `changes` hosts changed, spread over the table and taking
/// turns: one marked unhealthy (or healthy again), one given the labels of a host half the table
/// away (moved to other subsets), one removed, one added (labels of a removed host's kind); in
/// address order.
pub fn changed(table: &HostTable, changes: usize) -> HostTable {
    let n = table.hosts.len();
    let mut next = table.clone();
    next.version += 1;
    let mut removed = Vec::new();
    for j in 0..changes.min(n) {
        let i = (j * 7919 + 13) % n;
        match j % 4 {
            0 => next.hosts[i].healthy = !next.hosts[i].healthy,
            1 => next.hosts[i].labels = table.hosts[(i + n / 2) % n].labels.clone(),
            2 => removed.push(i),
            _ => {
                let mut host = table.hosts[i].clone();
                host.address = address(n + j);
                next.hosts.push(host);
            }
        }
    }
    removed.sort_unstable();
    removed.dedup();
    for i in removed.into_iter().rev() {
        next.hosts.remove(i);
    }
    // As the daemon serves it.
    next.sort_hosts();
    next
}

/// The address of host `i`: distinct for up to 16M hosts.
pub fn address(i: usize) -> String {
    format!("http://{}:8080", ip(i))
}

/// The IPv4 address of host `i` in `10.0.0.0/8`: distinct for up to 16M hosts.
fn ip(i: usize) -> String {
    format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255)
}

/// A host as MOSN holds it: address and a metadata map.
#[derive(Debug, Clone)]
pub struct PeerHost {
    /// The address.
    pub address: String,
    /// Labels, as Go's `map[string]string`.
    pub metadata: HashMap<String, String, FxBuildHasher>,
}

/// The peer's hosts for a table.
pub fn peer_hosts(table: &HostTable) -> Vec<PeerHost> {
    table
        .hosts
        .iter()
        .map(|h| PeerHost {
            address: h.address.clone(),
            metadata: h
                .labels
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
        .collect()
}

/// MOSN's `types.LbSubsetMap`: key -> value -> entry. hashbrown's, for `entry_ref`: one probe
/// per level by `&str`, and a key copied only where a level is created, as Go's map does.
type SubsetMap =
    hashbrown::HashMap<String, hashbrown::HashMap<String, Entry, FxBuildHasher>, FxBuildHasher>;

/// MOSN's `LBSubsetEntryImpl`: children and, once initialized, the subset's hosts with a
/// round-robin child balancer.
#[derive(Debug, Default, PartialEq, Eq)]
struct Entry {
    children: SubsetMap,
    hosts: Option<Vec<usize>>,
    next: usize,
}

/// MOSN's subset load balancer with the full-scan build.
#[derive(Debug)]
pub struct FullScan {
    subsets: SubsetMap,
    created: usize,
}

impl FullScan {
    /// `createSubsets`: for each host and selector, the subset of the host's values, made by
    /// filtering every host when new. `selectors` are sorted key lists.
    pub fn build(hosts: &[PeerHost], selectors: &[Vec<String>]) -> FullScan {
        let mut lb = FullScan {
            subsets: SubsetMap::default(),
            created: 0,
        };
        for host in hosts {
            for keys in selectors {
                let Some(kvs) = extract(keys, &host.metadata) else {
                    continue;
                };
                let entry = find_or_create(&mut lb.subsets, &kvs);
                if entry.hosts.is_none() {
                    let matching = (0..hosts.len()).filter(|&i| host_matches(&kvs, &hosts[i]));
                    entry.hosts = Some(matching.collect());
                    lb.created += 1;
                }
            }
        }
        lb
    }

    /// The same trie built by grouping hosts by their values, as MOSN's later indexed build
    /// leaves it: for lookups in tables where the full scan would take minutes (a key unique
    /// per host at 100k hosts).
    pub fn grouped(hosts: &[PeerHost], selectors: &[Vec<String>]) -> FullScan {
        let mut lb = FullScan {
            subsets: SubsetMap::default(),
            created: 0,
        };
        for (i, host) in hosts.iter().enumerate() {
            for keys in selectors {
                let Some(kvs) = extract(keys, &host.metadata) else {
                    continue;
                };
                let entry = find_or_create(&mut lb.subsets, &kvs);
                let hosts = entry.hosts.get_or_insert_with(|| {
                    lb.created += 1;
                    Vec::new()
                });
                hosts.push(i);
            }
        }
        lb
    }

    /// Subsets created.
    pub fn subsets(&self) -> usize {
        self.created
    }

    /// `findSubset` over criteria sorted by key, then the subset's round robin; a host index.
    pub fn choose<K: AsRef<str>, V: AsRef<str>>(&mut self, criteria: &[(K, V)]) -> Option<usize> {
        let mut map = &mut self.subsets;
        let (last, init) = criteria.split_last()?;
        for (k, v) in init {
            map = &mut map.get_mut(k.as_ref())?.get_mut(v.as_ref())?.children;
        }
        let entry = map.get_mut(last.0.as_ref())?.get_mut(last.1.as_ref())?;
        let hosts = entry.hosts.as_ref()?;
        entry.next = entry.next.wrapping_add(1);
        hosts.get(entry.next % hosts.len().max(1)).copied()
    }
}

/// `ExtractSubsetMetadata`: the host's value for each key, if it has them all. One slice per
/// call, as Go's; its strings borrowed, as Go's are shared (copying each pair, and again per
/// map level in `find_or_create`, made this peer's build up to 44% slower than MOSN's code).
fn extract<'h>(
    keys: &'h [String],
    metadata: &'h HashMap<String, String, FxBuildHasher>,
) -> Option<Vec<(&'h str, &'h str)>> {
    keys.iter()
        .map(|k| Some((k.as_str(), metadata.get(k)?.as_str())))
        .collect()
}

/// `FindOrCreateSubset`: one lookup per level, and a key copied only where a level is created.
fn find_or_create<'m>(subsets: &'m mut SubsetMap, kvs: &[(&str, &str)]) -> &'m mut Entry {
    let (name, value) = kvs[0];
    let entry = subsets
        .entry_ref(name)
        .or_default()
        .entry_ref(value)
        .or_default();
    match kvs.len() {
        1 => entry,
        _ => find_or_create(&mut entry.children, &kvs[1..]),
    }
}

/// `HostMatches`.
fn host_matches(kvs: &[(&str, &str)], host: &PeerHost) -> bool {
    kvs.iter()
        .all(|(k, v)| host.metadata.get(*k).is_some_and(|value| value == v))
}

/// MOSN's selectors are sorted key sets (`types.InitSet`); requests' criteria are sorted too.
pub fn sorted(mut keys: Vec<String>) -> Vec<String> {
    keys.sort();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_and_edgewise_make_the_same_subsets() {
        for scenario in Scenario::ALL {
            let table = scenario.table(600, 7);
            let selectors: Vec<_> = scenario.selectors().into_iter().map(sorted).collect();
            let peer = FullScan::build(&peer_hosts(&table), &selectors);
            let lb = edgewise::SubsetLb::build(&table).unwrap();
            assert_eq!(
                peer.subsets() as u64,
                lb.stats().subsets_active,
                "{scenario:?}"
            );
            let grouped = FullScan::grouped(&peer_hosts(&table), &selectors);
            assert_eq!(grouped.subsets(), peer.subsets());
            assert_eq!(grouped.subsets, peer.subsets);
        }
        assert_eq!(
            FullScan::build(
                &peer_hosts(&Scenario::FourByThree.table(8000, 1)),
                &Scenario::FourByThree.selectors()
            )
            .subsets(),
            255
        );
    }

    #[test]
    fn scenarios_are_found_by_name() {
        for scenario in Scenario::ALL {
            assert_eq!(Scenario::named(scenario.name()), Some(scenario));
        }
        assert_eq!(Scenario::named("4X3"), None);
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let parsed = Scenario::profile_args(&args(&["mosn", "8000", "3", "bytes"]));
        assert_eq!(parsed, Some((Scenario::Mosn, 8000, 3)));
        for bad in [
            &["mosn", "8000", "0"][..],
            &["mosn", "x", "3"],
            &["other", "1", "1"],
            &["mosn"],
        ] {
            assert_eq!(Scenario::profile_args(&args(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn peer_lookup_finds_matching_hosts() {
        let table = Scenario::FourByThree.table(500, 3);
        let hosts = peer_hosts(&table);
        let mut peer = FullScan::build(&hosts, &Scenario::FourByThree.selectors());
        for request in Scenario::FourByThree.requests(&table, 50, 9) {
            let i = peer.choose(&request).unwrap();
            let request: Vec<(&str, &str)> = request
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert!(host_matches(&request, &hosts[i]));
        }
    }

    /// The full scan makes the subsets grouping the hosts makes, for every scheme.
    #[test]
    fn full_scan_builds_the_grouped_trie() {
        for scenario in [Scenario::FourByThree, Scenario::Mosn, Scenario::Unique] {
            let table = scenario.table(300, 5);
            let hosts = peer_hosts(&table);
            let selectors = scenario.selectors();
            let (scan, grouped) = (
                FullScan::build(&hosts, &selectors),
                FullScan::grouped(&hosts, &selectors),
            );
            assert_eq!(scan.subsets, grouped.subsets, "{scenario:?}");
            assert_eq!(scan.created, grouped.created, "{scenario:?}");
        }
    }
}
