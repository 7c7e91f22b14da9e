//! Internal-header detection, edgewise's `HeaderSet` beside its peers (std SipHash and Fx hash
//! sets, trie-hard, radix_trie, and the original remove-each-internal-name loop) on the
//! workloads of `edgewise_benches::workload`:
//!
//! - `headers/w1/lookup/hit{1,5,10,100}`: trie-hard's own workload, per lookup.
//! - `headers/w2/request`, `headers/w3/request`: the strip decision per request, lowercase
//!   (HTTP/2) and Title-Case (HTTP/1.1).
//! - `headers/build`: building each structure from the ~100 default internal names.
//!
//! `scripts/bench-headers-wasm.sh` runs the same loops compiled to Wasm under Node.

use std::hint::black_box;
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};
use edgewise_benches::peers::{
    self, Case, Edgewise, FxHashSet, Lookup, Peers, RadixTrieSet, StdHashSet, TrieHardSet, Visit,
};
use edgewise_benches::workload::{self, Header};

struct PerLookup<'g, 'c, 'n> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    names: &'n [Vec<u8>],
}

impl Visit for PerLookup<'_, '_, '_> {
    fn visit<L: Lookup>(&mut self, peer: &L) {
        let names = self.names;
        self.group.bench_function(peer.name(), |b| {
            b.iter(|| peers::count_hits(peer, black_box(names)))
        });
    }
}

struct PerRequest<'g, 'c, 'n> {
    group: &'g mut BenchmarkGroup<'c, WallTime>,
    requests: &'n [Vec<Header>],
}

impl Visit for PerRequest<'_, '_, '_> {
    fn visit<L: Lookup>(&mut self, peer: &L) {
        let requests = self.requests;
        self.group.bench_function(peer.name(), |b| {
            b.iter(|| {
                black_box(requests)
                    .iter()
                    .map(|request| peers::count_internal(peer, request))
                    .sum::<usize>()
            })
        });
    }
}

fn w1(c: &mut Criterion) {
    let set = workload::trie_hard_reversed_names();
    let peers = Peers::new(&set, &set);
    for percent in workload::W1_HIT_PERCENTS {
        let stream = workload::w1(&set, percent, workload::W1_LOOKUPS);
        peers::assert_lookups_agree(&peers, Case::Lower, &stream.lookups, stream.hits);
        let mut group = c.benchmark_group(format!("headers/w1/lookup/hit{percent}"));
        group.throughput(Throughput::Elements(stream.lookups.len() as u64));
        let mut visit = PerLookup {
            group: &mut group,
            names: &stream.lookups,
        };
        peers.visit_sets(Case::Lower, &mut visit);
        visit.visit(&peers.original);
        group.finish();
    }
}

fn requests(c: &mut Criterion, id: &str, case: Case) {
    let internal = workload::internal_set();
    let peers = Peers::new(&internal.rules, &internal.concrete);
    let pool = workload::miss_pool(|name| peers.edgewise.contains(name));
    let lower = workload::w2(&internal, &pool, workload::REQUESTS);
    let requests = match case {
        Case::Lower => lower,
        Case::Any => workload::w3(&lower),
    };
    peers::assert_requests_agree(&peers, case, &requests.requests, requests.internal);

    let mut group = c.benchmark_group(id);
    group.throughput(Throughput::Elements(requests.requests.len() as u64));
    peers.visit_sets(
        case,
        &mut PerRequest {
            group: &mut group,
            requests: &requests.requests,
        },
    );
    let mut scratch = Vec::new();
    group.bench_function(peers.original.name(), |b| {
        b.iter(|| {
            black_box(&requests.requests)
                .iter()
                .map(|request| peers::original_loop(&internal.concrete, request, &mut scratch))
                .sum::<usize>()
        })
    });
    group.finish();
}

fn w2(c: &mut Criterion) {
    requests(c, "headers/w2/request", Case::Lower);
}

fn w3(c: &mut Criterion) {
    requests(c, "headers/w3/request", Case::Any);
}

fn build(c: &mut Criterion) {
    let internal = workload::internal_set();
    let rules = &internal.rules;
    let concrete = &internal.concrete;
    let mut group = c.benchmark_group("headers/build");
    group.bench_function("edgewise", |b| b.iter(|| Edgewise::new(black_box(rules))));
    group.bench_function("std-hashset", |b| {
        b.iter(|| StdHashSet::new(black_box(concrete)))
    });
    group.bench_function("fx-hashset", |b| {
        b.iter(|| FxHashSet::new(black_box(concrete)))
    });
    group.bench_function("trie-hard", |b| {
        b.iter(|| TrieHardSet::new(black_box(concrete)))
    });
    group.bench_function("radix-trie", |b| {
        b.iter(|| RadixTrieSet::new(black_box(concrete)))
    });
    group.finish();
}

// Short windows keep the whole suite (~40 benches) to a few minutes on a 2-core machine; the
// loops are microseconds long, so even 1.5 s gives thousands of iterations per sample set.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = w1, w2, w3, build
}
criterion_main!(benches);
