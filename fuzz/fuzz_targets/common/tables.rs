//! What the subset targets share: a small valid host table drawn from the input, and a check
//! that two load balancers route alike.

use std::collections::{BTreeMap, BTreeSet};

use edgewise::{
    FallbackPolicy, Host, HostTable, LbPolicy, SelectorFallback, SubsetLb, SubsetSelector,
};

const KEYS: [&str; 4] = ["a", "zone", "version", "a-key-longer-than-15"];
/// Values, one a list for `list_as_any`.
const VALUES: [&str; 7] = [
    "x",
    "y",
    "eu-west-1",
    "v1.2.3",
    "a-value-longer-than-15",
    "",
    "x,y",
];

/// The input's bytes one at a time, zeros once it runs out.
pub struct Draw<'a>(pub &'a [u8]);

impl Draw<'_> {
    pub fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    pub fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }
}

/// Host `i`, its address distinct for each `i` below 62,500.
pub fn host(d: &mut Draw, i: usize) -> Host {
    let mut host = Host::new(format!("http://10.0.{}.{}:8080", i / 250, i % 250));
    host.weight = 1 + d.below(3) as u32;
    host.healthy = d.below(4) != 0;
    for key in KEYS {
        match d.below(8) {
            0..=5 => drop(
                host.labels
                    .insert(key.into(), VALUES[d.below(VALUES.len())].into()),
            ),
            // Unique per host: the interning of a key with many values.
            6 => drop(host.labels.insert(key.into(), format!("host-{i}"))),
            _ => {}
        }
    }
    host
}

/// A table of 1 to 24 hosts, up to four selectors and options drawn from `d`: mostly valid
/// (`encode` refuses the rest, such as two selectors of the same keys).
pub fn table(d: &mut Draw) -> HostTable {
    let mut table = HostTable {
        version: 1 + u64::from(d.byte()),
        hosts: (0..1 + d.below(24)).map(|i| host(d, i)).collect(),
        ..HostTable::default()
    };
    // Sorted most of the time, as the daemon serves them; else in the order drawn.
    if d.below(4) != 0 {
        table.sort_hosts();
    }
    let subset = &mut table.subset;
    for _ in 0..1 + d.below(4) {
        let keys: Vec<&str> = KEYS.iter().copied().filter(|_| d.below(2) == 0).collect();
        if keys.is_empty() {
            continue;
        }
        let mut selector = SubsetSelector::new(keys.iter().copied());
        selector.single_host_per_subset = d.below(8) == 0;
        if keys.len() > 1 && d.below(4) == 0 {
            selector.fallback_policy = SelectorFallback::KeysSubset;
            selector.fallback_keys_subset = vec![keys[0].into()];
        }
        subset.selectors.push(selector);
    }
    subset.fallback_policy = match d.below(3) {
        0 => FallbackPolicy::NoFallback,
        1 => FallbackPolicy::AnyEndpoint,
        _ => FallbackPolicy::DefaultSubset,
    };
    subset.default_subset = pair(d);
    if d.below(4) == 0 {
        subset.metadata_fallbacks = vec![pair(d), pair(d)];
    }
    subset.panic_threshold = [0, 50, 100][d.below(3)];
    subset.list_as_any = d.below(4) == 0;
    subset.allow_redundant_keys = d.below(4) == 0;
    subset.panic_mode_any = d.below(4) == 0;
    subset.child_policy = LbPolicy::RoundRobin;
    table
}

/// One label drawn from `d`.
fn pair(d: &mut Draw) -> BTreeMap<String, String> {
    let key = KEYS[d.below(KEYS.len())];
    BTreeMap::from([(key.into(), VALUES[d.below(VALUES.len())].into())])
}

/// How `lb` finds the first host for `labels` and, if `cycle` is given, the addresses it picks
/// in that many selections (each released at once): a round-robin cycle visits every member
/// whatever host it starts from, which differs between indexes. `None` if it picks none.
fn route(
    lb: &mut SubsetLb,
    labels: &[(&str, &str)],
    cycle: Option<usize>,
) -> Option<(String, BTreeSet<String>)> {
    let mut md = lb.metadata();
    for (key, value) in labels {
        lb.set(&mut md, key, value);
    }
    let mut picked = BTreeSet::new();
    let mut how = None;
    for entropy in 0..cycle.unwrap_or(1) as u64 {
        let selection = lb.select(&md, entropy)?;
        how.get_or_insert(format!(
            "{:?} {:?} {}",
            selection.fallback, selection.metadata_fallback, selection.panic
        ));
        if cycle.is_some() {
            picked.insert(lb.address(selection.host).expect("picked").to_owned());
        }
        lb.release(selection.host);
    }
    Some((how?, picked))
}

/// Whether `a` and `b` route each host's labels of `table`, and each with one label dropped,
/// alike: the same fallback and, over `cycles` round-robin cycles, the same addresses.
pub fn agree(a: &mut SubsetLb, b: &mut SubsetLb, table: &HostTable, cycles: u64) {
    // A round-robin cycle takes a member as often as its weight: the table's total weight
    // covers any subset's cycle. Past 256 (weights mutated up), only the fallbacks are compared.
    let weights: u64 = table.hosts.iter().map(|h| u64::from(h.weight)).sum();
    let cycle = (weights <= 256).then_some((cycles * weights) as usize);
    for host in &table.hosts {
        let labels: Vec<(&str, &str)> = host
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        for skip in 0..=labels.len() {
            let mut request = labels.clone();
            if skip < labels.len() {
                request.remove(skip);
            }
            assert_eq!(
                route(a, &request, cycle),
                route(b, &request, cycle),
                "request {request:?}"
            );
        }
    }
}
