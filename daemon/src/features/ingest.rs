//! Snapshot files dropped into the ingest directory.
//!
//! `<table>.csv` replaces one table (format in [`csv`]); `<name>.ewfs` (an archive written by
//! `edgewise::FeatureSnapshot::to_archive`) replaces every table. A file is taken once its size
//! and modification time held still over one scan interval; names starting with `.` are
//! ignored, so writing to `.name` and renaming it in is the safe way to drop one.
//! Each file becomes one published version and is moved to `done/`; a bad file changes nothing
//! and is moved to `rejected/` beside a `<name>.error` saying why. A good file the store fails
//! to publish (a full disk) stays where it is and is tried again each interval: its change is
//! held in memory and goes out with the next publish, so it is not rejected.

pub(super) mod csv;

use std::{
    collections::HashMap,
    fs,
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use edgewise::FeatureSnapshot;

use super::{Change, Features, PublishError, Published, change::table_name};

type Stamp = (u64, SystemTime);

/// Starts scanning `dir` every `interval`; creates it and its `done/`, `rejected/` children.
pub(super) fn spawn(features: Arc<Features>, dir: &Path, interval: Duration) -> anyhow::Result<()> {
    for sub in ["", "done", "rejected"] {
        fs::create_dir_all(dir.join(sub)).with_context(|| {
            format!("creating the ingest directory {}", dir.join(sub).display())
        })?;
    }
    let dir = dir.to_owned();
    tokio::spawn(async move {
        let mut waiting: HashMap<PathBuf, Stamp> = HashMap::new();
        loop {
            let ready = settled(&dir, &mut waiting);
            for path in ready {
                let features = Arc::clone(&features);
                let dir = dir.clone();
                let _ = tokio::task::spawn_blocking(move || ingest(&features, &dir, &path)).await;
            }
            tokio::time::sleep(interval).await;
        }
    });
    Ok(())
}

/// Files whose stamp did not change since the previous scan; remembers the others.
fn settled(dir: &Path, waiting: &mut HashMap<PathBuf, Stamp>) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut ready = Vec::new();
    let mut seen = HashMap::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if hidden || !meta.is_file() {
            continue;
        }
        let stamp = (
            meta.len(),
            meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
        );
        if waiting.get(&path) == Some(&stamp) {
            ready.push(path);
        } else {
            seen.insert(path, stamp);
        }
    }
    *waiting = seen;
    ready.sort();
    ready
}

/// Parses, publishes and files away one snapshot file.
fn ingest(features: &Features, dir: &Path, path: &Path) {
    let closed = super::lock(&features.ingest_gate);
    if *closed {
        return;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tracing::info!(file = %name, "ingesting a feature snapshot file");
    let change = match read(path, &name) {
        Ok(change) => change,
        Err(error) => return reject(features, dir, path, &name, &error),
    };
    match features.apply_now(change) {
        Ok(Published { version, keys, .. }) => {
            features.metrics.ingested.inc();
            tracing::info!(file = %name, version, keys, "feature snapshot file published");
            file_away(path, &dir.join("done").join(format!("{name}.v{version}")));
        }
        // Filed as rejected, its change went out all the same with the next publish.
        Err(PublishError::Store(error)) => {
            tracing::error!(file = %name, %error, "feature snapshot file not published: the store failed; the file stays to be tried again, the last good version keeps serving");
        }
        Err(error @ PublishError::Invalid(_)) => {
            reject(features, dir, path, &name, &anyhow::Error::from(error));
        }
    }
}

/// Moves a bad file to `rejected/`, beside a `<name>.error` saying why.
fn reject(features: &Features, dir: &Path, path: &Path, name: &str, error: &anyhow::Error) {
    features.metrics.rejected_files.inc();
    let reason = format!("{error:#}");
    tracing::error!(file = %name, error = %reason, "feature snapshot file rejected, the last good version keeps serving");
    let target = dir.join("rejected").join(name);
    file_away(path, &target);
    let _ = fs::write(
        target.with_file_name(format!("{name}.error")),
        reason + "\n",
    );
}

fn read(path: &Path, name: &str) -> anyhow::Result<Change> {
    if let Some(table) = name.strip_suffix(".csv") {
        table_name(table)?;
        let text = fs::read_to_string(path).context("reading")?;
        let rows = csv::parse(&text)?;
        return Ok(Change::ReplaceTable {
            table: table.to_owned(),
            rows,
        });
    }
    if name.ends_with(".ewfs") {
        let bytes = fs::read(path).context("reading")?;
        return Ok(Change::ReplaceAll(FeatureSnapshot::from_archive(&bytes)?));
    }
    anyhow::bail!("unknown snapshot file type: expected <table>.csv or <name>.ewfs")
}

fn file_away(from: &Path, to: &Path) {
    if let Err(error) = fs::rename(from, to) {
        tracing::error!(%error, from = %from.display(), "cannot move an ingested file away; removing it");
        let _ = fs::remove_file(from);
    }
}
