//! The worker's in-place build from the daemon's bytes against the owned path, on tables that
//! are valid until mutated: a small table drawn from the input is encoded, then up to seven of
//! its bytes are overwritten, anywhere (offsets, ends, label positions, weights) or inside an
//! address or label text. Such bytes mostly pass bytecheck and reach the columns' checks, the
//! address scan and the interning, which arbitrary bytes never get to. `SubsetLb::decode` and
//! `HostTable::decode` must accept and refuse the same bytes with the same error. What both
//! accept must hold addresses `Origin::parse` keeps as they are, each once (both paths share
//! the one-pass scan), and must route alike: for each host's labels, and for each request
//! missing one of them, the same fallback and, over a round-robin cycle, the same addresses.
#![no_main]

use std::collections::BTreeSet;

use edgewise::{
    FallbackPolicy, Host, HostTable, LbPolicy, Origin, SelectorFallback, SubsetError, SubsetLb,
    SubsetSelector,
};
use libfuzzer_sys::fuzz_target;

const KEYS: [&str; 4] = ["a", "zone", "version", "a-key-longer-than-15"];
const VALUES: [&str; 6] = [
    "x",
    "y",
    "eu-west-1",
    "v1.2.3",
    "a-value-longer-than-15",
    "",
];

/// The input's bytes one at a time, zeros once it runs out.
struct Draw<'a>(&'a [u8]);

impl Draw<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        usize::from(self.byte()) % n
    }
}

fn host(d: &mut Draw, i: usize) -> Host {
    let mut host = Host::new(format!("http://10.0.{}.{}:8080", i / 7, i % 7 * 31));
    host.weight = 1 + d.below(3) as u32;
    host.healthy = d.below(4) != 0;
    for key in KEYS {
        match d.below(8) {
            0..=5 => drop(host.labels.insert(key.into(), VALUES[d.below(6)].into())),
            // Unique per host: the interning of a key with many values.
            6 => drop(host.labels.insert(key.into(), format!("host-{i}"))),
            _ => {}
        }
    }
    host
}

fn table(d: &mut Draw) -> HostTable {
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
    subset
        .default_subset
        .insert(KEYS[d.below(4)].into(), VALUES[d.below(6)].into());
    subset.list_as_any = d.below(4) == 0;
    subset.allow_redundant_keys = d.below(4) == 0;
    subset.panic_mode_any = d.below(4) == 0;
    subset.child_policy = LbPolicy::RoundRobin;
    table
}

/// One overwrite of the encoded table.
struct Mutation {
    kind: u8,
    a: u8,
    b: u8,
    c: u8,
    byte: u8,
}

/// Bytes URL and label checks decide on.
const SPECIAL: &[u8] = b"/:.@?#%[]-_ \x00\x7f\xc3\xff0aZ";

/// Up to 7 overwrites from the start of the input, before the table's draw takes what
/// follows: a fuzzer's short inputs mutate too.
fn mutations(d: &mut Draw) -> Vec<Mutation> {
    let n = d.below(8);
    (0..n)
        .map(|_| Mutation {
            kind: d.byte(),
            a: d.byte(),
            b: d.byte(),
            c: d.byte(),
            byte: d.byte(),
        })
        .collect()
}

/// Where `m` overwrites `bytes`: anywhere, or inside a host's address or label text (found by
/// its first occurrence), which arbitrary places seldom hit.
fn place(bytes: &[u8], table: &HostTable, m: &Mutation) -> usize {
    let anywhere = usize::from(u16::from_le_bytes([m.a, m.b])) % bytes.len();
    let host = &table.hosts[usize::from(m.a) % table.hosts.len()];
    let texts: Vec<&str> = host
        .labels
        .iter()
        .flat_map(|(k, v)| [k, v])
        .map(String::as_str)
        .collect();
    let text = match m.kind % 3 {
        0 => return anywhere,
        1 => host.address.as_str(),
        _ => match texts.get(usize::from(m.b) % texts.len().max(1)) {
            Some(text) if !text.is_empty() => text,
            _ => return anywhere,
        },
    };
    let found = bytes.windows(text.len()).position(|w| w == text.as_bytes());
    found.map_or(anywhere, |at| at + usize::from(m.c) % text.len())
}

fn mutate(bytes: &mut [u8], table: &HostTable, mutations: &[Mutation]) {
    for m in mutations {
        let at = place(bytes, table, m);
        bytes[at] = match m.kind & 0x80 {
            0 => m.byte,
            _ => SPECIAL[usize::from(m.byte) % SPECIAL.len()],
        };
    }
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

fuzz_target!(|data: &[u8]| {
    let mut d = Draw(data);
    let mutations = mutations(&mut d);
    let drawn = table(&mut d);
    let Ok(mut bytes) = drawn.encode() else {
        return;
    };
    mutate(&mut bytes, &drawn, &mutations);
    let in_place = SubsetLb::decode(&bytes);
    let table = match HostTable::decode(&bytes) {
        Ok(table) => table,
        Err(e) => {
            assert_eq!(in_place.err(), Some(SubsetError::Table(e)));
            return;
        }
    };
    // Both paths share the one-pass address scan: what they accept must also be what the
    // general parser calls an origin in normal form, each address once.
    for host in &table.hosts {
        let normal = Origin::parse(&host.address).map(|o| o.as_str() == host.address);
        assert_eq!(normal, Ok(true), "accepted address {:?}", host.address);
    }
    let addresses: BTreeSet<&str> = table.hosts.iter().map(|h| h.address.as_str()).collect();
    assert_eq!(
        addresses.len(),
        table.hosts.len(),
        "an address accepted twice"
    );
    let mut in_place = in_place.expect("decoded in place as well");
    let mut built = SubsetLb::build(&table).expect("a decoded table builds");
    assert_eq!(
        (in_place.version(), in_place.len(), in_place.stats()),
        (built.version(), built.len(), built.stats())
    );
    // A round-robin cycle takes a member as often as its weight: the table's total weight
    // covers any subset's cycle. Past 256 (weights mutated up), only the fallbacks are compared.
    let weights: u64 = table.hosts.iter().map(|h| u64::from(h.weight)).sum();
    let cycle = (weights <= 256).then_some(weights as usize);
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
                route(&mut in_place, &request, cycle),
                route(&mut built, &request, cycle),
                "request {request:?}"
            );
        }
    }
    assert_eq!(in_place.stats(), built.stats());
});
