//! The subset load balancing benchmarks as a plain binary, so they run where criterion cannot:
//! compiled to `wasm32-wasip1` under Node (V8, the engine Workers run) by
//! `scripts/bench-subset.sh`. Built natively it prints the same tables, for a side-by-side read.
//!
//!   subset_wasm [--batches N] [--batch-ms MS] [--peer-rounds N] [--max-hosts N]
//!
//! - build: `SubsetLb::build` (build + drop), which validates the table first,
//!   `HostTable::validate` alone, and `SubsetLb::build_validated` (the index of a table
//!   validated before: the walk of the hosts without their checks), of each scenario at 8k
//!   and 100k hosts beside MOSN's full-scan build ([`FullScan`]), which runs `--peer-rounds`
//!   times (at least 5 at 8k), its rounds spread over the batches (its 100k builds take
//!   seconds; the unique-key scenario's would take minutes and is extrapolated from 8k by its
//!   O(n^2) cost instead). Retained bytes are measured by a counting global allocator: live
//!   heap bytes with the load balancer built minus before (the host table itself excluded).
//! - from bytes: the worker's path from a `GET /v1/hosts` body to an index, before
//!   (`HostTable::decode` + `SubsetLb::build_validated`) and now (`SubsetLb::decode`, in place).
//! - lookup: `select` + `release` with metadata set once (pre-interned), or set per request
//!   from its header slices (raw strings: keys and values; raw values: keys resolved once by
//!   `SubsetLb::request_keys`), beside MOSN's trie of hash maps over the same slices.
//! - child policies: pre-interned 4x3 lookups under round robin, weighted and least request,
//!   every host of weight 1 (even) or of weights 1 to 4 (uneven: round robin takes weighted
//!   turns, least request draws by weight).
//! - update: one host removed and added back, and its health toggled, at 100k hosts.
//! - table change: a new table version with 4, 1% and 5% of the hosts changed (health, labels,
//!   removed, added: [`changed`]), reaching the worker as a `HostDelta` (decoded and applied in
//!   place: there and back, so each batch starts from the same table) beside the in-place build
//!   of the whole new table it replaces.
//!
//! Build and lookup cells are medians over batches, peers interleaved batch by batch.

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use edgewise::{Host, HostDelta, HostTable, LbPolicy, Metadata, SubsetLb};
use edgewise_benches::batch::{self, Config, Sampler, TARGET, fmt_ns};
use edgewise_benches::subset::{
    FullScan, Parsed, PeerHost, SIZES, Scenario, changed, peer_hosts, sorted,
};

/// Live heap bytes.
static LIVE: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call goes unchanged to the system allocator, which upholds the `GlobalAlloc`
// contract; the bookkeeping is one relaxed atomic add or sub, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: our caller's layout contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `System` with `layout`; `new_size` is our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SEED: u64 = 0x5eed;
const REQUESTS: usize = 1024;
const MIB: f64 = 1024.0 * 1024.0;

/// Prints the build row of `scenario` at `n` hosts; returns the full scan's median ns.
/// `full_scan_8k`, that of the row at 8k hosts, is what a table too large to scan (`*`)
/// extrapolates from.
fn build_row(
    cfg: &Config,
    scenario: Scenario,
    n: usize,
    peer_rounds: usize,
    full_scan_8k: f64,
) -> f64 {
    let table = scenario.table(n, SEED);
    let before = LIVE.load(Ordering::Relaxed);
    let lb = SubsetLb::build(&table).unwrap_or_else(|e| panic!("{e}"));
    let retained = LIVE.load(Ordering::Relaxed) - before;
    let (subsets, index) = (lb.stats().subsets_active, lb.index_heap_bytes());
    drop(lb);
    let mut sampler = Sampler::new(cfg);
    let mut peer = FullScanRounds::new(&table, scenario, n);
    let rounds = peer_rounds_at(n, peer_rounds);
    for b in 0..cfg.batches {
        sampler.batch("validate", 1, || table.validate().is_ok());
        sampler.batch("build", 1, || SubsetLb::build(&table).map(|lb| lb.len()));
        sampler.batch("prevalidated", 1, || {
            SubsetLb::build_validated(&table).map(|lb| lb.len())
        });
        // The peer's rounds spread over the batches, not after them: a shared VM's speed
        // drifts by 1.5x or more within minutes, and the ratio is of the two.
        let due = (b + 1) * rounds / cfg.batches - b * rounds / cfg.batches;
        (0..due).for_each(|_| peer.round());
    }
    let (checks, build) = (median(&sampler, "validate"), median(&sampler, "build"));
    let prevalidated = median(&sampler, "prevalidated");
    let (peer, peer_note) = match peer {
        FullScanRounds::Extrapolated => (extrapolated(full_scan_8k, n), '*'),
        timed => (timed.median(), ' '),
    };
    println!(
        "{:<7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>12}{} {:>7.0}x {:>7.0}x {:>9.2} {:>9.2}",
        scenario.name(),
        n,
        subsets,
        fmt_ms(build),
        fmt_ms(checks),
        fmt_ms(build - checks),
        fmt_ms(prevalidated),
        fmt_ms(peer),
        peer_note,
        peer / build,
        peer / prevalidated,
        retained as f64 / MIB,
        index as f64 / MIB,
    );
    peer
}

/// Hosts of the full scan's warm-up build: enough to leave V8's baseline tier (15 selectors
/// times a scan of every host, per host), a few ms.
const WARM_HOSTS: usize = 500;

/// Full-scan rounds at `n` hosts: `--peer-rounds` (its 100k builds take seconds), but at least
/// [`PEER_ROUNDS_8K`] at 8k, where a round takes 35 ms to 1 s and one round alone made the
/// ratio swing with the minute it ran in.
fn peer_rounds_at(n: usize, peer_rounds: usize) -> usize {
    match n <= SIZES[0] {
        true => peer_rounds.max(PEER_ROUNDS_8K),
        false => peer_rounds,
    }
}

const PEER_ROUNDS_8K: usize = 5;

/// MOSN's full-scan build of one table, a round at a time, or nothing to time where one build
/// would take minutes (then [`extrapolated`] from the 8k row's).
enum FullScanRounds {
    Timed {
        hosts: Vec<PeerHost>,
        selectors: Vec<Vec<String>>,
        times: Vec<f64>,
    },
    Extrapolated,
}

impl FullScanRounds {
    fn new(table: &HostTable, scenario: Scenario, n: usize) -> FullScanRounds {
        if scenario == Scenario::Unique && n > 20_000 {
            return FullScanRounds::Extrapolated;
        }
        let selectors: Vec<_> = scenario.selectors().into_iter().map(sorted).collect();
        // V8 runs a Wasm call in the tier it entered with (no on-stack replacement): an
        // untimed build of a small table first, so that a single timed round is not baseline
        // code.
        let warm = peer_hosts(&scenario.table(WARM_HOSTS, SEED));
        black_box(FullScan::build(&warm, &selectors).subsets());
        FullScanRounds::Timed {
            hosts: peer_hosts(table),
            selectors,
            times: Vec::new(),
        }
    }

    fn round(&mut self) {
        if let FullScanRounds::Timed {
            hosts,
            selectors,
            times,
        } = self
        {
            let start = Instant::now();
            black_box(FullScan::build(hosts, selectors).subsets());
            times.push(start.elapsed().as_nanos() as f64);
        }
    }

    /// Median ns of the rounds timed (NaN if none).
    fn median(&self) -> f64 {
        match self {
            FullScanRounds::Timed { times, .. } => batch::median(times).unwrap_or(f64::NAN),
            FullScanRounds::Extrapolated => f64::NAN,
        }
    }
}

/// The full scan's ns at 8k hosts scaled by its O(n^2) cost to `n` hosts, for a table where
/// one build would take minutes. The 8k row's rounds, not rounds of its own: timing the 8k
/// scan again cost the unique-key scenario five more builds of ~1 s a run.
fn extrapolated(at_8k: f64, n: usize) -> f64 {
    at_8k * (n as f64 / SIZES[0] as f64).powi(2)
}

fn median(sampler: &Sampler<'_>, name: &str) -> f64 {
    sampler.median(name).unwrap_or(f64::NAN)
}

/// The worker's path from the body of `GET /v1/hosts` to an index, `SubsetLb::decode` (check,
/// validate and index in place), beside `HostTable::decode` (check, validate, deserialize) then
/// `SubsetLb::build_validated` (encode, index).
fn bytes_row(cfg: &Config, scenario: Scenario, n: usize) {
    let bytes = scenario
        .table(n, SEED)
        .encode()
        .unwrap_or_else(|e| panic!("{e}"));
    let deserialized = || {
        let table = HostTable::decode(&bytes).ok()?;
        let lb = SubsetLb::build_validated(&table).ok()?;
        drop(table);
        Some(lb.len())
    };
    let in_place = || SubsetLb::decode(&bytes).map(|lb| lb.len()).ok();
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("deserialize", 1, deserialized);
        sampler.batch("in-place", 1, in_place);
    }
    let (old, new) = (
        median(&sampler, "deserialize"),
        median(&sampler, "in-place"),
    );
    println!(
        "{:<7} {:>7} {:>9.0} {:>17} {:>9} {:>7.1}x",
        scenario.name(),
        n,
        bytes.len() as f64 / 1024.0,
        fmt_ms(old),
        fmt_ms(new),
        old / new,
    );
}

fn fmt_ms(ns: f64) -> String {
    format!("{:.3}", ns / 1e6)
}

fn lookup_row(cfg: &Config, scenario: Scenario, n: usize) {
    let table = scenario.table(n, SEED);
    let mut lb = SubsetLb::build(&table).unwrap_or_else(|e| panic!("{e}"));
    let owned = scenario.requests(&table, REQUESTS, SEED ^ 1);
    let mds = interned(&lb, &owned);
    let parsed = Parsed::new(&owned);
    let requests = parsed.requests();
    let keyed = scenario.keyed(&requests);
    let keys = lb.request_keys(scenario.keys().iter().copied());
    let selectors: Vec<_> = scenario.selectors().into_iter().map(sorted).collect();
    let mut peer = FullScan::grouped(&peer_hosts(&table), &selectors);
    let mut entropy = 0u64;
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("pre-interned", REQUESTS, || {
            let mut sum = 0;
            for md in &mds {
                entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                sum += pick(&mut lb, md, entropy);
            }
            sum
        });
        sampler.batch("raw-strings", REQUESTS, || {
            let mut sum = 0;
            for r in &requests {
                let mut md = lb.metadata();
                lb.set_all(&mut md, r.iter().copied());
                entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                sum += pick(&mut lb, &md, entropy);
            }
            sum
        });
        sampler.batch("raw-values", REQUESTS, || {
            let mut sum = 0;
            for r in &keyed {
                let mut md = lb.metadata();
                lb.set_values(&mut md, &keys, r.iter().copied());
                entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                sum += pick(&mut lb, &md, entropy);
            }
            sum
        });
        sampler.batch("mosn-trie", REQUESTS, || {
            requests
                .iter()
                .filter_map(|r| peer.choose(r))
                .sum::<usize>()
        });
    }
    let m = |name| sampler.median(name).unwrap_or(f64::NAN);
    let (pre, raw, values, mosn) = (
        m("pre-interned"),
        m("raw-strings"),
        m("raw-values"),
        m("mosn-trie"),
    );
    println!(
        "{:<7} {:>7} {:>4} {:>13} {:>12} {:>11} {:>10} {:>9.1}x",
        scenario.name(),
        n,
        requests[0].len(),
        fmt_ns(pre),
        fmt_ns(raw),
        fmt_ns(values),
        fmt_ns(mosn),
        mosn / raw,
    );
}

/// The metadata of each request, set once (pre-interned).
fn interned(lb: &SubsetLb, requests: &[Vec<(String, String)>]) -> Vec<Metadata> {
    requests
        .iter()
        .map(|r| {
            let mut md = lb.metadata();
            r.iter().for_each(|(k, v)| lb.set(&mut md, k, v));
            md
        })
        .collect()
}

fn pick(lb: &mut SubsetLb, md: &Metadata, entropy: u64) -> usize {
    match lb.select(md, entropy) {
        Some(s) => {
            lb.release(s.host);
            usize::from(s.panic)
        }
        None => 1,
    }
}

/// Pre-interned 4x3 lookups per child policy, over even and uneven host weights.
fn policy_row(cfg: &Config, n: usize) {
    let scenario = Scenario::FourByThree;
    let base = scenario.table(n, SEED);
    let requests = scenario.requests(&base, REQUESTS, SEED ^ 1);
    let cases: [(&'static str, LbPolicy, bool); 6] = [
        ("rr", LbPolicy::RoundRobin, false),
        ("rr-uneven", LbPolicy::RoundRobin, true),
        ("weighted", LbPolicy::Weighted, false),
        ("weighted-uneven", LbPolicy::Weighted, true),
        ("lr", LbPolicy::LeastRequest, false),
        ("lr-uneven", LbPolicy::LeastRequest, true),
    ];
    let mut lbs: Vec<(&'static str, SubsetLb, Vec<Metadata>)> = cases
        .iter()
        .map(|&(name, policy, uneven)| {
            let mut table = base.clone();
            table.subset.child_policy = policy;
            if uneven {
                for (i, host) in table.hosts.iter_mut().enumerate() {
                    host.weight = 1 + (i % 4) as u32;
                }
            }
            let lb = SubsetLb::build(&table).unwrap_or_else(|e| panic!("{e}"));
            let mds = interned(&lb, &requests);
            (name, lb, mds)
        })
        .collect();
    let mut entropy = 0u64;
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        for (name, lb, mds) in &mut lbs {
            sampler.batch(name, REQUESTS, || {
                let mut sum = 0;
                for md in mds.iter() {
                    entropy = entropy.wrapping_add(0x9e37_79b9_7f4a_7c15);
                    sum += pick(lb, md, entropy);
                }
                sum
            });
        }
    }
    let m = |name: &str| sampler.median(name).unwrap_or(f64::NAN);
    let pair = |even: &str, uneven: &str| {
        format!(
            "{:>6} {:>6} {:>5.2}x",
            fmt_ns(m(even)),
            fmt_ns(m(uneven)),
            m(uneven) / m(even)
        )
    };
    println!(
        "4x3     {n:>7}  {}  {}  {}",
        pair("rr", "rr-uneven"),
        pair("weighted", "weighted-uneven"),
        pair("lr", "lr-uneven"),
    );
}

fn update_row(cfg: &Config, scenario: Scenario, n: usize, build_ns: f64) {
    let table = scenario.table(n, SEED);
    let mut lb = SubsetLb::build(&table).unwrap_or_else(|e| panic!("{e}"));
    let mut i = 0usize;
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("remove+add", 2, || {
            i = (i + 7919) % n;
            let host = &table.hosts[i];
            let removed = lb.remove_host(&host.address).is_ok();
            let added = lb.add_host(host.clone()).is_ok();
            usize::from(removed && added)
        });
        sampler.batch("health", 2, || {
            i = (i + 7919) % n;
            let address = &table.hosts[i].address;
            let down = lb.set_healthy(address, false).is_ok();
            let up = lb.set_healthy(address, true).is_ok();
            usize::from(down && up)
        });
    }
    let m = |name| sampler.median(name).unwrap_or(f64::NAN);
    let (churn, health) = (m("remove+add"), m("health"));
    println!(
        "{:<7} {:>7} {:>16} {:>13} {:>16.0}x {:>12} {:>10}",
        scenario.name(),
        n,
        fmt_ns(churn),
        fmt_ns(health),
        build_ns / churn,
        fmt_ns(first_change(&table, cfg.batches)),
        fmt_ns(canary(scenario, &table, cfg.batches)),
    );
}

/// The median time of the first add of a canary host after a build: a copy of a host of the
/// table at a new address, with a value of one routing key no host has. Another host, of
/// values no host has, is added first, untimed, so that this is not the first change after a
/// build (`first_change`).
fn canary(scenario: Scenario, table: &HostTable, rounds: usize) -> f64 {
    let keys = scenario.keys();
    let mut host = table.hosts[table.hosts.len() / 2].clone();
    host.address = "http://canary.internal:8080".into();
    host.labels
        .insert(keys[keys.len() / 2].into(), "canary".into());
    let warm = keys
        .iter()
        .fold(Host::new("http://warm.internal:8080"), |h, k| {
            h.with_label(*k, "warm")
        });
    let times: Vec<f64> = (0..rounds)
        .map(|_| {
            let mut lb = SubsetLb::build(table).unwrap_or_else(|e| panic!("{e}"));
            assert!(lb.add_host(warm.clone()).is_ok(), "the first host joins");
            let start = Instant::now();
            let added = lb.add_host(host.clone()).is_ok();
            let elapsed = start.elapsed().as_nanos() as f64;
            assert!(added, "the canary joins");
            elapsed
        })
        .collect();
    batch::median(&times).unwrap_or(f64::NAN)
}

/// Median ns of the first remove + add after a build: the first change grows tables a build
/// sized exactly.
fn first_change(table: &HostTable, rounds: usize) -> f64 {
    let host = &table.hosts[table.hosts.len() / 2];
    let times: Vec<f64> = (0..rounds)
        .map(|_| {
            let mut lb = SubsetLb::build(table).unwrap_or_else(|e| panic!("{e}"));
            let start = Instant::now();
            let removed = lb.remove_host(&host.address).is_ok();
            let added = lb.add_host(host.clone()).is_ok();
            let elapsed = start.elapsed().as_nanos() as f64;
            assert!(removed && added, "the host comes back");
            elapsed
        })
        .collect();
    batch::median(&times).unwrap_or(f64::NAN)
}

/// One table change of `changes` hosts: the delta's size, its decode + apply time (the mean of
/// there and back), the in-place build of the new table, and their ratio.
fn change_row(cfg: &Config, scenario: Scenario, n: usize, changes: usize) {
    let table = scenario.table(n, SEED);
    let new = changed(&table, changes);
    let encode = |a, b| {
        let delta = HostDelta::between(a, b).unwrap_or_else(|| panic!("same configuration"));
        delta.encode().unwrap_or_else(|e| panic!("{e}"))
    };
    let (there, back) = (encode(&table, &new), encode(&new, &table));
    let whole = new.encode().unwrap_or_else(|e| panic!("{e}"));
    let mut lb = SubsetLb::build(&table).unwrap_or_else(|e| panic!("{e}"));
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("delta", 2, || {
            let mut added = 0;
            for bytes in [&there, &back] {
                let delta = HostDelta::decode(bytes).unwrap_or_else(|e| panic!("{e}"));
                // A refused delta would leave every later one refused, and timed.
                added += lb.apply(&delta).unwrap_or_else(|e| panic!("{e}")).added;
            }
            added
        });
        sampler.batch("rebuild", 1, || SubsetLb::decode(&whole).map(|lb| lb.len()));
    }
    let (delta, rebuild) = (median(&sampler, "delta"), median(&sampler, "rebuild"));
    println!(
        "{:<7} {:>7} {:>7} {:>9.1} {:>10} {:>10} {:>9.0}x",
        scenario.name(),
        n,
        changes,
        there.len() as f64 / 1024.0,
        format!("{:.1}", delta / 1e3),
        fmt_ms(rebuild),
        rebuild / delta,
    );
}

fn main() -> ExitCode {
    let (mut peer_rounds, mut max_hosts) = (3usize, SIZES[1]);
    let extra = |flag: &str, n: u64| {
        let target = match flag {
            "--peer-rounds" => &mut peer_rounds,
            "--max-hosts" => &mut max_hosts,
            _ => return false,
        };
        *target = n as usize;
        true
    };
    let usage = " [--peer-rounds N] [--max-hosts N]";
    let cfg = &match Config::new(15, 20, 200).from_args("subset_wasm", usage, extra) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let sizes: Vec<usize> = SIZES.into_iter().filter(|&n| n <= max_hosts).collect();
    println!(
        "edgewise subset bench, {TARGET}: median of {} batches of ~{} ms (full scan: median of {} \
         builds, at least {PEER_ROUNDS_8K} at 8k, spread over the batches); build = build + \
         drop; retained = live heap bytes of the built SubsetLb (index = its index alone, \
         without host records)",
        cfg.batches,
        cfg.batch.as_millis(),
        peer_rounds,
    );
    println!(
        "\nbuild ms: build = validate + index; prevalid = build_validated, the index of a table \
         validated before (MOSN's build starts from parsed hosts: the like-for-like figure); \
         index = build - validate, the work beyond the walk of the hosts both pay (a difference \
         of two medians: noisy where the walk dominates, at 100k); speedup = full-scan / build, \
         / prevalid"
    );
    println!(
        "scenario  hosts subsets     build  validate     index  prevalid    full-scan   x build \
         x preval retainMiB  indexMiB"
    );
    for scenario in Scenario::ALL {
        let mut full_scan_8k = f64::NAN;
        for &n in &sizes {
            let peer = build_row(cfg, scenario, n, peer_rounds, full_scan_8k);
            if n == SIZES[0] {
                full_scan_8k = peer;
            }
        }
    }
    println!("  (* extrapolated from 8k hosts: n^2)");
    println!(
        "\nfrom bytes ms: GET /v1/hosts body -> index; decode+build = HostTable::decode + \
         build_validated, in-place = SubsetLb::decode"
    );
    println!("scenario  hosts   bodyKiB  decode+build ms  in-place  speedup");
    for scenario in Scenario::ALL {
        for &n in &sizes {
            bytes_row(cfg, scenario, n);
        }
    }
    println!(
        "\nlookup ns per request: raw-strings = SubsetLb::set_all over the (key, value) header slices, \
         raw-values = SubsetLb::set_values, the keys resolved once (RequestKeys)"
    );
    println!("lookup      hosts keys pre-interned  raw-strings  raw-values  mosn-trie  mosn/raw");
    for scenario in Scenario::ALL {
        for &n in &sizes {
            lookup_row(cfg, scenario, n);
        }
    }
    println!(
        "\nchild policies, pre-interned lookups, ns: even = every host of weight 1, uneven = \
         weights 1 to 4"
    );
    println!(
        "scenario  hosts  round robin even/uneven  weighted even/uneven    least request even/uneven"
    );
    for &n in &sizes {
        policy_row(cfg, n);
    }
    println!(
        "\nupdate      hosts remove/add ns/op  health ns/op  full rebuild / op  first ns (the \
         first remove/add after a build)  canary ns (a host with a new value \
         of a routing key, a canary release's new version, added after that first change: it \
         joins some of the subsets sharing a set, not all)"
    );
    for scenario in Scenario::ALL {
        let n = *sizes.last().unwrap_or(&SIZES[0]);
        let table = scenario.table(n, SEED);
        let mut sampler = Sampler::new(cfg);
        sampler.batches("build", 1, || SubsetLb::build(&table).map(|lb| lb.len()));
        let build_ns = sampler.median("build").unwrap_or(f64::NAN);
        update_row(cfg, scenario, n, build_ns);
    }
    println!(
        "\ntable change: delta = HostDelta::decode + SubsetLb::apply of the daemon's answer; \
         rebuild = SubsetLb::decode of the whole new table"
    );
    println!("scenario  hosts changes deltaKiB   delta us  rebuild ms  speedup");
    for scenario in Scenario::ALL {
        for &n in &sizes {
            for changes in [4, n / 100, n / 20] {
                change_row(cfg, scenario, n, changes);
            }
        }
    }
    // Node 20 may crash tearing down a WASI instance this large: exit through `proc_exit` at
    // once, which benches/js/run-wasi.mjs records before Node can fail.
    let _ = std::io::Write::flush(&mut std::io::stdout());
    std::process::exit(0)
}
