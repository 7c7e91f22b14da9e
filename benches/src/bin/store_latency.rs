//! The feature store beside its two peers, in one run, on the same tables of `DIMS` floats
//! (64) per key: Cloudflare's mmap-sync 2.0.4 (bliss's library, rkyv 0.7) and bliss's "before"
//! path, `get features:<key>` in the memcached text protocol over edgewised's Unix socket.
//!
//!   store_latency [--keys N] [--dims D] [--samples N] [--secs S] [--dir DIR]
//!   (scripts/bench-store.sh runs it in release, in /dev/shm)
//!
//! With `N` keys (default 1M):
//! 1. publish time of the whole table (no reader), including edgewised's end-to-end replace;
//! 2. validation: a reader's first read of a new version (edgewise: checksum, bytecheck and the
//!    table checks, once per version) vs mmap-sync's `read(check_bytes = true)` (every read);
//! 3. guard cost: read + drop of the guard, on a 1k-key store;
//! 4. per-lookup latency with no writer, uniform, Zipf and 1k hot keys, peers interleaved;
//! 5. two reader threads at once against one.
//!
//! Then, for 1k, 100k and `N` keys, each peer for `S` seconds (default 10) while a writer
//! publishes the whole table back to back -- a separate process for the mapped peers, the
//! daemon's own publisher thread for the socket -- with uniform and Zipf (exponent 1) keys
//! interleaved in chunks:
//! 6. per-lookup latency (take the guard, find the key, use the whole vector);
//! 7. the publishes made meanwhile;
//! 8. resident memory relative to the raw payload (`keys × dims × 4` bytes).
//!
//! Percentiles are of single operations, each timed with two clock reads whose median cost
//! (printed) is subtracted. Ratios are peer / edgewise: above 1, edgewise is faster.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use edgewise::{FeatureReader, FeatureWriter, WriterOptions};
use edgewise_benches::loadgen::flags;
use edgewise_benches::store::daemon::Daemon;
use edgewise_benches::store::report::{self, duration, quantile_cells, ratio};
use edgewise_benches::store::resident::{self, Resident};
use edgewise_benches::store::zipf::Zipf;
use edgewise_benches::store::{self as bench, Features, Histogram, MMAP_SYNC_GRACE, Probes, TABLE};
use mmap_sync::synchronizer::Synchronizer;

#[derive(Debug, Clone)]
struct Args {
    keys: u64,
    dims: usize,
    samples: usize,
    secs: u64,
    dir: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        keys: 1_000_000,
        dims: 64,
        samples: 1_000_000,
        secs: 10,
        dir: std::env::temp_dir().join("edgewise-store-bench"),
    };
    // One path flag among numbers: values come as strings and the numbers are parsed here.
    flags(|flag, value: String| {
        let number = || value.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag {
            "--keys" => args.keys = number()?.max(1),
            "--dims" => args.dims = number()?.max(1) as usize,
            "--samples" => args.samples = number()?.max(1) as usize,
            "--secs" => args.secs = number()?.max(1),
            "--dir" => args.dir = PathBuf::from(&value),
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    Ok(args)
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var("STORE_BENCH_ROLE") {
        return match role.strip_prefix("reader ") {
            Some(peer) => reader_child(peer),
            None => writer_child(&role),
        };
    }
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!(
                "store_latency: {e}\nusage: store_latency [--keys N] [--dims D] [--samples N] [--secs S] [--dir DIR]"
            );
            return ExitCode::from(2);
        }
    };
    let started = Instant::now();
    let outcome = run(&args);
    let _ = std::fs::remove_dir_all(&args.dir);
    match outcome {
        Ok(()) => {
            println!("\n(run took {:.0} s)", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("store_latency: {e:#}");
            ExitCode::FAILURE
        }
    }
}

type Res<T> = anyhow::Result<T>;

fn run(args: &Args) -> Res<()> {
    let _ = std::fs::remove_dir_all(&args.dir);
    let overhead = bench::timer_overhead();
    println!(
        "# feature store vs mmap-sync 2.0.4 vs memcached text over a Unix socket\n\n\
         {} keys x {} floats ({} MiB payload) for tables 1-5; timer overhead {overhead} ns \
         subtracted from every operation; ratios are peer / edgewise (above 1: edgewise is faster)",
        args.keys,
        args.dims,
        payload(args.keys, args.dims) >> 20
    );
    publish_and_validate(args)?;
    guards(args)?;
    quiet_lookups(args, overhead)?;
    parallel_readers(args, overhead)?;
    loaded(args, overhead)?;
    readers_per_publish(args)
}

/// Reader processes beside a publishing writer, in table 9.
const READER_PROCESSES: usize = 8;

/// Table 9: `READER_PROCESSES` reader processes, each reading (one lookup a read) while a writer
/// process publishes back to back at `args.keys` keys: the CPU a reader spends on the read that
/// first sees a new version, beyond an ordinary read's.
fn readers_per_publish(args: &Args) -> Res<()> {
    let mut rows = Vec::new();
    for peer in [Peer::Edgewise, Peer::MmapSync] {
        let dir = args.dir.join(format!("readers-{}", peer.name()));
        std::fs::create_dir_all(&dir)?;
        let (mut writer, times) = spawn_writer(peer, &dir, args.keys, args.dims)?;
        let readers: Vec<Child> = (0..READER_PROCESSES)
            .map(|_| {
                Command::new(std::env::current_exe()?)
                    .env("STORE_BENCH_ROLE", format!("reader {}", peer.name()))
                    .env("STORE_BENCH_DIR", &dir)
                    .env("STORE_BENCH_SECS", args.secs.to_string())
                    .stdout(Stdio::piped())
                    .spawn()
            })
            .collect::<Result<_, _>>()?;
        let mut reports = Vec::new();
        for reader in readers {
            let out = reader.wait_with_output()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            reports.push(ReaderReport::parse(&text)?);
        }
        writer.kill()?;
        writer.wait()?;
        let publishes = times.try_iter().count();
        let _ = std::fs::remove_dir_all(&dir);
        let versions: u64 = reports.iter().map(|r| r.versions).sum();
        let extra: f64 = reports
            .iter()
            .map(|r| r.new_cpu_ns - r.plain_cpu_ns * r.versions as f64)
            .sum();
        let per_publish = extra / versions.max(1) as f64;
        let max = reports.iter().map(|r| r.max_new_ns).fold(0.0, f64::max);
        rows.push(vec![
            peer.name().to_owned(),
            publishes.to_string(),
            (versions / READER_PROCESSES as u64).to_string(),
            duration(per_publish),
            duration(max),
            duration(per_publish * READER_PROCESSES as f64),
        ]);
    }
    report::table(
        &format!(
            "## 9. {READER_PROCESSES} reader processes while a writer publishes {} keys back to back ({} s): CPU per reader per publish",
            args.keys, args.secs
        ),
        &[
            "peer",
            "publishes",
            "versions seen / reader",
            "CPU per publish / reader",
            "max",
            "all readers",
        ],
        1,
        &rows,
    );
    println!(
        "\nThread CPU time (CLOCK_THREAD_CPUTIME_ID) of the read that first saw a version, less an \
         ordinary read's mean. mmap-sync's readers read unchecked (`check_bytes = false`), as in \
         tables 4-6; checked, they validate on every read (table 2)."
    );
    Ok(())
}

/// What a reader process measured (its stdout: four numbers).
#[derive(Debug)]
struct ReaderReport {
    versions: u64,
    new_cpu_ns: f64,
    max_new_ns: f64,
    plain_cpu_ns: f64,
}

impl ReaderReport {
    fn parse(text: &str) -> Res<ReaderReport> {
        let n: Vec<f64> = text
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        let [versions, new_cpu_ns, max_new_ns, plain_cpu_ns] = n[..] else {
            anyhow::bail!("reader process printed {text:?}");
        };
        Ok(ReaderReport {
            versions: versions as u64,
            new_cpu_ns,
            max_new_ns,
            plain_cpu_ns,
        })
    }
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec for the duration of the call.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 * 1e9 + now.tv_nsec as f64
}

/// A reader process of table 9: reads for `STORE_BENCH_SECS`, one lookup a read, timing each
/// read's CPU; prints versions seen, their reads' CPU in all and at most, an ordinary read's mean.
fn reader_child(peer: &str) -> ExitCode {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let dir = PathBuf::from(var("STORE_BENCH_DIR"));
    let secs = Duration::from_secs(var("STORE_BENCH_SECS").parse().unwrap_or(10));
    let mut probes = Probes::new(std::process::id().into());
    let (mut versions, mut new_cpu, mut max_new, mut plain_cpu, mut plain) =
        (0u64, 0.0, 0.0f64, 0.0, 0u64);
    let mut last = u64::MAX;
    let mut account = |version: u64, cpu: f64| {
        // The version the reader opened on is not a publish it followed.
        if last == u64::MAX {
            last = version;
        } else if version != last {
            last = version;
            versions += 1;
            new_cpu += cpu;
            max_new = max_new.max(cpu);
        } else {
            plain_cpu += cpu;
            plain += 1;
        }
    };
    let start = Instant::now();
    let result: Res<()> = (|| {
        if peer == Peer::Edgewise.name() {
            let mut reader = FeatureReader::open(&dir)?;
            while start.elapsed() < secs {
                let before = thread_cpu_ns();
                let Ok(guard) = reader.read() else { continue };
                let cpu = thread_cpu_ns() - before;
                let key = bench::key(probes.next_below(1000));
                std::hint::black_box(guard.table(TABLE).and_then(|t| t.get(key)));
                account(guard.version(), cpu);
            }
        } else {
            let mut sync = bench::synchronizer(&dir);
            while start.elapsed() < secs {
                let before = thread_cpu_ns();
                // SAFETY: the files hold `Features`.
                let Ok(read) = (unsafe { sync.read::<Features>(false) }) else {
                    continue;
                };
                let cpu = thread_cpu_ns() - before;
                let key = bench::key(probes.next_below(1000));
                std::hint::black_box(read.features.first().and_then(|f| f.get(&key)));
                account(u64::from(read.version), cpu);
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        eprintln!("store_latency reader: {e:#}");
        return ExitCode::FAILURE;
    }
    println!(
        "{versions} {new_cpu} {max_new} {}",
        plain_cpu / plain.max(1) as f64
    );
    ExitCode::SUCCESS
}

fn payload(keys: u64, dims: usize) -> u64 {
    keys * dims as u64 * 4
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Tables 1 and 2: publish time, then validation time.
fn publish_and_validate(args: &Args) -> Res<()> {
    let (ours, theirs) = (args.dir.join("edgewise"), args.dir.join("mmap-sync"));
    std::fs::create_dir_all(&theirs)?;
    let rows = bench::rows(args.keys, args.dims, 1);
    let mut writer = FeatureWriter::open(&ours, WriterOptions::default())?;
    let mut sync = bench::synchronizer(&theirs);
    let daemon = Daemon::start(&args.dir.join("daemon"))?;
    let (mut our_times, mut their_times, mut daemon_times) = (Vec::new(), Vec::new(), Vec::new());
    let mut snapshot = bench::snapshot(rows.clone(), 0);
    let mut entity = bench::entity(rows, 0);
    for version in 1..=5 {
        snapshot.version = version;
        let start = Instant::now();
        let report = writer.publish(&snapshot)?;
        our_times.push(ms(start.elapsed()));
        anyhow::ensure!(report.version == version, "published {}", report.version);
        entity.version = version as u32;
        let start = Instant::now();
        sync.write(&entity, MMAP_SYNC_GRACE)?;
        their_times.push(ms(start.elapsed()));
        daemon_times.push(daemon.replace_all(snapshot.clone())?);
    }
    drop((writer, snapshot, entity, daemon));
    let _ = std::fs::remove_dir_all(args.dir.join("daemon"));
    let our_median = median(our_times[1..].to_vec());
    let row = |name: &str, times: &[f64]| {
        let med = median(times[1..].to_vec());
        vec![
            name.to_owned(),
            format!("{:.1}", times[0]),
            format!("{med:.1}"),
            ratio(med, our_median),
        ]
    };
    report::table(
        &format!(
            "## 1. publish the whole table, {} keys (ms; the first publish creates the files)",
            args.keys
        ),
        &["peer", "first", "median of 4", "ratio"],
        1,
        &[
            row("edgewise FeatureWriter::publish", &our_times),
            row("mmap-sync write", &their_times),
            row(
                "edgewised apply_now(ReplaceAll) (validate + publish)",
                &daemon_times,
            ),
        ],
    );

    let (mut our_times, mut their_times) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let mut reader = FeatureReader::open(&ours)?;
        let start = Instant::now();
        let guard = reader.read()?;
        our_times.push(ms(start.elapsed()));
        anyhow::ensure!(guard.version() == 5, "read version {}", guard.version());
        drop(guard);
        let start = Instant::now();
        // SAFETY (mmap-sync's contract): the files hold `Features`, written above.
        let read = unsafe { sync.read::<Features>(true) }?;
        their_times.push(ms(start.elapsed()));
        anyhow::ensure!(read.version == 5, "read version {}", read.version);
    }
    let (ours_v, theirs_v) = (median(our_times), median(their_times));
    report::table(
        "## 2. validate a version (ms, median of 5): edgewise once per version, mmap-sync per checked read",
        &["peer", "ms", "ratio"],
        1,
        &[
            vec![
                "edgewise first read".into(),
                format!("{ours_v:.2}"),
                String::new(),
            ],
            vec![
                "mmap-sync read(check_bytes = true)".into(),
                format!("{theirs_v:.2}"),
                ratio(theirs_v, ours_v),
            ],
        ],
    );
    Ok(())
}

/// Table 3: guard cost on a small store, ns per read + drop (median of batches).
fn guards(args: &Args) -> Res<()> {
    let (ours, theirs) = (
        args.dir.join("small-edgewise"),
        args.dir.join("small-mmap-sync"),
    );
    std::fs::create_dir_all(&theirs)?;
    let rows = bench::rows(1000, args.dims, 1);
    FeatureWriter::open(&ours, WriterOptions::default())?
        .publish(&bench::snapshot(rows.clone(), 1))?;
    let mut sync = bench::synchronizer(&theirs);
    sync.write(&bench::entity(rows, 1), MMAP_SYNC_GRACE)?;
    let mut reader = FeatureReader::open(&ours)?;
    let mut sync = bench::synchronizer(&theirs);
    // Up to 20k operations or 5 ms per batch, whichever ends first.
    let batch = |f: &mut dyn FnMut() -> bool| {
        let start = Instant::now();
        let mut ops = 0u32;
        while ops < 20_000
            && (!ops.is_multiple_of(64) || start.elapsed() < Duration::from_millis(5))
        {
            std::hint::black_box(f());
            ops += 1;
        }
        start.elapsed().as_nanos() as f64 / f64::from(ops)
    };
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..51 {
        a.push(batch(&mut || reader.read().is_ok_and(|g| g.version() == 1)));
        // SAFETY: the files hold `Features`.
        b.push(batch(&mut || {
            unsafe { sync.read::<Features>(false) }.is_ok()
        }));
        // SAFETY: as above.
        c.push(batch(&mut || {
            unsafe { sync.read::<Features>(true) }.is_ok()
        }));
    }
    let (a, b, c) = (median(a), median(b), median(c));
    report::table(
        "## 3. guard: read + drop, 1k keys (per op, median of 51 batches; edgewise validated the version once)",
        &["peer", "per op", "ratio"],
        1,
        &[
            vec!["edgewise read".into(), duration(a), String::new()],
            vec!["mmap-sync read(unchecked)".into(), duration(b), ratio(b, a)],
            vec!["mmap-sync read(checked)".into(), duration(c), ratio(c, a)],
        ],
    );
    Ok(())
}

/// One lookup as an origin app does it per request: take the guard, find the table and the
/// key, use the whole vector. `None` if any step failed.
fn our_lookup(reader: &mut FeatureReader, key: u64) -> Option<f32> {
    let guard = reader.read().ok()?;
    Some(bench::use_vector(guard.table(TABLE)?.get(key)?))
}

fn their_lookup(sync: &mut Synchronizer, key: u64) -> Option<f32> {
    // SAFETY: the files hold `Features`.
    let read = unsafe { sync.read::<Features>(false) }.ok()?;
    Some(bench::use_vector(read.features.first()?.get(&key)?))
}

/// How lookups pick their keys.
#[derive(Debug, Clone, Copy)]
enum Keys {
    Uniform(u64),
    Zipf(Zipf),
}

impl Keys {
    fn pick(&self, probes: &mut Probes) -> u64 {
        bench::key(match self {
            Keys::Uniform(n) => probes.next_below(*n),
            Keys::Zipf(zipf) => zipf.sample(probes),
        })
    }
}

/// Latencies of one peer and key distribution; lookups that failed are counted apart.
#[derive(Debug, Default, Clone)]
struct Timed {
    hist: Histogram,
    failed: u64,
}

/// [`time_chunk`] into a fresh [`Timed`]; generic, so each peer's lookup is inlined.
fn timed_lookups(
    mut lookup: impl FnMut(u64) -> Option<f32>,
    mut probes: Probes,
    keys: Keys,
    chunk: usize,
    overhead: u64,
) -> Timed {
    let mut timed = Timed::default();
    time_chunk(&mut lookup, &mut timed, &mut probes, keys, chunk, overhead);
    timed
}

/// Times `chunk` lookups at keys `keys.pick(probes)`.
fn time_chunk(
    lookup: &mut impl FnMut(u64) -> Option<f32>,
    timed: &mut Timed,
    probes: &mut Probes,
    keys: Keys,
    chunk: usize,
    overhead: u64,
) {
    for _ in 0..chunk {
        let key = keys.pick(probes);
        let start = Instant::now();
        let found = std::hint::black_box(lookup(std::hint::black_box(key)));
        timed
            .hist
            .record(start.elapsed().as_nanos() as u64, overhead);
        timed.failed += u64::from(found.is_none());
    }
}

/// A latency table row: labels, the quantiles, operations, failures, ratios to `ours`.
fn latency_row(labels: &[&str], timed: &Timed, ours: Option<&Timed>) -> Vec<String> {
    let mut row: Vec<String> = labels.iter().map(|s| (*s).to_owned()).collect();
    row.extend(quantile_cells(&timed.hist));
    row.push(timed.hist.len().to_string());
    row.push(timed.failed.to_string());
    row.push(timed.hist.above(100_000).to_string());
    for q in [0.5, 0.99, 0.999] {
        row.push(match ours {
            Some(ours) => ratio(timed.hist.quantile(q), ours.hist.quantile(q)),
            None => String::new(),
        });
    }
    row
}

const LATENCY_HEADER: [&str; 12] = [
    "p50",
    "p90",
    "p99",
    "p999",
    "p9999",
    "max",
    "ops",
    "failed",
    "> 100 µs",
    "ratio p50",
    "ratio p99",
    "ratio p999",
];

fn latency_header<'a>(labels: &[&'a str]) -> Vec<&'a str> {
    labels.iter().copied().chain(LATENCY_HEADER).collect()
}

/// A reader whose first read (validation, table 2) is already done.
fn warm_reader(dir: &Path) -> Res<FeatureReader> {
    let mut reader = FeatureReader::open(dir)?;
    drop(reader.read()?);
    Ok(reader)
}

/// Table 4: lookups with no writer running, uniform, Zipf and hot keys, peers interleaved.
fn quiet_lookups(args: &Args, overhead: u64) -> Res<()> {
    let (ours, theirs) = (args.dir.join("edgewise"), args.dir.join("mmap-sync"));
    let dists = [
        ("uniform", Keys::Uniform(args.keys)),
        ("Zipf s=1", Keys::Zipf(Zipf::new(args.keys))),
        ("hot 1k keys", Keys::Uniform(1000.min(args.keys))),
    ];
    let mut rows = Vec::new();
    for (label, keys) in dists {
        let mut reader = warm_reader(&ours)?;
        let mut sync = bench::synchronizer(&theirs);
        let (mut a, mut b) = (Timed::default(), Timed::default());
        const CHUNK: usize = 10_000;
        for round in 0..(args.samples / 2).div_ceil(CHUNK) as u64 {
            let mut lookup = |k| our_lookup(&mut reader, k);
            time_chunk(
                &mut lookup,
                &mut a,
                &mut Probes::new(round + 1),
                keys,
                CHUNK,
                overhead,
            );
            let mut lookup = |k| their_lookup(&mut sync, k);
            time_chunk(
                &mut lookup,
                &mut b,
                &mut Probes::new(round + 1),
                keys,
                CHUNK,
                overhead,
            );
        }
        rows.push(latency_row(&[label, "edgewise"], &a, None));
        rows.push(latency_row(&[label, "mmap-sync"], &b, Some(&a)));
    }
    report::table(
        &format!(
            "## 4. lookup of one key's vector, {} keys, no writer (per op; peers interleaved in chunks of 10k)",
            args.keys
        ),
        &latency_header(&["keys", "peer"]),
        2,
        &rows,
    );
    Ok(())
}

/// Uniform lookups from `threads` threads at once, each with its own reader of `peer`.
fn threads_lookups(
    edgewise: bool,
    dir: &Path,
    args: &Args,
    threads: usize,
    overhead: u64,
) -> Timed {
    let samples = (args.samples / 2).max(1);
    let keys = Keys::Uniform(args.keys);
    let parts: Vec<Timed> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let probes = Probes::new(t as u64 + 11);
                    if edgewise {
                        let Ok(mut reader) = warm_reader(dir) else {
                            return Timed {
                                failed: 1,
                                ..Timed::default()
                            };
                        };
                        let lookup = |k| our_lookup(&mut reader, k);
                        timed_lookups(lookup, probes, keys, samples, overhead)
                    } else {
                        let mut sync = bench::synchronizer(dir);
                        let lookup = |k| their_lookup(&mut sync, k);
                        timed_lookups(lookup, probes, keys, samples, overhead)
                    }
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    parts.into_iter().fold(Timed::default(), |mut all, part| {
        all.hist.merge(part.hist);
        all.failed += part.failed;
        all
    })
}

/// Table 5: two reader threads at once against one, per peer (no writer).
fn parallel_readers(args: &Args, overhead: u64) -> Res<()> {
    let mut rows = Vec::new();
    for (name, dir, edgewise) in [
        ("edgewise", args.dir.join("edgewise"), true),
        ("mmap-sync", args.dir.join("mmap-sync"), false),
    ] {
        let one = threads_lookups(edgewise, &dir, args, 1, overhead);
        let two = threads_lookups(edgewise, &dir, args, 2, overhead);
        let (a, b) = (one.hist.quantile(0.5), two.hist.quantile(0.5));
        let (c, d) = (one.hist.quantile(0.99), two.hist.quantile(0.99));
        rows.push(vec![
            name.to_owned(),
            duration(a),
            duration(b),
            ratio(b, a),
            duration(c),
            duration(d),
            ratio(d, c),
            (one.failed + two.failed).to_string(),
        ]);
    }
    report::table(
        &format!(
            "## 5. two reader threads at once vs one, {} keys uniform, no writer (ratio: two / one; below 1.2x is the target)",
            args.keys
        ),
        &[
            "peer",
            "1: p50",
            "2: p50",
            "ratio p50",
            "1: p99",
            "2: p99",
            "ratio p99",
            "failed",
        ],
        1,
        &rows,
    );
    Ok(())
}

/// The peers of the loaded tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Peer {
    Edgewise,
    MmapSync,
    Socket,
}

impl Peer {
    const ALL: [Peer; 3] = [Peer::Edgewise, Peer::MmapSync, Peer::Socket];

    fn name(self) -> &'static str {
        match self {
            Peer::Edgewise => "edgewise",
            Peer::MmapSync => "mmap-sync",
            Peer::Socket => "memcached text, Unix socket",
        }
    }
}

/// One peer's run under a publishing writer.
#[derive(Debug, Default)]
struct Window {
    uniform: Timed,
    zipf: Timed,
    /// Each publish's milliseconds.
    publishes: Vec<f64>,
    /// The reader's resident store mappings after touching every key.
    reader: Option<u64>,
    /// The writer process's resident memory.
    writer: Option<Resident>,
    /// Size of the store's files.
    files: u64,
}

/// Tables 6-8: each peer under a writer publishing back to back, at 1k, 100k and N keys.
fn loaded(args: &Args, overhead: u64) -> Res<()> {
    let mut counts: Vec<u64> = [1000, 100_000, args.keys]
        .into_iter()
        .filter(|&n| n <= args.keys)
        .collect();
    counts.dedup();
    // Tables 1-5's stores: their memory (tmpfs) is not the loaded runs' business.
    for old in ["edgewise", "mmap-sync", "small-edgewise", "small-mmap-sync"] {
        let _ = std::fs::remove_dir_all(args.dir.join(old));
    }
    let mut results = Vec::new();
    for &n in &counts {
        let base = args.dir.join(format!("loaded-{n}"));
        for peer in Peer::ALL {
            let window = window(args, n, peer, &base.join(peer.name()), overhead)?;
            results.push((n, peer, window));
        }
        let _ = std::fs::remove_dir_all(&base);
    }
    print_loaded(args, &results);
    Ok(())
}

/// Runs `peer` at `n` keys in `dir` for `args.secs` seconds under a publishing writer.
fn window(args: &Args, n: u64, peer: Peer, dir: &Path, overhead: u64) -> Res<Window> {
    std::fs::create_dir_all(dir)?;
    let mut window = Window::default();
    let secs = Duration::from_secs(args.secs);
    match peer {
        Peer::Edgewise | Peer::MmapSync => {
            let (mut child, times) = spawn_writer(peer, dir, n, args.dims)?;
            let outcome = (|| -> Res<()> {
                if peer == Peer::Edgewise {
                    let mut reader = warm_reader(dir)?;
                    let mut lookup = |k| our_lookup(&mut reader, k);
                    interleave(&mut lookup, &mut window, n, secs, 10_000, overhead);
                    window.reader = Some(touch_all(&mut lookup, n, dir)?);
                } else {
                    let mut sync = bench::synchronizer(dir);
                    let mut lookup = |k| their_lookup(&mut sync, k);
                    interleave(&mut lookup, &mut window, n, secs, 10_000, overhead);
                    window.reader = Some(touch_all(&mut lookup, n, dir)?);
                }
                window.writer = Some(resident::of(Some(child.id()), dir)?);
                window.files = resident::files_size(dir);
                Ok(())
            })();
            child.kill()?;
            child.wait()?;
            window.publishes = times.try_iter().collect();
            outcome?;
        }
        Peer::Socket => {
            let daemon = Daemon::start(dir)?;
            daemon.replace_all(bench::snapshot(bench::rows(n, args.dims, 1), 1))?;
            let mut client = daemon.connect()?;
            let stop = AtomicBool::new(false);
            let publishes = std::thread::scope(|scope| {
                let publisher = scope.spawn(|| daemon.republish_until(&stop, args.dims));
                let mut lookup = |k| client.lookup(k).ok();
                interleave(&mut lookup, &mut window, n, secs, 1000, overhead);
                stop.store(true, Ordering::Relaxed);
                publisher
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
            })?;
            window.publishes = publishes;
            window.files = resident::files_size(&daemon.store_dir());
        }
    }
    Ok(window)
}

/// Lookups for `secs`, uniform and Zipf keys alternating in chunks of `chunk`.
fn interleave(
    lookup: &mut impl FnMut(u64) -> Option<f32>,
    window: &mut Window,
    n: u64,
    secs: Duration,
    chunk: usize,
    overhead: u64,
) {
    let (uniform, zipf) = (Keys::Uniform(n), Keys::Zipf(Zipf::new(n)));
    let mut probes = Probes::new(99);
    let start = Instant::now();
    while start.elapsed() < secs {
        time_chunk(
            lookup,
            &mut window.uniform,
            &mut probes,
            uniform,
            chunk,
            overhead,
        );
        time_chunk(lookup, &mut window.zipf, &mut probes, zipf, chunk, overhead);
    }
}

/// Looks every key up once, then the resident size of this process's mappings of `dir`.
fn touch_all(lookup: &mut impl FnMut(u64) -> Option<f32>, n: u64, dir: &Path) -> Res<u64> {
    // A read can fail while the writer overtakes it (counted in table 6): retry a few times.
    let missing = (0..n)
        .filter(|&i| (0..3).all(|_| lookup(bench::key(i)).is_none()))
        .count();
    anyhow::ensure!(missing == 0, "{missing} of {n} keys not found");
    Ok(resident::of(None, dir)?.store)
}

fn print_loaded(args: &Args, results: &[(u64, Peer, Window)]) {
    let mut rows = Vec::new();
    for dist in ["uniform", "Zipf s=1"] {
        for (n, peer, window) in results {
            let pick = |w: &Window| {
                if dist == "uniform" {
                    w.uniform.clone()
                } else {
                    w.zipf.clone()
                }
            };
            let ours = results
                .iter()
                .find(|(m, p, _)| m == n && *p == Peer::Edgewise)
                .map(|(_, _, w)| pick(w));
            let ours = ours.as_ref().filter(|_| *peer != Peer::Edgewise);
            rows.push(latency_row(
                &[&n.to_string(), dist, peer.name()],
                &pick(window),
                ours,
            ));
        }
    }
    report::table(
        &format!(
            "## 6. lookup of one key's vector while a writer publishes the whole table back to back ({} s per peer and key count, uniform and Zipf interleaved)",
            args.secs
        ),
        &latency_header(&["keys", "distribution", "peer"]),
        3,
        &rows,
    );
    println!(
        "\nA lookup's time includes, once per version, the reader's first read of it (table 9); \
         the socket's server reads the same store, so its figures include that too."
    );

    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(n, peer, w)| {
            let mut sorted = w.publishes.clone();
            sorted.sort_by(f64::total_cmp);
            vec![
                n.to_string(),
                peer.name().to_owned(),
                w.publishes.len().to_string(),
                duration(median(sorted.clone()) * 1e6),
                duration(sorted.last().copied().unwrap_or(f64::NAN) * 1e6),
            ]
        })
        .collect();
    report::table(
        "## 7. publishes during table 6 (writer process for the mapped peers; edgewised's one-row upserts, each a full republish, for the socket)",
        &["keys", "peer", "publishes", "median", "max"],
        2,
        &rows,
    );

    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|(n, peer, w)| {
            let raw = payload(*n, args.dims) as f64;
            let times = |bytes: Option<u64>| {
                bytes.map_or("-".to_owned(), |b| format!("{:.2}x", b as f64 / raw))
            };
            vec![
                n.to_string(),
                peer.name().to_owned(),
                format!("{:.1} MiB", raw / f64::from(1 << 20)),
                times(Some(w.files)),
                times(w.reader),
                times(w.writer.map(|r| r.store)),
                times(w.writer.map(|r| r.anonymous)),
                times(w.writer.map(|r| r.rss)),
            ]
        })
        .collect();
    report::table(
        "## 8. memory relative to the raw payload (keys x dims x 4 bytes), at the end of table 6's run",
        &[
            "keys",
            "peer",
            "payload",
            "store files",
            "reader: mapped RSS",
            "writer: mapped RSS",
            "writer: heap",
            "writer: total RSS",
        ],
        2,
        &rows,
    );
    println!(
        "\nstore files: both copies, held in memory on tmpfs (/dev/shm). reader: Rss of the \
         reader's mappings of the store after looking up every key (under publishing it maps both \
         copies). writer: the writer process's Rss from /proc/<pid>/smaps; its heap holds the \
         snapshot it serializes. The mapped pages are the same page-cache pages in every process, \
         so the machine-wide cost is store files + writer heap. The socket's daemon runs in the \
         benchmark process, so only its files are shown."
    );
}

/// Starts this binary as a writer process for `peer`; its publish times (ms) arrive on the
/// channel. Returns once it has published at least once.
fn spawn_writer(
    peer: Peer,
    dir: &Path,
    keys: u64,
    dims: usize,
) -> Res<(Child, mpsc::Receiver<f64>)> {
    let mut child = Command::new(std::env::current_exe()?)
        .env("STORE_BENCH_ROLE", peer.name())
        .env("STORE_BENCH_DIR", dir)
        .env("STORE_BENCH_KEYS", keys.to_string())
        .env("STORE_BENCH_DIMS", dims.to_string())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("no stdout"))?;
    let (tx, rx) = mpsc::channel();
    let (first_tx, first_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(ms) = line.trim().parse::<f64>() {
                let _ = first_tx.send(());
                let _ = tx.send(ms);
            }
        }
    });
    if let Err(e) = first_rx.recv_timeout(Duration::from_secs(120)) {
        let _ = child.kill();
        let _ = child.wait();
        anyhow::bail!("{} writer never published: {e}", peer.name());
    }
    Ok((child, rx))
}

/// The writer process: publishes the whole table back to back, printing each publish's ms.
fn writer_child(peer: &str) -> ExitCode {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    let dir = PathBuf::from(var("STORE_BENCH_DIR"));
    let keys: u64 = var("STORE_BENCH_KEYS").parse().unwrap_or(1000);
    let dims: usize = var("STORE_BENCH_DIMS").parse().unwrap_or(64);
    let rows = bench::rows(keys, dims, 1);
    let result: Res<()> = (|| {
        if peer == Peer::Edgewise.name() {
            let mut writer = FeatureWriter::open(&dir, WriterOptions::default())?;
            let mut snapshot = bench::snapshot(rows, 0);
            loop {
                snapshot.version = writer.version() + 1;
                let start = Instant::now();
                writer.publish(&snapshot)?;
                println!("{}", ms(start.elapsed()));
            }
        } else {
            let mut sync = bench::synchronizer(&dir);
            let mut entity = bench::entity(rows, 0);
            loop {
                entity.version += 1;
                let start = Instant::now();
                sync.write(&entity, MMAP_SYNC_GRACE)?;
                println!("{}", ms(start.elapsed()));
            }
        }
    })();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store_latency writer: {e:#}");
            ExitCode::FAILURE
        }
    }
}
