//! Features for a fleet: snapshot ingest by format, and the time from `snapshot push` to every
//! daemon serving the new version.
//!
//!   source [--keys N] [--dim D] [--fleet-keys N] [--daemons K]   (scripts/bench-source.sh)
//!
//! Ingest: one table of N keys × D random floats written as CSV and as Parquet (the layouts
//! pandas, Polars and Spark write: one `list<float32>` column, or one column per feature;
//! snappy, their default codec), each decoded by the daemon's own reader
//! (`edgewised::read_snapshot_file`), best of three, in the same run.
//!
//! Fleet: a real s3proxy and K real `edgewised` processes polling it every second; a snapshot
//! of `--fleet-keys` keys is pushed (upload, then manifest) and timed until all K serve it.

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use arrow_array::{
    ArrayRef, Float32Array, RecordBatch, UInt64Array,
    builder::{Float32Builder, ListBuilder},
};
use edgewise::FeatureReader;
use edgewise_benches::loadgen::flags;
use edgewise_daemon::{SourceConfig, push_snapshot, read_snapshot_file};
use edgewise_tests::{
    Daemon, SECRET, http_authorized,
    s3proxy::{ACCESS_KEY, S3Proxy, SECRET_KEY},
    sample,
};
use parquet::{arrow::ArrowWriter, basic::Compression, file::properties::WriterProperties};

#[derive(Debug, Clone, Copy)]
struct Args {
    keys: u64,
    dim: usize,
    fleet_keys: u64,
    daemons: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        keys: 1_000_000,
        dim: 64,
        fleet_keys: 1_000_000,
        daemons: 3,
    };
    flags(|flag, value: u64| {
        match flag {
            "--keys" => args.keys = value,
            "--dim" => args.dim = value as usize,
            "--fleet-keys" => args.fleet_keys = value,
            "--daemons" => args.daemons = value as usize,
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    Ok(args)
}

fn main() -> ExitCode {
    let dir = std::env::temp_dir().join(format!("edgewise-bench-source-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let outcome = parse_args().map_err(anyhow::Error::msg).and_then(|args| {
        std::fs::create_dir_all(&dir)?;
        ingest(&dir, args)?;
        fleet(&dir, args)
    });
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("source: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Random features in [0, 1), the same for every format.
fn values(keys: u64, dim: usize) -> Vec<f32> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..keys as usize * dim)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        })
        .collect()
}

fn write_csv(path: &Path, keys: u64, dim: usize, values: &[f32]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (key, row) in (0..keys).zip(values.chunks(dim)) {
        write!(out, "{key}")?;
        for v in row {
            write!(out, ",{v}")?;
        }
        writeln!(out)?;
    }
    out.flush()?;
    Ok(())
}

/// Parquet in row groups of 64k rows, snappy; one list column or one column per feature.
fn write_parquet(
    path: &Path,
    keys: u64,
    dim: usize,
    values: &[f32],
    list: bool,
) -> anyhow::Result<()> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = None;
    let group = 65_536u64;
    for start in (0..keys).step_by(group as usize) {
        let end = (start + group).min(keys);
        let rows = &values[start as usize * dim..end as usize * dim];
        let mut columns: Vec<(String, ArrayRef)> = vec![(
            "key".into(),
            Arc::new(UInt64Array::from_iter_values(start..end)),
        )];
        if list {
            let mut builder = ListBuilder::new(Float32Builder::new());
            for row in rows.chunks(dim) {
                builder.values().append_slice(row);
                builder.append(true);
            }
            columns.push(("features".into(), Arc::new(builder.finish())));
        } else {
            for f in 0..dim {
                let column = rows.chunks(dim).map(|row| row[f]);
                columns.push((
                    format!("f{f}"),
                    Arc::new(Float32Array::from_iter_values(column)),
                ));
            }
        }
        let batch = RecordBatch::try_from_iter(columns)?;
        if writer.is_none() {
            let file = std::fs::File::create(path)?;
            writer = Some(ArrowWriter::try_new(
                file,
                batch.schema(),
                Some(properties.clone()),
            )?);
        }
        if let Some(writer) = writer.as_mut() {
            writer.write(&batch)?;
        }
    }
    writer.ok_or_else(|| anyhow::anyhow!("no rows"))?.close()?;
    Ok(())
}

/// The snapshot files of the ingest comparison.
fn files(dir: &Path, keys: u64, dim: usize) -> anyhow::Result<Vec<(&'static str, PathBuf)>> {
    let values = values(keys, dim);
    let files = vec![
        ("CSV", dir.join("csv.csv")),
        ("Parquet, list<float32>", dir.join("list.parquet")),
        ("Parquet, f0..fN columns", dir.join("columns.parquet")),
    ];
    write_csv(&files[0].1, keys, dim, &values)?;
    write_parquet(&files[1].1, keys, dim, &values, true)?;
    write_parquet(&files[2].1, keys, dim, &values, false)?;
    Ok(files)
}

fn ingest(dir: &Path, args: Args) -> anyhow::Result<()> {
    eprintln!(
        "writing {} keys × {} floats in three formats",
        args.keys, args.dim
    );
    let files = files(dir, args.keys, args.dim)?;
    let payload = args.keys as f64 * (8.0 + 4.0 * args.dim as f64) / 1e6;
    println!(
        "\n### Snapshot ingest: {} keys × {} floats ({payload:.0} MB of rows), best of 3\n",
        args.keys, args.dim
    );
    println!("| format | file MB | decode s | file MB/s | rows MB/s | speed vs CSV |");
    println!("|---|---:|---:|---:|---:|---:|");
    let mut csv_secs = None;
    for (name, path) in &files {
        let size = std::fs::metadata(path)?.len() as f64 / 1e6;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let started = Instant::now();
            let tables = read_snapshot_file(path, Some("t"), u64::MAX)?;
            best = best.min(started.elapsed().as_secs_f64());
            anyhow::ensure!(
                tables[0].rows.len() as u64 == args.keys,
                "{name}: rows lost"
            );
        }
        let base = *csv_secs.get_or_insert(best);
        println!(
            "| {name} | {size:.0} | {best:.2} | {:.0} | {:.0} | {:.2}× |",
            size / best,
            payload / best,
            base / best
        );
    }
    Ok(())
}

fn fleet(dir: &Path, args: Args) -> anyhow::Result<()> {
    let s3 = S3Proxy::start("bench");
    let url = "s3://features/fleet";
    let mut source = SourceConfig::new(url);
    source.options = [
        ("aws_endpoint", s3.endpoint()),
        ("aws_allow_http", "true".into()),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", ACCESS_KEY.into()),
        ("aws_secret_access_key", SECRET_KEY.into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;

    let snapshot = dir.join("fleet.parquet");
    let values = values(args.fleet_keys, args.dim);
    write_parquet(&snapshot, args.fleet_keys, args.dim, &values, true)?;
    drop(values);
    let pushed = runtime.block_on(push_snapshot(&source, &snapshot, Some("t"), u64::MAX))?;

    let stores: Vec<PathBuf> = (0..args.daemons)
        .map(|i| dir.join(format!("d{i}")))
        .collect();
    let daemons: Vec<Daemon> = stores
        .iter()
        .map(|store| start(store, &s3))
        .collect::<anyhow::Result<_>>()?;
    wait(&stores, pushed.manifest.version, Duration::from_secs(600))?;

    println!(
        "\n### From `snapshot push` to {} daemons serving: {} keys × {} floats, Parquet {:.0} MB, polls every 1 s\n",
        args.daemons,
        args.fleet_keys,
        args.dim,
        pushed.manifest.size as f64 / 1e6
    );
    println!(
        "| run | push (check, upload, manifest) s | first daemon serving s | last daemon serving s | download s, mean of daemons |"
    );
    println!("|---|---:|---:|---:|---:|");
    for run in 1..=3 {
        // A new object each run: the version is in its name, the bytes are the same.
        let downloading = download_secs(&daemons);
        let started = Instant::now();
        let pushed = runtime.block_on(push_snapshot(&source, &snapshot, Some("t"), u64::MAX))?;
        let upload = started.elapsed().as_secs_f64();
        let (first, last) = wait(&stores, pushed.manifest.version, Duration::from_secs(600))?;
        let download = (download_secs(&daemons) - downloading) / daemons.len() as f64;
        println!(
            "| {run} | {upload:.2} | {:.2} | {:.2} | {download:.2} |",
            (first - started).as_secs_f64(),
            (last - started).as_secs_f64()
        );
    }
    drop(daemons);
    Ok(())
}

fn start(store: &Path, s3: &S3Proxy) -> anyhow::Result<Daemon> {
    let config = store.with_extension("toml");
    let text = format!(
        "[features]\ndir = {store:?}\nmax_ingest_bytes = {}\n\n[features.source]\n\
         url = \"s3://features/fleet\"\npoll_interval_secs = 1\npoll_jitter_ms = 100\n\
         options = {{ aws_endpoint = {:?}, aws_allow_http = \"true\", \
         aws_region = \"us-east-1\" }}\n",
        8u64 << 30,
        s3.endpoint()
    );
    std::fs::write(&config, text)?;
    Ok(Daemon::start_with_env(
        &["--config", config.to_str().unwrap_or_default()],
        &[
            ("EDGEWISED_API_SECRET", SECRET),
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY),
        ],
    ))
}

/// Seconds the daemons spent downloading snapshots so far, summed.
fn download_secs(daemons: &[Daemon]) -> f64 {
    let series = "edgewise_features_source_download_seconds_sum";
    daemons
        .iter()
        .map(|d| sample(&http_authorized(d.addr, "/metrics").1, series).unwrap_or(0.0))
        .sum()
}

/// When the first and the last of `stores` served `version`.
fn wait(stores: &[PathBuf], version: u64, within: Duration) -> anyhow::Result<(Instant, Instant)> {
    let deadline = Instant::now() + within;
    let mut served: Vec<Option<Instant>> = vec![None; stores.len()];
    while served.iter().any(Option::is_none) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "version {version} not served within {within:?}"
        );
        for (store, at) in stores.iter().zip(served.iter_mut()) {
            let now = FeatureReader::open(store)
                .and_then(|mut r| r.read().map(|g| g.version()))
                .unwrap_or(0);
            if at.is_none() && now >= version {
                *at = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let times: Vec<Instant> = served.into_iter().flatten().collect();
    let first = times.iter().min().copied().unwrap_or_else(Instant::now);
    let last = times.iter().max().copied().unwrap_or_else(Instant::now);
    Ok((first, last))
}
