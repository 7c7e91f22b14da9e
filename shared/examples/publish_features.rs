//! A tiny writer to try the store end to end (the daemon is the real one): publishes `COUNT`
//! versions, `EVERY_MS` apart, of one table `demo` with keys `0..KEYS`, each a vector of
//! `DIMS` floats all equal to the version, so a reader can see which version it got.
//!
//!   cargo run -p edgewise --features store --example publish_features -- DIR [KEYS DIMS COUNT EVERY_MS]
//!   cargo run -p edgewise --features store --example read_features -- DIR demo 7

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use edgewise::{FeatureSnapshot, FeatureTable, FeatureWriter, WriterOptions};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first() else {
        eprintln!("usage: publish_features DIR [KEYS DIMS COUNT EVERY_MS]");
        return ExitCode::from(2);
    };
    let number = |i: usize, default: u64| args.get(i).map_or(Ok(default), |a| a.parse::<u64>());
    let (Ok(keys), Ok(dims), Ok(count), Ok(every)) = (
        number(1, 1000),
        number(2, 64),
        number(3, 1),
        number(4, 1000),
    ) else {
        eprintln!("publish_features: KEYS DIMS COUNT EVERY_MS are whole numbers");
        return ExitCode::from(2);
    };
    match publish(dir, keys, dims, count, Duration::from_millis(every)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("publish_features: {e}");
            ExitCode::FAILURE
        }
    }
}

fn publish(
    dir: &str,
    keys: u64,
    dims: u64,
    count: u64,
    every: Duration,
) -> Result<(), edgewise::StoreError> {
    let mut writer = FeatureWriter::open(dir.as_ref(), WriterOptions::default())?;
    for i in 0..count {
        if i > 0 {
            std::thread::sleep(every);
        }
        let version = writer.version() + 1;
        let mut table = FeatureTable::new("demo");
        table.rows = (0..keys)
            .map(|key| (key, vec![version as f32; dims as usize]))
            .collect();
        let snapshot = FeatureSnapshot {
            version,
            created_unix_ms: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64),
            tables: vec![table],
        };
        let report = writer.publish(&snapshot)?;
        println!(
            "published version {} ({} bytes) in {:?}, waited {:?} for readers",
            report.version, report.bytes, report.duration, report.waited
        );
    }
    Ok(())
}
