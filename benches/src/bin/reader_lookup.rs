//! The C ABI beside the Rust reader: the same lookups of random keys in a store of N keys × 64
//! floats, each timed and each vector read whole, through `edgewise::FeatureReader` here and
//! through `ew_reader_get` in a C program (benches/c/lookup.c, linked to the release static
//! library), one after the other.
//!
//!   reader_lookup --c-bench PROGRAM [--keys N] [--lookups L]   (scripts/bench-python.sh)

use std::{hint::black_box, path::Path, process::ExitCode, time::Instant};

use edgewise::{FeatureReader, FeatureSnapshot, FeatureTable, FeatureWriter, WriterOptions};

const TABLE: &str = "features";
const DIM: usize = 64;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut program, mut keys, mut lookups) = (None, 1_000_000u64, 2_000_000usize);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--c-bench" => program = Some(value),
            "--keys" => keys = value.parse().unwrap_or(keys),
            "--lookups" => lookups = value.parse().unwrap_or(lookups),
            _ => {
                eprintln!("reader_lookup: unknown flag {flag}");
                return ExitCode::FAILURE;
            }
        }
    }
    let Some(program) = program else {
        eprintln!("reader_lookup: --c-bench PROGRAM is required");
        return ExitCode::FAILURE;
    };
    let dir = Path::new("/dev/shm").join(format!("edgewise-reader-lookup-{}", std::process::id()));
    let outcome = run(&dir, &program, keys, lookups);
    let _ = std::fs::remove_dir_all(&dir);
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reader_lookup: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(
    dir: &Path,
    program: &str,
    keys: u64,
    lookups: usize,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut table = FeatureTable::new(TABLE);
    table.rows = (0..keys).map(|k| (k, vec![k as f32; DIM])).collect();
    let snapshot = FeatureSnapshot {
        version: 1,
        created_unix_ms: 0,
        tables: vec![table],
    };
    let mut writer = FeatureWriter::open(dir, WriterOptions::default())?;
    writer.publish(&snapshot)?;
    drop(snapshot);

    let rust = rust_lookups(dir, keys, lookups)?;
    let output = std::process::Command::new(program)
        .arg(dir)
        .args([TABLE, &keys.to_string(), &lookups.to_string()])
        .output()?;
    if !output.status.success() {
        return Err(String::from_utf8_lossy(&output.stderr).into_owned().into());
    }
    let fields: Vec<f64> = String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    let [p50, p99, p999, rate, _] = fields[..] else {
        return Err("unexpected output from the C program".into());
    };
    let c = [p50, p99, p999, rate];
    println!(
        "\n### One lookup of a {DIM}-float vector, {keys} keys, random keys, {lookups} lookups\n"
    );
    println!("| reader | p50 ns | p99 ns | p99.9 ns | lookups/s | p50 vs Rust |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (name, [p50, p99, p999, rate]) in [
        ("Rust FeatureReader", rust),
        ("C ABI (ew_reader_get, from C)", c),
    ] {
        println!(
            "| {name} | {p50:.0} | {p99:.0} | {p999:.0} | {rate:.0} | {:.2}× |",
            p50 / rust[0]
        );
    }
    Ok(())
}

/// p50, p99, p99.9 (ns) and lookups per second through the Rust reader.
fn rust_lookups(
    dir: &Path,
    keys: u64,
    lookups: usize,
) -> Result<[f64; 4], Box<dyn std::error::Error>> {
    let mut reader = FeatureReader::open(dir)?;
    let mut samples = Vec::with_capacity(lookups);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let started = Instant::now();
    for _ in 0..lookups {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let key = state % keys;
        let before = Instant::now();
        let guard = reader.read()?;
        let values = guard
            .table(TABLE)
            .and_then(|t| t.get(key))
            .ok_or("key missing")?;
        black_box(values.iter().sum::<f32>());
        drop(guard);
        samples.push(before.elapsed().as_nanos() as u64);
    }
    let rate = lookups as f64 / started.elapsed().as_secs_f64();
    samples.sort_unstable();
    let at = |q: f64| samples[((q * lookups as f64) as usize).min(lookups - 1)] as f64;
    Ok([at(0.5), at(0.99), at(0.999), rate])
}
