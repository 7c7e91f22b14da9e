//! Subset load balancing (`edgewise::SubsetLb`) on the scenarios of
//! `edgewise_benches::subset`, beside MOSN's full-scan build and lookup trie.
//!
//! - `subset/build/{scenario}/{hosts}`: `SubsetLb::build` (validation included) and
//!   `HostTable::validate` alone; from the encoded table (the worker's input),
//!   `decode-then-build` (`HostTable::decode` + `build_validated`) and `decode-in-place`
//!   (`SubsetLb::decode`); `full-scan` (MOSN's pre-index build) at 8k hosts only: at
//!   100k one build takes seconds (`subset_wasm` times it a few times instead).
//! - `subset/lookup/{scenario}`: one request at 100k hosts, metadata pre-interned, set from
//!   the request's header slices (`raw-strings`), or from their values with the keys resolved
//!   once (`raw-values`), and MOSN's trie of hash maps.
//! - `subset/update/{scenario}`: at 100k hosts, one host removed and added back (two updates
//!   per iteration), its health toggled (two updates); a table change of 4 and of 1,000 hosts
//!   as a delta from the daemon, there and back (two deltas decoded and applied), beside the
//!   in-place build of the changed table that a delta saves.
//!
//! Short runs are enough: `cargo bench -p edgewise-benches --bench subset -- --warm-up-time 1
//! --measurement-time 2`. `scripts/bench-subset.sh` prints the same as tables with ratios,
//! natively and as wasm32 under Node.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use edgewise::{HostDelta, HostTable, SubsetLb};
use edgewise_benches::subset::{FullScan, Parsed, SIZES, Scenario, changed, peer_hosts, sorted};

const SEED: u64 = 0x5eed;
const LOOKUP_HOSTS: usize = 100_000;

fn build(c: &mut Criterion) {
    for scenario in Scenario::ALL {
        for n in SIZES {
            let mut group = c.benchmark_group(format!("subset/build/{}/{n}", scenario.name()));
            group.sample_size(10);
            let table = scenario.table(n, SEED);
            group.bench_function("edgewise", |b| {
                b.iter(|| SubsetLb::build(&table).map(|lb| lb.len()))
            });
            group.bench_function("validate", |b| b.iter(|| table.validate().is_ok()));
            let bytes = table.encode().expect("valid table");
            group.bench_function("decode-then-build", |b| {
                b.iter(|| {
                    let table = HostTable::decode(&bytes).expect("valid table");
                    SubsetLb::build_validated(&table).map(|lb| lb.len())
                })
            });
            group.bench_function("decode-in-place", |b| {
                b.iter(|| SubsetLb::decode(&bytes).map(|lb| lb.len()))
            });
            if n == SIZES[0] {
                let hosts = peer_hosts(&table);
                let selectors: Vec<_> = scenario.selectors().into_iter().map(sorted).collect();
                group.bench_function("full-scan", |b| {
                    b.iter(|| FullScan::build(&hosts, &selectors).subsets())
                });
            }
            group.finish();
        }
    }
}

fn lookup(c: &mut Criterion) {
    for scenario in Scenario::ALL {
        let mut group = c.benchmark_group(format!("subset/lookup/{}", scenario.name()));
        let table = scenario.table(LOOKUP_HOSTS, SEED);
        let mut lb = SubsetLb::build(&table).expect("valid table");
        let owned = scenario.requests(&table, 1024, SEED ^ 1);
        let mds: Vec<_> = owned
            .iter()
            .map(|r| {
                let mut md = lb.metadata();
                r.iter().for_each(|(k, v)| lb.set(&mut md, k, v));
                md
            })
            .collect();
        let parsed = Parsed::new(&owned);
        let requests = parsed.requests();
        let keyed = scenario.keyed(&requests);
        let keys = lb.request_keys(scenario.keys().iter().copied());
        let mut i = 0usize;
        group.bench_function("pre-interned", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let s = lb.select(&mds[i % mds.len()], i as u64);
                s.inspect(|s| lb.release(s.host)).is_some()
            })
        });
        group.bench_function("raw-strings", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut md = lb.metadata();
                lb.set_all(&mut md, requests[i % requests.len()].iter().copied());
                let s = lb.select(&md, i as u64);
                s.inspect(|s| lb.release(s.host)).is_some()
            })
        });
        group.bench_function("raw-values", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                let mut md = lb.metadata();
                lb.set_values(&mut md, &keys, keyed[i % keyed.len()].iter().copied());
                let s = lb.select(&md, i as u64);
                s.inspect(|s| lb.release(s.host)).is_some()
            })
        });
        let selectors: Vec<_> = scenario.selectors().into_iter().map(sorted).collect();
        let mut peer = FullScan::grouped(&peer_hosts(&table), &selectors);
        group.bench_function("mosn-trie", |b| {
            b.iter(|| {
                i = i.wrapping_add(1);
                peer.choose(&requests[i % requests.len()])
            })
        });
        group.finish();
    }
}

fn update(c: &mut Criterion) {
    for scenario in Scenario::ALL {
        let mut group = c.benchmark_group(format!("subset/update/{}", scenario.name()));
        let table = scenario.table(LOOKUP_HOSTS, SEED);
        let mut lb = SubsetLb::build(&table).expect("valid table");
        let mut i = 0usize;
        group.bench_function("remove+add", |b| {
            b.iter(|| {
                i = (i + 7919) % table.hosts.len();
                let host = &table.hosts[i];
                let removed = lb.remove_host(&host.address).is_ok();
                black_box(removed && lb.add_host(host.clone()).is_ok())
            })
        });
        group.bench_function("health", |b| {
            b.iter(|| {
                i = (i + 7919) % table.hosts.len();
                let address = &table.hosts[i].address;
                let down = lb.set_healthy(address, false).is_ok();
                black_box(down && lb.set_healthy(address, true).is_ok())
            })
        });
        // A table change as the worker gets it from the daemon: the delta there and back
        // (decoded and applied: two table changes per iteration), beside the in-place build
        // of the new table it replaces.
        let mut lb = SubsetLb::build(&table).expect("valid table");
        for changes in [4, LOOKUP_HOSTS / 100] {
            let new = changed(&table, changes);
            let encode = |a, b| HostDelta::between(a, b).and_then(|d| d.encode().ok());
            let there = encode(&table, &new).expect("same configuration");
            let back = encode(&new, &table).expect("same configuration");
            group.bench_function(format!("delta-{changes}-there-and-back"), |b| {
                b.iter(|| {
                    for bytes in [&there, &back] {
                        let delta = HostDelta::decode(bytes).expect("valid delta");
                        // A refused delta would leave every later one refused, and timed.
                        black_box(lb.apply(&delta).expect("applies"));
                    }
                })
            });
        }
        let bytes = changed(&table, 4).encode().expect("valid table");
        group.bench_function("rebuild-in-place", |b| {
            b.iter(|| SubsetLb::decode(&bytes).map(|lb| lb.len()))
        });
        group.finish();
    }
}

criterion_group!(benches, build, lookup, update);
criterion_main!(benches);
