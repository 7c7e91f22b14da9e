//! The header benchmarks as a plain binary, so they run where criterion cannot: compiled to
//! `wasm32-wasip1` under Node (V8, the engine Workers run) by `scripts/bench-headers-wasm.sh`.
//! Built natively it prints the same table, for a side-by-side read.
//!
//!   headers_wasm [--batches N] [--batch-ms MS]
//!
//! Each cell is the median over batches (peers interleaved) of the time per operation (lookup,
//! request or build); the ratio beside a peer is edgewise's time divided by the peer's (below 1:
//! edgewise faster).

use std::hint::black_box;
use std::process::ExitCode;

use edgewise_benches::batch::{Config, Sampler, TARGET, fmt_ns};
use edgewise_benches::peers::{
    self, Case, Edgewise, FxHashSet, Lookup, Peers, RadixTrieSet, StdHashSet, TrieHardSet, Visit,
};
use edgewise_benches::workload::{self, Header};

const PEERS: [&str; 6] = [
    "edgewise",
    "std-hashset",
    "fx-hashset",
    "trie-hard",
    "radix-trie",
    "original-loop",
];

struct Row {
    workload: String,
    op: &'static str,
    cells: Vec<(&'static str, f64)>,
}

struct TimeLookups<'s, 'c> {
    sampler: &'s mut Sampler<'c>,
    names: &'s [Vec<u8>],
}

impl Visit for TimeLookups<'_, '_> {
    fn visit<L: Lookup>(&mut self, peer: &L) {
        let names = self.names;
        self.sampler.batch(peer.name(), names.len(), || {
            peers::count_hits(peer, black_box(names))
        });
    }
}

struct TimeRequests<'s, 'c> {
    sampler: &'s mut Sampler<'c>,
    requests: &'s [Vec<Header>],
}

impl Visit for TimeRequests<'_, '_> {
    fn visit<L: Lookup>(&mut self, peer: &L) {
        let requests = self.requests;
        self.sampler.batch(peer.name(), requests.len(), || {
            black_box(requests)
                .iter()
                .map(|request| peers::count_internal(peer, request))
                .sum::<usize>()
        });
    }
}

fn w1(cfg: &Config, rows: &mut Vec<Row>) -> String {
    let set = workload::trie_hard_reversed_names();
    let peers = Peers::new(&set, &set);
    for percent in workload::W1_HIT_PERCENTS {
        let stream = workload::w1(&set, percent, workload::W1_LOOKUPS);
        peers::assert_lookups_agree(&peers, Case::Lower, &stream.lookups, stream.hits);
        let mut sampler = Sampler::new(cfg);
        for _ in 0..cfg.batches {
            let mut timer = TimeLookups {
                sampler: &mut sampler,
                names: &stream.lookups,
            };
            peers.visit_sets(Case::Lower, &mut timer);
            timer.visit(&peers.original);
        }
        rows.push(Row {
            workload: format!("w1/lookup/hit{percent}"),
            op: "lookup",
            cells: sampler.medians(),
        });
    }
    format!(
        "w1: {} reversed trie-hard names, {} lookups per stream",
        set.len(),
        workload::W1_LOOKUPS
    )
}

fn requests(cfg: &Config, rows: &mut Vec<Row>) -> String {
    let internal = workload::internal_set();
    let peers = Peers::new(&internal.rules, &internal.concrete);
    let pool = workload::miss_pool(|name| peers.edgewise.contains(name));
    let lower = workload::w2(&internal, &pool, workload::REQUESTS);
    let title = workload::w3(&lower);
    for (id, case, requests) in [
        ("w2/request", Case::Lower, &lower),
        ("w3/request", Case::Any, &title),
    ] {
        peers::assert_requests_agree(&peers, case, &requests.requests, requests.internal);
        let mut sampler = Sampler::new(cfg);
        let mut scratch = Vec::new();
        for _ in 0..cfg.batches {
            peers.visit_sets(
                case,
                &mut TimeRequests {
                    sampler: &mut sampler,
                    requests: &requests.requests,
                },
            );
            sampler.batch(peers.original.name(), requests.requests.len(), || {
                black_box(&requests.requests)
                    .iter()
                    .map(|request| peers::original_loop(&internal.concrete, request, &mut scratch))
                    .sum::<usize>()
            });
        }
        rows.push(Row {
            workload: id.to_owned(),
            op: "request",
            cells: sampler.medians(),
        });
    }
    let headers = lower.headers();
    format!(
        "w2/w3: {} internal rules ({} concrete names for peers), {} requests, {:.1} headers and \
         {:.2} internal per request ({:.1}% internal), {} distinct non-internal names",
        internal.rules.len(),
        internal.concrete.len(),
        lower.requests.len(),
        headers as f64 / lower.requests.len() as f64,
        lower.internal as f64 / lower.requests.len() as f64,
        100.0 * lower.internal as f64 / headers as f64,
        pool.len()
    )
}

fn build(cfg: &Config, rows: &mut Vec<Row>) {
    let internal = workload::internal_set();
    let rules = &internal.rules;
    let concrete = &internal.concrete;
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("edgewise", 1, || Edgewise::new(black_box(rules)));
        sampler.batch("std-hashset", 1, || StdHashSet::new(black_box(concrete)));
        sampler.batch("fx-hashset", 1, || FxHashSet::new(black_box(concrete)));
        sampler.batch("trie-hard", 1, || TrieHardSet::new(black_box(concrete)));
        sampler.batch("radix-trie", 1, || RadixTrieSet::new(black_box(concrete)));
    }
    rows.push(Row {
        workload: "build".to_owned(),
        op: "build",
        cells: sampler.medians(),
    });
}

fn print_table(rows: &[Row]) {
    print!("{:<18} {:<8}", "workload", "ns per");
    for peer in PEERS {
        print!(" {peer:>20}");
    }
    println!();
    for row in rows {
        print!("{:<18} {:<8}", row.workload, row.op);
        let base = row
            .cells
            .iter()
            .find(|(name, _)| *name == "edgewise")
            .map(|&(_, ns)| ns);
        for peer in PEERS {
            let cell = match (row.cells.iter().find(|(name, _)| *name == peer), base) {
                (Some(&(_, ns)), Some(base)) if peer != "edgewise" => {
                    format!("{} ({:.2}x)", fmt_ns(ns), base / ns)
                }
                (Some(&(_, ns)), _) => fmt_ns(ns),
                (None, _) => "-".to_owned(),
            };
            print!(" {cell:>20}");
        }
        println!();
    }
}

fn main() -> ExitCode {
    let cfg = match Config::new(75, 2, 100).from_args("headers_wasm", "", |_, _| false) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let mut rows = Vec::new();
    let w1_info = w1(&cfg, &mut rows);
    let w2_info = requests(&cfg, &mut rows);
    build(&cfg, &mut rows);
    println!(
        "edgewise headers bench, {TARGET}: median of {} batches of ~{} ms; ns per op, \
         (x) = edgewise / peer",
        cfg.batches,
        cfg.batch.as_millis()
    );
    println!("{w1_info}\n{w2_info}");
    print_table(&rows);
    ExitCode::SUCCESS
}
