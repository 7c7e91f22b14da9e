//! The feature store beside mmap-sync 2.0.4 (Cloudflare's bliss library), in one run, on the
//! same tables: `KEYS` keys (default 1M) of `DIMS` floats (64).
//!
//!   store_latency [--keys N] [--dims D] [--samples N] [--secs S] [--dir DIR]
//!   (scripts/bench-store.sh runs it in release, in /dev/shm)
//!
//! 1. publish time of the whole table (no reader);
//! 2. validation: a reader's first read of a new version (edgewise: checksum, bytecheck and the
//!    table checks, once per version) vs mmap-sync's `read(check_bytes = true)` (every read);
//! 3. guard cost: read + drop of the guard, on a 1k-key store;
//! 4. per-lookup latency (guard, table, key, sum of the vector), uniform keys and 1k hot keys,
//!    peers interleaved in chunks of 10k lookups;
//! 5. two reader threads at once against one;
//! 6. the same lookups while a writer process publishes the whole table back to back, `S`
//!    seconds per peer.
//!
//! Percentiles are of single operations, each timed with two clock reads whose median cost
//! (printed) is subtracted. Ratios are mmap-sync / edgewise: above 1, edgewise is faster.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use edgewise::{FeatureReader, FeatureWriter, WriterOptions};
use edgewise_benches::batch::fmt_ns;
use edgewise_benches::store::{self as bench, Features, Histogram, MMAP_SYNC_GRACE, Probes, TABLE};

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
        samples: 2_000_000,
        secs: 10,
        dir: std::env::temp_dir().join("edgewise-store-bench"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--keys" => args.keys = number()?.max(1),
            "--dims" => args.dims = number()?.max(1) as usize,
            "--samples" => args.samples = number()?.max(1) as usize,
            "--secs" => args.secs = number()?.max(1),
            "--dir" => args.dir = PathBuf::from(&value),
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    if let Ok(role) = std::env::var("STORE_BENCH_ROLE") {
        return writer_child(&role);
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
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("store_latency: {e}");
            ExitCode::FAILURE
        }
    }
}

type Res<T> = Result<T, Box<dyn std::error::Error>>;

fn run(args: &Args) -> Res<()> {
    let _ = std::fs::remove_dir_all(&args.dir);
    let (ours, theirs) = (args.dir.join("edgewise"), args.dir.join("mmap-sync"));
    std::fs::create_dir_all(&theirs)?;
    let overhead = bench::timer_overhead();
    println!(
        "feature store vs mmap-sync 2.0.4: {} keys x {} floats ({} MiB payload), timer overhead {overhead} ns subtracted",
        args.keys,
        args.dims,
        (args.keys * args.dims as u64 * 4) >> 20
    );
    publish_and_validate(args, &ours, &theirs)?;
    guards(args)?;
    quiet_lookups(args, &ours, &theirs, overhead)?;
    parallel_readers(args, &ours, &theirs, overhead)?;
    loaded_lookups(args, &ours, &theirs, overhead)?;
    let _ = std::fs::remove_dir_all(&args.dir);
    Ok(())
}

fn ratio(theirs: f64, ours: f64) -> String {
    if theirs.is_nan() || ours.is_nan() || ours <= 0.0 {
        "-".to_owned()
    } else {
        format!("{:.2}x", theirs / ours)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Tables 1 and 2: publish time, then validation time.
fn publish_and_validate(args: &Args, ours: &Path, theirs: &Path) -> Res<()> {
    let rows = bench::rows(args.keys, args.dims, 1);
    let mut writer = FeatureWriter::open(ours, WriterOptions::default())?;
    let mut sync = bench::synchronizer(theirs);
    let (mut our_times, mut their_times) = (Vec::new(), Vec::new());
    let mut snapshot = bench::snapshot(rows.clone(), 0);
    let mut entity = bench::entity(rows, 0);
    for version in 1..=5 {
        snapshot.version = version;
        let start = Instant::now();
        let report = writer.publish(&snapshot)?;
        our_times.push(ms(start.elapsed()));
        assert_eq!(report.version, version);
        entity.version = version as u32;
        let start = Instant::now();
        sync.write(&entity, MMAP_SYNC_GRACE)?;
        their_times.push(ms(start.elapsed()));
    }
    drop((writer, snapshot, entity));
    println!("\n1. publish the whole table (ms; first publish creates the files)");
    println!(
        "{:<12} {:>10} {:>10} {:>10}",
        "", "first", "median", "ratio"
    );
    let (our_first, their_first) = (our_times[0], their_times[0]);
    let (our_med, their_med) = (
        median(our_times[1..].to_vec()),
        median(their_times[1..].to_vec()),
    );
    println!(
        "{:<12} {:>10.1} {:>10.1} {:>10}",
        "edgewise", our_first, our_med, ""
    );
    println!(
        "{:<12} {:>10.1} {:>10.1} {:>10}",
        "mmap-sync",
        their_first,
        their_med,
        ratio(their_med, our_med)
    );

    let (mut our_times, mut their_times) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let mut reader = FeatureReader::open(ours)?;
        let start = Instant::now();
        let guard = reader.read()?;
        our_times.push(ms(start.elapsed()));
        assert_eq!(guard.version(), 5);
        drop(guard);
        let start = Instant::now();
        // SAFETY (mmap-sync's contract): the files hold `Features`, written above.
        let read = unsafe { sync.read::<Features>(true) }?;
        their_times.push(ms(start.elapsed()));
        assert_eq!(read.version, 5);
    }
    let (ours_v, theirs_v) = (median(our_times), median(their_times));
    println!("\n2. validate a version (ms): edgewise once per version, mmap-sync per checked read");
    println!("{:<12} {:>10.2}", "edgewise", ours_v);
    println!(
        "{:<12} {:>10.2} {:>10}",
        "mmap-sync",
        theirs_v,
        ratio(theirs_v, ours_v)
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
    let batch = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        let mut ops = 0u32;
        while ops < 20_000
            && (!ops.is_multiple_of(64) || start.elapsed() < Duration::from_millis(5))
        {
            f();
            ops += 1;
        }
        start.elapsed().as_nanos() as f64 / f64::from(ops)
    };
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..51 {
        a.push(batch(&mut || {
            let guard = reader.read().expect("read");
            std::hint::black_box(guard.version());
        }));
        b.push(batch(&mut || {
            // SAFETY: the files hold `Features`.
            let read = unsafe { sync.read::<Features>(false) }.expect("read");
            std::hint::black_box(read.version);
        }));
        c.push(batch(&mut || {
            // SAFETY: as above.
            let read = unsafe { sync.read::<Features>(true) }.expect("read");
            std::hint::black_box(read.version);
        }));
    }
    let (a, b, c) = (median(a), median(b), median(c));
    println!("\n3. guard: read + drop, 1k keys (ns per op; edgewise validated the version once)");
    println!("{:<28} {:>10}", "edgewise read", fmt_ns(a));
    println!(
        "{:<28} {:>10} {:>10}",
        "mmap-sync read(unchecked)",
        fmt_ns(b),
        ratio(b, a)
    );
    println!(
        "{:<28} {:>10} {:>10}",
        "mmap-sync read(checked)",
        fmt_ns(c),
        ratio(c, a)
    );
    Ok(())
}

/// One lookup as an origin app does it per request: take the guard, find the table and the
/// key, use the whole vector.
fn our_lookup(reader: &mut FeatureReader, key: u64) -> f32 {
    let guard = reader.read().expect("read");
    let table = guard.table(TABLE).expect("table");
    bench::use_vector(table.get(key).expect("key"))
}

fn their_lookup(sync: &mut mmap_sync::synchronizer::Synchronizer, key: u64) -> f32 {
    // SAFETY: the files hold `Features`.
    let read = unsafe { sync.read::<Features>(false) }.expect("read");
    bench::use_vector(read.features[0].get(&key).expect("key"))
}

struct Peer<'a> {
    name: &'static str,
    lookup: Box<dyn FnMut(u64) -> f32 + 'a>,
    hist: Histogram,
}

/// Times `chunk` lookups of `peer` at keys `pick(probes)`.
fn time_chunk(
    peer: &mut Peer<'_>,
    probes: &mut Probes,
    pick: &dyn Fn(&mut Probes) -> u64,
    chunk: usize,
    overhead: u64,
) {
    for _ in 0..chunk {
        let key = pick(probes);
        let start = Instant::now();
        std::hint::black_box((peer.lookup)(std::hint::black_box(key)));
        peer.hist
            .record(start.elapsed().as_nanos() as u64, overhead);
    }
}

fn print_rows(title: &str, peers: &mut [(&'static str, Histogram)]) {
    println!("\n{title}");
    println!(
        "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  ratio p50/p99/p999",
        "", "p50", "p90", "p99", "p999", "max", "ops"
    );
    let qs = [0.5, 0.9, 0.99, 0.999, 1.0];
    let ours: Vec<f64> = qs.iter().map(|&q| peers[0].1.quantile(q)).collect();
    for (name, hist) in peers.iter_mut() {
        let v: Vec<f64> = qs.iter().map(|&q| hist.quantile(q)).collect();
        let ratios = if name.starts_with("edgewise") {
            String::new()
        } else {
            format!(
                "{} / {} / {}",
                ratio(v[0], ours[0]),
                ratio(v[2], ours[2]),
                ratio(v[3], ours[3])
            )
        };
        println!(
            "{:<22} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}  {}",
            name,
            fmt_ns(v[0]),
            fmt_ns(v[1]),
            fmt_ns(v[2]),
            fmt_ns(v[3]),
            fmt_ns(v[4]),
            hist.len(),
            ratios
        );
    }
}

/// Table 4: lookups with no writer running, uniform and hot keys, peers interleaved.
fn quiet_lookups(args: &Args, ours: &Path, theirs: &Path, overhead: u64) -> Res<()> {
    let keys = args.keys;
    // Each reader's first read validates the version (table 2): not a lookup's cost.
    let warm = |dir: &Path| -> Res<FeatureReader> {
        let mut reader = FeatureReader::open(dir)?;
        drop(reader.read()?);
        Ok(reader)
    };
    let mut reader = warm(ours)?;
    let mut sync = bench::synchronizer(theirs);
    let mut reader_hot = warm(ours)?;
    let mut sync_hot = bench::synchronizer(theirs);
    let mut peers = [
        Peer {
            name: "edgewise uniform",
            lookup: Box::new(|k| our_lookup(&mut reader, k)),
            hist: Histogram::default(),
        },
        Peer {
            name: "mmap-sync uniform",
            lookup: Box::new(|k| their_lookup(&mut sync, k)),
            hist: Histogram::default(),
        },
    ];
    let mut hot = [
        Peer {
            name: "edgewise hot 1k",
            lookup: Box::new(|k| our_lookup(&mut reader_hot, k)),
            hist: Histogram::default(),
        },
        Peer {
            name: "mmap-sync hot 1k",
            lookup: Box::new(|k| their_lookup(&mut sync_hot, k)),
            hist: Histogram::default(),
        },
    ];
    let uniform = move |p: &mut Probes| bench::key(p.next_below(keys));
    let hot_keys = |p: &mut Probes| bench::key(p.next_below(1000));
    const CHUNK: usize = 10_000;
    for round in 0..args.samples.div_ceil(CHUNK) {
        for (i, peer) in peers.iter_mut().enumerate() {
            time_chunk(
                peer,
                &mut Probes::new((round * 2 + i) as u64 + 1),
                &uniform,
                CHUNK,
                overhead,
            );
        }
        if round % 4 == 0 {
            for peer in hot.iter_mut() {
                time_chunk(
                    peer,
                    &mut Probes::new(round as u64 + 7),
                    &hot_keys,
                    CHUNK,
                    overhead,
                );
            }
        }
    }
    let histograms = |peers: [Peer<'_>; 2]| peers.map(|p| (p.name, p.hist));
    print_rows(
        "4. lookup of one key's vector, no writer (ns per op)",
        &mut histograms(peers),
    );
    print_rows(
        "   hot keys (1k keys, cache-resident)",
        &mut histograms(hot),
    );
    Ok(())
}

/// Uniform lookups from `threads` threads at once, each with its own reader of `peer`.
fn threads_lookups(
    peer: &str,
    dir: &Path,
    keys: u64,
    samples: usize,
    threads: usize,
    overhead: u64,
) -> Histogram {
    let uniform = move |p: &mut Probes| bench::key(p.next_below(keys));
    let parts: Vec<Histogram> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || {
                    let mut reader = FeatureReader::open(dir).ok();
                    // The first read validates the version: not a lookup's cost.
                    if let Some(reader) = reader.as_mut() {
                        drop(reader.read());
                    }
                    let mut sync = bench::synchronizer(dir);
                    let lookup: Box<dyn FnMut(u64) -> f32 + '_> = match (peer, reader.as_mut()) {
                        ("edgewise", Some(reader)) => Box::new(|k| our_lookup(reader, k)),
                        _ => Box::new(|k| their_lookup(&mut sync, k)),
                    };
                    let mut peer = Peer {
                        name: "",
                        lookup,
                        hist: Histogram::default(),
                    };
                    time_chunk(
                        &mut peer,
                        &mut Probes::new(t as u64 + 11),
                        &uniform,
                        samples,
                        overhead,
                    );
                    peer.hist
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    parts
        .into_iter()
        .fold(Histogram::default(), |mut all, part| {
            all.merge(part);
            all
        })
}

/// Table 5: two reader threads at once against one, per peer (no writer).
fn parallel_readers(args: &Args, ours: &Path, theirs: &Path, overhead: u64) -> Res<()> {
    let samples = (args.samples / 2).max(1);
    println!("\n5. two readers at once vs one, uniform keys (ns per op; ratio: two / one)");
    println!(
        "{:<12} {:>9} {:>9} {:>9} {:>9} {:>12}",
        "", "1: p50", "2: p50", "1: p99", "2: p99", "ratio p50"
    );
    for (name, dir) in [("edgewise", ours), ("mmap-sync", theirs)] {
        let mut one = threads_lookups(name, dir, args.keys, samples, 1, overhead);
        let mut two = threads_lookups(name, dir, args.keys, samples, 2, overhead);
        let (a, b) = (one.quantile(0.5), two.quantile(0.5));
        println!(
            "{name:<12} {:>9} {:>9} {:>9} {:>9} {:>11.2}x",
            fmt_ns(a),
            fmt_ns(b),
            fmt_ns(one.quantile(0.99)),
            fmt_ns(two.quantile(0.99)),
            b / a
        );
    }
    Ok(())
}

/// Table 6: lookups while a writer process publishes the whole table back to back.
fn loaded_lookups(args: &Args, ours: &Path, theirs: &Path, overhead: u64) -> Res<()> {
    let keys = args.keys;
    let uniform = move |p: &mut Probes| bench::key(p.next_below(keys));
    let mut rows = Vec::new();
    let mut publishes = Vec::new();
    for name in ["edgewise", "mmap-sync"] {
        let dir = if name == "edgewise" { ours } else { theirs };
        let (mut child, times) = spawn_writer(name, dir, args)?;
        let mut reader = FeatureReader::open(ours)?;
        drop(reader.read()?);
        let mut sync = bench::synchronizer(theirs);
        let mut peer = match name {
            "edgewise" => Peer {
                name: "edgewise + writer",
                lookup: Box::new(|k| our_lookup(&mut reader, k)),
                hist: Histogram::default(),
            },
            _ => Peer {
                name: "mmap-sync + writer",
                lookup: Box::new(|k| their_lookup(&mut sync, k)),
                hist: Histogram::default(),
            },
        };
        let start = Instant::now();
        let mut probes = Probes::new(99);
        while start.elapsed() < Duration::from_secs(args.secs) {
            time_chunk(&mut peer, &mut probes, &uniform, 10_000, overhead);
        }
        child.kill()?;
        child.wait()?;
        let times: Vec<f64> = times.try_iter().collect();
        publishes.push((name, times));
        rows.push((peer.name, peer.hist));
    }
    print_rows(
        &format!(
            "6. lookups while another process publishes all {} keys back to back ({} s each; ns per op)",
            args.keys, args.secs
        ),
        &mut rows,
    );
    println!(
        "   (edgewise's max is a reader's first read of a new version: it validates it, table 2)"
    );
    println!("   publishes during the run: ");
    let medians: Vec<f64> = publishes.iter().map(|(_, t)| median(t.clone())).collect();
    for ((name, times), med) in publishes.iter().zip(&medians) {
        println!(
            "   {name:<10} {:>4} publishes, median {med:.1} ms",
            times.len()
        );
    }
    Ok(())
}

/// Starts this binary as a writer process for `peer`; its publish times (ms) arrive on the
/// channel. Returns once it has published at least once.
fn spawn_writer(peer: &str, dir: &Path, args: &Args) -> Res<(Child, mpsc::Receiver<f64>)> {
    let mut child = Command::new(std::env::current_exe()?)
        .env("STORE_BENCH_ROLE", peer)
        .env("STORE_BENCH_DIR", dir)
        .env("STORE_BENCH_KEYS", args.keys.to_string())
        .env("STORE_BENCH_DIMS", args.dims.to_string())
        .stdout(Stdio::piped())
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = mpsc::channel();
    let (first_tx, first_rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
            if let Ok(ms) = line.trim().parse::<f64>() {
                let _ = first_tx.send(());
                let _ = tx.send(ms);
            }
        }
    });
    first_rx.recv_timeout(Duration::from_secs(120))?;
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
        if peer == "edgewise" {
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
            eprintln!("store_latency writer: {e}");
            ExitCode::FAILURE
        }
    }
}
