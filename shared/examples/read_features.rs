//! An origin app reading ML features another process publishes (the daemon, or the
//! `publish_features` example):
//!
//!   cargo run -p edgewise --features store --example read_features -- DIR TABLE KEY
//!
//! Opening a reader maps the store; each `read()` is wait-free and the vector is read in place.
//! A real app keeps the reader (one per thread) and calls `read()` per request.

use std::process::ExitCode;

use edgewise::FeatureReader;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, table, key] = &args[..] else {
        eprintln!("usage: read_features DIR TABLE KEY");
        return ExitCode::from(2);
    };
    let Ok(key) = key.parse::<u64>() else {
        eprintln!("read_features: KEY must be a whole number: {key}");
        return ExitCode::from(2);
    };
    match lookup(dir, table, key) {
        Ok(found) => found,
        Err(e) => {
            eprintln!("read_features: {e}");
            ExitCode::FAILURE
        }
    }
}

fn lookup(dir: &str, table: &str, key: u64) -> Result<ExitCode, edgewise::StoreError> {
    let mut reader = FeatureReader::open(dir.as_ref())?;
    let guard = reader.read()?;
    if let Some(refused) = guard.refused() {
        eprintln!("read_features: serving the last good version; newer one refused: {refused}");
    }
    let features = guard.table(table).and_then(|t| t.get(key));
    println!("version {}", guard.version());
    match features {
        Some(vector) => {
            println!("{table}[{key}] = {vector:?}");
            Ok(ExitCode::SUCCESS)
        }
        None => {
            println!("{table}[{key}] not found");
            Ok(ExitCode::from(1))
        }
    }
}
