//! The workspace benchmarks as a plain binary, so they run where criterion cannot: compiled to
//! `wasm32-wasip1` under Node (V8, the engine Workers run) by `scripts/bench-workspace.sh`.
//! Built natively it prints the same tables, for a side-by-side read.
//!
//!   workspace_wasm [--batches N] [--batch-ms MS] [--pool-mib MIB]
//!
//! Every cell is a median over batches, configurations interleaved batch by batch. A request
//! allocates `used` bytes of a 512 KiB workspace, writes one byte per cache line, and resets;
//! cells are ns per request. "touch" is the same writes to a plain buffer, so request minus
//! touch is the reset ("F/W reset"). `fresh-vec` is a zeroed 512 KiB `Vec` per request instead.
//! `--pool-mib` sizes the pool of workspaces cycled round-robin in the second table (natively:
//! twice the last-level cache by default); there each configuration is timed in its steady
//! state (see [`pool`]).

use std::process::ExitCode;

use edgewise::ScrubMode;
use edgewise_benches::batch::{Config, Sampler, TARGET, fmt_ns};
use edgewise_benches::workspace::{
    self as bench, BufferPool, CONFIGS, MIX, Pool, SIZE, TARGET_USED, USED, peers,
};

/// Requests per timed call: enough to amortize the call, and a whole cycle of the [`MIX`].
const PER_CALL: usize = MIX.len();

/// One timed call: `request` (or a touch) at each size of `sizes` in turn; the sum of what they
/// return, to keep the work observable.
fn each(sizes: &[usize], mut request: impl FnMut(usize) -> usize) -> usize {
    sizes.iter().map(|&used| request(used)).sum()
}

/// Row label and the request sizes one call runs.
fn rows() -> Vec<(String, [usize; PER_CALL])> {
    let mut rows: Vec<(String, [usize; PER_CALL])> = USED
        .iter()
        .map(|&used| (format!("{} KiB", used >> 10), [used; PER_CALL]))
        .collect();
    rows.push(("mix 27 KiB".to_owned(), MIX));
    rows
}

struct Row {
    label: String,
    touch: f64,
    /// Request ns per configuration of [`CONFIGS`].
    requests: Vec<f64>,
    fresh: Option<f64>,
    zeroed_full: f64,
    zeroed_watermark: f64,
}

fn finish_row(label: String, sampler: &Sampler<'_>, sizes: &[usize], fresh: bool) -> Row {
    let median = |name| sampler.median(name).unwrap_or(f64::NAN);
    let used = (sizes.iter().all(|&s| s == sizes[0])).then_some(sizes[0]);
    Row {
        label,
        touch: median("touch"),
        requests: CONFIGS.iter().map(|(name, _, _)| median(name)).collect(),
        fresh: fresh.then(|| median("fresh-vec")),
        zeroed_full: bench::bytes_zeroed_per_reset(ScrubMode::Full, 0, used),
        zeroed_watermark: bench::bytes_zeroed_per_reset(ScrubMode::Watermark, 0, used),
    }
}

/// `a / b` of the resets alone (requests minus the touch), when the watermark request is
/// clearly above the touch: in the pool the plain buffers' touch is no exact baseline (its
/// cache behaviour differs), so there only the request ratio is shown.
fn reset_ratio(full: f64, watermark: f64, touch: f64) -> Option<f64> {
    (watermark - touch > 0.2 * watermark).then(|| (full - touch) / (watermark - touch))
}

fn single(cfg: &Config) -> Vec<Row> {
    let mut out = Vec::new();
    for (label, sizes) in rows() {
        let mut workspaces: Vec<_> = CONFIGS
            .iter()
            .map(|&(name, mode, one_in)| (name, bench::workspace(mode, one_in, 0)))
            .collect();
        let mut plain = vec![0u8; SIZE];
        let mut sampler = Sampler::new(cfg);
        for _ in 0..cfg.batches {
            sampler.batch("touch", PER_CALL, || {
                each(&sizes, |u| bench::touch_only(&mut plain, u))
            });
            for (name, ws) in &mut workspaces {
                sampler.batch(name, PER_CALL, || each(&sizes, |u| bench::request(ws, u)));
            }
            sampler.batch("fresh-vec", PER_CALL, || {
                each(&sizes, bench::fresh_vec_request)
            });
        }
        out.push(finish_row(label, &sampler, &sizes, true));
    }
    out
}

/// Blocks of the pool table: the touch (peer 0, on other memory), the watermark
/// configurations, the full clears; see [`pool`].
const BLOCKS: [&[usize]; 3] = [&[0], &[3, 4], &[1, 2]];

/// In the pool, interleaving unlike peers times each in the wake of the one before: a full
/// clear leaves the last-level cache full of dirty lines, the touch of the plain buffers
/// another working set, and the next batch pays for their write-back (measured at 20 KiB: +45%
/// for a watermark batch right after a full clear, +25-40% right after the touch, despite an
/// untimed pass over the pool). So only peers with the same footprint are interleaved, and
/// each batch is preceded by an untimed pass over the pool in its own configuration: every
/// figure is that configuration's steady state, as on a host running only it.
fn pool(cfg: &Config, pool: &mut Pool) -> Vec<Row> {
    let mut plain = BufferPool::new(pool.len());
    let mut out = Vec::new();
    for (label, sizes) in rows() {
        let mut sampler = Sampler::new(cfg);
        for block in BLOCKS {
            for round in 0..cfg.batches {
                for turn in 0..block.len() {
                    match block[(round + turn) % block.len()] {
                        0 => {
                            plain.settle(&sizes);
                            sampler.batch("touch", PER_CALL, || {
                                each(&sizes, |u| bench::touch_only(plain.next_buffer(), u))
                            });
                        }
                        peer => {
                            let (name, mode, one_in) = CONFIGS[peer - 1];
                            pool.set(mode, one_in);
                            pool.settle(&sizes);
                            sampler.batch(name, PER_CALL, || {
                                each(&sizes, |u| bench::request(pool.next_workspace(), u))
                            });
                        }
                    }
                }
            }
        }
        out.push(finish_row(label, &sampler, &sizes, false));
    }
    out
}

fn fmt_bytes(b: f64) -> String {
    format!("{:.1}K", b / 1024.0)
}

fn print_rows(rows: &[Row]) {
    print!("{:<11} {:>7}", "used", "touch");
    for (name, _, _) in CONFIGS {
        print!(" {name:>18}");
    }
    let fresh = rows.iter().any(|r| r.fresh.is_some());
    if fresh {
        print!(" {:>10}", "fresh-vec");
    }
    println!(
        " {:>9} {:>9} {:>8} {:>9}",
        "zeroed/F", "zeroed/W", "F/W req", "F/W reset"
    );
    for row in rows {
        print!("{:<11} {:>7}", row.label, fmt_ns(row.touch));
        for ns in &row.requests {
            print!(" {:>18}", fmt_ns(*ns));
        }
        if let Some(ns) = row.fresh {
            print!(" {:>10}", fmt_ns(ns));
        }
        let (full, watermark) = (row.requests[0], row.requests[2]);
        let reset =
            reset_ratio(full, watermark, row.touch).map_or("-".to_owned(), |r| format!("{r:.1}x"));
        println!(
            " {:>9} {:>9} {:>7.1}x {:>9}",
            fmt_bytes(row.zeroed_full),
            fmt_bytes(row.zeroed_watermark),
            full / watermark,
            reset
        );
    }
}

/// Zero checks of a whole (zero) workspace: the verification loop against its peers.
fn zero_check(cfg: &Config) {
    let ws = bench::workspace(ScrubMode::Watermark, 0, 0);
    let plain = vec![0u8; SIZE];
    let mut sampler = Sampler::new(cfg);
    let names = ["edgewise", "byte-or-fold", "byte-loop", "iter-all"];
    for _ in 0..cfg.batches {
        sampler.batch(names[0], 1, || ws.is_scrubbed());
        sampler.batch(names[1], 1, || peers::byte_fold(&plain));
        sampler.batch(names[2], 1, || peers::byte_loop(&plain));
        sampler.batch(names[3], 1, || peers::iter_all(&plain));
    }
    println!("\nzero check of 512 KiB (cache-resident), ns per check (GB/s, x = edgewise / peer):");
    let base = sampler.median(names[0]).unwrap_or(f64::NAN);
    for name in names {
        let ns = sampler.median(name).unwrap_or(f64::NAN);
        println!(
            "  {name:<14} {:>9} ns {:>6.1} GB/s {:>7.2}x",
            fmt_ns(ns),
            SIZE as f64 / ns,
            base / ns
        );
    }
}

/// What one verification costs, and what sampling it at 1 in 20,000 resets adds to one: a
/// watermark request at 20 KiB verified at every reset against one never verified, cycling one
/// workspace and then the pool.
fn verification(cfg: &Config, pool: &mut Pool) {
    let sizes = [TARGET_USED; PER_CALL];
    let mut every = bench::workspace(ScrubMode::Watermark, 1, 0);
    let mut never = bench::workspace(ScrubMode::Watermark, 0, 0);
    let mut plain = vec![0u8; SIZE];
    let mut plain_pool = BufferPool::new(pool.len());
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        sampler.batch("touch", PER_CALL, || {
            each(&sizes, |u| bench::touch_only(&mut plain, u))
        });
        sampler.batch("every", PER_CALL, || {
            each(&sizes, |u| bench::request(&mut every, u))
        });
        sampler.batch("never", PER_CALL, || {
            each(&sizes, |u| bench::request(&mut never, u))
        });
    }
    // The pool one configuration at a time, as in the pool table (a check at every reset reads
    // ~500 KiB of cold memory per request).
    plain_pool.settle(&sizes);
    sampler.batches("pool-touch", PER_CALL, || {
        each(&sizes, |u| bench::touch_only(plain_pool.next_buffer(), u))
    });
    pool.set(ScrubMode::Watermark, 0);
    pool.settle(&sizes);
    sampler.batches("pool-never", PER_CALL, || {
        each(&sizes, |u| bench::request(pool.next_workspace(), u))
    });
    pool.set(ScrubMode::Watermark, 1);
    sampler.batches("pool-every", PER_CALL, || {
        each(&sizes, |u| bench::request(pool.next_workspace(), u))
    });
    let median = |name| sampler.median(name).unwrap_or(f64::NAN);
    let rate = f64::from(edgewise::DEFAULT_VERIFY_ONE_IN);
    println!(
        "\nverification at {} KiB used (reads the {} KiB above the watermark), sampled at 1 in \
         {} resets:",
        TARGET_USED >> 10,
        (SIZE - TARGET_USED) >> 10,
        edgewise::DEFAULT_VERIFY_ONE_IN
    );
    for (label, every, never, touch) in [
        ("single", median("every"), median("never"), median("touch")),
        (
            "pool",
            median("pool-every"),
            median("pool-never"),
            median("pool-touch"),
        ),
    ] {
        let check = every - never;
        let amortized = check / rate;
        // As in the tables: the reset alone only where the touch is clearly below the request.
        let reset = (never - touch > 0.2 * never).then_some(never - touch);
        println!(
            "  {label:<6} one check {} ns; amortized {:.3} ns per request = {:.3}% of the \
             watermark request ({} ns){}",
            fmt_ns(check),
            amortized,
            100.0 * amortized / never,
            fmt_ns(never),
            reset.map_or(String::new(), |r| format!(
                ", {:.3}% of its reset ({} ns; target <= 1%)",
                100.0 * amortized / r,
                fmt_ns(r)
            )),
        );
    }
}

/// Twice the last-level cache, when it can be read (not in WASI); else 256 MiB.
fn default_pool_bytes() -> usize {
    bench::llc_bytes().map_or(256 << 20, |llc| 2 * llc)
}

fn main() -> ExitCode {
    let mut pool_bytes = default_pool_bytes();
    let pool_mib = |flag: &str, mib: u64| {
        let take = flag == "--pool-mib";
        if take {
            pool_bytes = (mib as usize) << 20;
        }
        take
    };
    let defaults = Config::new(31, 4, 100);
    let cfg = &match defaults.from_args("workspace_wasm", " [--pool-mib MIB]", pool_mib) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let count = bench::pool_len(pool_bytes);
    println!(
        "edgewise workspace bench, {TARGET}: median of {} batches of ~{} ms; 512 KiB workspace; \
         ns per request (touch + reset); zeroed = bytes per reset (F full, W watermark); \
         F/W = full over watermark, for the request and for the reset alone (request - touch); \
         shadow and watermark verify 1 in {} resets",
        cfg.batches,
        cfg.batch.as_millis(),
        edgewise::DEFAULT_VERIFY_ONE_IN,
    );
    println!("\nsingle workspace (cache-resident):");
    print_rows(&single(cfg));
    let mut workspaces = Pool::new(count, ScrubMode::Full, 0);
    println!(
        "\npool of {count} workspaces ({} MiB), cycled round-robin:",
        (count * SIZE) >> 20
    );
    print_rows(&pool(cfg, &mut workspaces));
    zero_check(cfg);
    verification(cfg, &mut workspaces);
    ExitCode::SUCCESS
}
