//! Request workspace scrubbing (`edgewise::Workspace`) on the workloads of
//! `edgewise_benches::workspace`: per request (allocate `used` bytes of 512 KiB, touch each
//! cache line, reset), in each scrub mode.
//!
//! - `workspace/single/{used}`: one workspace, cache-resident; `touch` is the touch alone on a
//!   plain buffer (subtract it for the reset), `fresh-vec` a zeroed 512 KiB `Vec` per request.
//! - `workspace/pool/{used}`: a pool of workspaces twice the last-level cache, cycled: every
//!   request finds its workspace evicted, so resets pay in memory traffic.
//! - `workspace/zero-check`: the verification loop over 512 KiB beside naive loops.
//! - `workspace/verify/20KiB`: a watermark request verified at every reset, at 1 in 20,000
//!   resets (the default), never.
//!
//! `scripts/bench-workspace.sh` runs the same loops compiled to Wasm under Node (and natively),
//! printing the derived tables (reset = request minus touch, ratios).

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use edgewise::ScrubMode;
use edgewise_benches::workspace::{
    self as bench, BufferPool, CONFIGS, MIX, Pool, SIZE, TARGET_USED, USED, peers,
};

/// Row id and the request sizes one iteration runs (one request, or the whole mix).
fn rows() -> Vec<(String, Vec<usize>)> {
    let mut rows: Vec<(String, Vec<usize>)> = USED
        .iter()
        .map(|&used| (format!("{}KiB", used >> 10), vec![used]))
        .collect();
    rows.push(("mix".to_owned(), MIX.to_vec()));
    rows
}

fn single(c: &mut Criterion) {
    for (id, sizes) in rows() {
        let mut group = c.benchmark_group(format!("workspace/single/{id}"));
        let mut plain = vec![0u8; SIZE];
        group.bench_function("touch", |b| {
            b.iter(|| {
                sizes
                    .iter()
                    .map(|&u| bench::touch_only(&mut plain, u))
                    .sum::<usize>()
            })
        });
        for &(name, mode, one_in) in &CONFIGS {
            let mut ws = bench::workspace(mode, one_in, 0);
            group.bench_function(name, |b| {
                b.iter(|| {
                    sizes
                        .iter()
                        .map(|&u| bench::request(&mut ws, u))
                        .sum::<usize>()
                })
            });
        }
        group.bench_function("fresh-vec", |b| {
            b.iter(|| {
                sizes
                    .iter()
                    .map(|&u| bench::fresh_vec_request(u))
                    .sum::<usize>()
            })
        });
        group.finish();
    }
}

fn pool(c: &mut Criterion) {
    let count = bench::pool_len(bench::llc_bytes().map_or(256 << 20, |llc| 2 * llc));
    let mut pool = Pool::new(count, ScrubMode::Full, 0);
    let mut plain = BufferPool::new(count);
    for (id, sizes) in rows() {
        let mut group = c.benchmark_group(format!("workspace/pool/{id}"));
        group.bench_function("touch", |b| {
            b.iter(|| {
                sizes
                    .iter()
                    .map(|&u| bench::touch_only(plain.next_buffer(), u))
                    .sum::<usize>()
            })
        });
        for &(name, mode, one_in) in &CONFIGS {
            pool.set(mode, one_in);
            group.bench_function(name, |b| {
                b.iter(|| {
                    sizes
                        .iter()
                        .map(|&u| bench::request(pool.next_workspace(), u))
                        .sum::<usize>()
                })
            });
        }
        group.finish();
    }
}

fn zero_check(c: &mut Criterion) {
    let ws = bench::workspace(ScrubMode::Watermark, 0, 0);
    let plain = vec![0u8; SIZE];
    let mut group = c.benchmark_group("workspace/zero-check/512KiB");
    group.bench_function("edgewise", |b| b.iter(|| black_box(&ws).is_scrubbed()));
    group.bench_function("byte-or-fold", |b| {
        b.iter(|| peers::byte_fold(black_box(&plain)))
    });
    group.bench_function("byte-loop", |b| {
        b.iter(|| peers::byte_loop(black_box(&plain)))
    });
    group.bench_function("iter-all", |b| {
        b.iter(|| peers::iter_all(black_box(&plain)))
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let mut group = c.benchmark_group(format!("workspace/verify/{}KiB", TARGET_USED >> 10));
    for (name, one_in) in [
        ("every", 1),
        ("one-in-20000", edgewise::DEFAULT_VERIFY_ONE_IN),
        ("never", 0),
    ] {
        let mut ws = bench::workspace(ScrubMode::Watermark, one_in, 0);
        group.bench_function(name, |b| b.iter(|| bench::request(&mut ws, TARGET_USED)));
    }
    group.finish();
}

// Short windows keep the suite (~60 benches) to a few minutes on a 2-core machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_millis(1500))
        .sample_size(30)
}

criterion_group! {
    name = benches;
    config = config();
    targets = single, pool, zero_check, verify
}
criterion_main!(benches);
