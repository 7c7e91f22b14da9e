//! Feature fetch latency, the bliss article's before and after, through edgewised itself.
//!
//!   features [--keys N] [--dim D] [--lookups L]     (scripts/bench-store.sh runs it in release)
//!
//! The daemon (in this process, its own threads) publishes N keys of D floats; then a client
//! fetches random keys one at a time: from the mapped store with `FeatureReader` (after), over
//! the daemon's Unix socket in the memcached text protocol (before), and over
//! `GET /v1/features/{table}/{key}` for remote consumers. A second pass repeats the mapped reads
//! while the daemon publishes new versions back to back through `PUT /v1/features`.

use std::{
    io::{BufRead, BufReader, Read, Write},
    os::unix::net::UnixStream,
    path::Path,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Instant,
};

use edgewise::{FeatureReader, FeatureSnapshot};
use edgewise_benches::loadgen::{Latencies, Row, flags, print_table};
use edgewise_daemon::{Change, Config, Features, FeaturesConfig, Server};

const SECRET: &str = "bench-secret-0123456789abcdef";
const TABLE: &str = "features";

#[derive(Debug, Clone, Copy)]
struct Args {
    keys: u64,
    dim: usize,
    lookups: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        keys: 1_000_000,
        dim: 64,
        lookups: 200_000,
    };
    flags(|flag, value: u64| {
        match flag {
            "--keys" => args.keys = value,
            "--dim" => args.dim = value as usize,
            "--lookups" => args.lookups = value as usize,
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    Ok(args)
}

fn main() -> ExitCode {
    match parse_args().map_err(anyhow::Error::msg).and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("features: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("edgewise-bench-features-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let outcome = bench(&dir, args);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

fn bench(dir: &Path, args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let mut config = Config::default();
    config.server.listen = ([127, 0, 0, 1], 0).into();
    config.features = FeaturesConfig {
        dir: Some(dir.join("store")),
        socket: Some(dir.join("features.sock")),
        ..FeaturesConfig::default()
    };
    let secret_file = dir.join("secret");
    std::fs::write(&secret_file, SECRET)?;
    config.api.secret_file = Some(secret_file);
    let server = runtime.block_on(Server::bind(config))?;
    let addr = server.local_addr()?;
    let features = server
        .features()
        .ok_or_else(|| anyhow::anyhow!("no feature store"))?;
    runtime.spawn(server.run(std::future::pending()));

    let full = snapshot(args);
    let started = Instant::now();
    let published = features.apply_now(Change::ReplaceAll(full))?;
    println!(
        "published {} keys × {} floats ({} MiB) in {:.0} ms",
        published.keys,
        args.dim,
        published.bytes >> 20,
        started.elapsed().as_secs_f64() * 1e3
    );

    let keys = random_keys(args);
    let mut rows = vec![
        mapped(dir, &keys, "FeatureReader (mapped store)")?,
        socket(dir, &keys)?,
        http(addr, &keys[..keys.len().min(50_000)])?,
    ];
    print_table(
        "feature fetch, one client, random keys (after: mapped; before: socket)",
        &rows,
    );
    rows.clear();

    let stop = Arc::new(AtomicBool::new(false));
    let publishes = Arc::new(AtomicU64::new(0));
    let publisher = {
        let features = Arc::clone(&features);
        let stop = Arc::clone(&stop);
        let publishes = Arc::clone(&publishes);
        std::thread::spawn(move || republish(&features, &stop, &publishes, args))
    };
    rows.push(mapped_while(dir, &keys, &publishes)?);
    stop.store(true, Ordering::Relaxed);
    let versions = publisher
        .join()
        .map_err(|_| anyhow::anyhow!("publisher panicked"))??;
    rows[0].note = format!(
        "{versions} versions of {} keys published during the run",
        args.keys
    );
    print_table(
        "mapped reads with the daemon publishing back to back",
        &rows,
    );
    Ok(())
}

fn snapshot(args: Args) -> FeatureSnapshot {
    let mut snapshot = FeatureSnapshot::default();
    let table = &mut snapshot.table_mut(TABLE).rows;
    for key in 0..args.keys {
        table.insert(
            key,
            (0..args.dim)
                .map(|i| (key as f32) + i as f32 * 0.001)
                .collect(),
        );
    }
    snapshot
}

fn random_keys(args: Args) -> Vec<u64> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..args.lookups)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % args.keys
        })
        .collect()
}

fn mapped(dir: &Path, keys: &[u64], name: &str) -> anyhow::Result<Row> {
    let mut reader = FeatureReader::open(&dir.join("store"))?;
    let mut latencies = Latencies::default();
    let mut sum = 0.0f32;
    let started = Instant::now();
    for &key in keys {
        sum += timed_lookup(&mut reader, key, &mut latencies)?;
    }
    std::hint::black_box(sum);
    Ok(Row::new(name, latencies, started.elapsed(), String::new()))
}

/// Mapped reads, cycling through `keys`, until the publisher has finished
/// [`PUBLISHES_DURING_READS`] versions.
fn mapped_while(dir: &Path, keys: &[u64], publishes: &AtomicU64) -> anyhow::Result<Row> {
    let mut reader = FeatureReader::open(&dir.join("store"))?;
    let mut latencies = Latencies::default();
    let mut sum = 0.0f32;
    let started = Instant::now();
    for &key in keys.iter().cycle() {
        if publishes.load(Ordering::Relaxed) >= PUBLISHES_DURING_READS {
            break;
        }
        sum += timed_lookup(&mut reader, key, &mut latencies)?;
    }
    std::hint::black_box(sum);
    Ok(Row::new(
        "FeatureReader while publishing",
        latencies,
        started.elapsed(),
        String::new(),
    ))
}

/// One mapped lookup, timed, reading the whole vector (as the socket's client receives it);
/// returns its sum so the work is not optimized out.
fn timed_lookup(
    reader: &mut FeatureReader,
    key: u64,
    latencies: &mut Latencies,
) -> anyhow::Result<f32> {
    let t = Instant::now();
    let guard = reader.read()?;
    let values = guard
        .table(TABLE)
        .and_then(|table| table.get(key))
        .ok_or_else(|| anyhow::anyhow!("key {key} missing"))?;
    let sum = values.iter().sum();
    latencies.record(t.elapsed());
    Ok(sum)
}

fn socket(dir: &Path, keys: &[u64]) -> anyhow::Result<Row> {
    let stream = UnixStream::connect(dir.join("features.sock"))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut latencies = Latencies::default();
    let mut line = String::new();
    let mut value = Vec::new();
    let started = Instant::now();
    for &key in keys {
        let t = Instant::now();
        writer.write_all(format!("get {TABLE}:{key}\r\n").as_bytes())?;
        line.clear();
        reader.read_line(&mut line)?;
        let len: usize = line
            .split_whitespace()
            .nth(3)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("unexpected reply {line:?}"))?;
        value.resize(len + 2 + 5, 0);
        reader.read_exact(&mut value)?;
        latencies.record(t.elapsed());
    }
    Ok(Row::new(
        "memcached text over a Unix socket",
        latencies,
        started.elapsed(),
        "the article's before path".into(),
    ))
}

fn http(addr: std::net::SocketAddr, keys: &[u64]) -> anyhow::Result<Row> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut connection = edgewise_benches::loadgen::HttpConnection::connect(addr).await?;
        let auth = format!("Bearer {SECRET}");
        let mut latencies = Latencies::default();
        let started = Instant::now();
        for &key in keys {
            let t = Instant::now();
            let path = format!("/v1/features/{TABLE}/{key}");
            let (status, _) = connection.send("GET", &path, &auth, b"").await?;
            anyhow::ensure!(status == 200, "GET {path}: {status}");
            latencies.record(t.elapsed());
        }
        Ok(Row::new(
            "GET /v1/features over HTTP",
            latencies,
            started.elapsed(),
            "JSON, for remote consumers".into(),
        ))
    })
}

/// Versions the daemon publishes while the mapped reads under publishing run.
const PUBLISHES_DURING_READS: u64 = 5;

/// Publishes one-row batches back to back (each republishes the whole snapshot) until told to
/// stop; returns how many versions.
fn republish(
    features: &Features,
    stop: &AtomicBool,
    publishes: &AtomicU64,
    args: Args,
) -> anyhow::Result<u64> {
    let mut versions = 0;
    while !stop.load(Ordering::Relaxed) {
        let key = versions % args.keys;
        let upsert = edgewise_daemon::Upsert {
            table: TABLE.into(),
            key,
            values: vec![versions as f32; args.dim],
        };
        features.apply_now(Change::Batch {
            upserts: vec![upsert],
            deletes: Vec::new(),
        })?;
        versions += 1;
        publishes.store(versions, Ordering::Relaxed);
    }
    Ok(versions)
}
