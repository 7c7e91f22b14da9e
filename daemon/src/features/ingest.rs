//! Snapshot files dropped into the ingest directory.
//!
//! `<table>.csv` replaces one table (format in [`csv`]); `<table>.parquet` the table it names
//! or, with a `table` column, the tables that column names (format in [`parquet`]);
//! `<name>.ewfs` (an archive written by `edgewise::FeatureSnapshot::to_archive`) replaces
//! every table. A file is taken once its size and modification time held still over one scan
//! interval; names starting with `.` are ignored, so writing to `.name` and renaming it in is
//! the safe way to drop one.
//! Each file becomes one published version and is moved to `done/`; a bad file changes nothing
//! and is moved to `rejected/` beside a `<name>.error` saying why. A good file the store fails
//! to publish (a full disk) stays where it is and is tried again each interval: its change is
//! held in memory and goes out with the next publish, so it is not rejected.
//!
//! Whoever can write the directory is not trusted with anything else: a file is opened without
//! following a symlink and taken only if it is a regular file of one link, at most
//! `features.max_ingest_bytes` long (a FIFO, a device or a hard link to a secret is refused
//! unread), and no byte of a file is ever copied into a log or an `.error` file, which is
//! created anew, never through a link left in its place.

pub(super) mod csv;
pub(super) mod parquet;

use std::{
    collections::HashMap,
    fs,
    io::{Read, Write},
    os::unix::fs::{MetadataExt, OpenOptionsExt},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use edgewise::{FeatureSnapshot, FeatureTable};

use super::{Change, Features, PublishError, Published, change::table_name};

type Stamp = (u64, SystemTime);

/// Starts scanning `dir` every `interval`; creates it and its `done/`, `rejected/` children.
/// Files longer than `max_bytes` are rejected unread.
pub(super) fn spawn(
    features: Arc<Features>,
    dir: &Path,
    interval: Duration,
    max_bytes: u64,
) -> anyhow::Result<()> {
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
                let _ = tokio::task::spawn_blocking(move || {
                    ingest(&features, &dir, &path, max_bytes);
                })
                .await;
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
fn ingest(features: &Features, dir: &Path, path: &Path, max_bytes: u64) {
    let closed = super::lock(&features.ingest_gate);
    if *closed {
        return;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tracing::info!(file = %name, "ingesting a feature snapshot file");
    let change = match read(path, &name, max_bytes) {
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
    let error_file = target.with_file_name(format!("{name}.error"));
    if let Err(error) = write_whole(&error_file, format!("{reason}\n").as_bytes(), 0o640) {
        tracing::error!(file = %name, %error, "cannot write the rejected file's .error beside it");
    }
}

/// Replaces `path` whole with `bytes`: written to a hidden file made anew beside it (see
/// [`create_anew`]), then renamed over it, so a reader sees the old file or the new one, never
/// a part (a rename replaces a link at `path`, never follows it).
pub(super) fn write_whole(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let hidden = path.with_file_name(format!(".{name}.tmp"));
    create_anew(&hidden, mode)?.write_all(bytes)?;
    fs::rename(&hidden, path)
}

/// A file made anew at `path`, open to read and write: whatever was there (an earlier file, or
/// a symlink someone left to make the daemon write elsewhere) is removed, and the file is
/// created with `O_EXCL | O_NOFOLLOW`, so a link put back in between fails the open.
pub(super) fn create_anew(path: &Path, mode: u32) -> std::io::Result<fs::File> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(mode)
        .open(path)
}

fn read(path: &Path, name: &str, max_bytes: u64) -> anyhow::Result<Change> {
    let Some((format, stem)) = Format::of(name) else {
        anyhow::bail!(
            "unknown snapshot file type: expected <table>.csv, <table>.parquet or <name>.ewfs"
        )
    };
    let bytes = read_dropped(path, max_bytes)?;
    let contents = Contents::Bytes(bytes.into());
    Ok(match decode(format, contents, Some(stem), max_bytes)? {
        Decoded::Tables(tables) => Change::ReplaceTables(tables),
        Decoded::All(snapshot) => Change::ReplaceAll(snapshot),
    })
}

/// The tables of snapshot file `path`, decoded as the ingest directory and a source decode
/// them: its format from its name, rows without a table in `table` or the table the file is
/// named after, at most `max_bytes` of rows.
pub fn read_file(
    path: &Path,
    table: Option<&str>,
    max_bytes: u64,
) -> anyhow::Result<Vec<FeatureTable>> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    let (format, stem) = Format::of(name)
        .context("the file's name must end in .parquet, .csv or .ewfs (its format)")?;
    let file = fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let decoded = decode(
        format,
        Contents::File(file),
        Some(table.unwrap_or(stem)),
        max_bytes,
    )?;
    Ok(decoded.into_tables())
}

/// A snapshot file's format, known from its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// `<table>.csv`, see [`csv`].
    Csv,
    /// `<table>.parquet`, see [`parquet`].
    Parquet,
    /// `<name>.ewfs`, an archive of every table.
    Archive,
}

impl Format {
    /// The format of a file called `name`, and the name without its extension.
    pub(super) fn of(name: &str) -> Option<(Format, &str)> {
        [
            (".csv", Format::Csv),
            (".parquet", Format::Parquet),
            (".ewfs", Format::Archive),
        ]
        .into_iter()
        .find_map(|(suffix, format)| Some((format, name.strip_suffix(suffix)?)))
    }
}

/// A snapshot file's bytes, in memory or in a file of its own.
#[derive(Debug)]
pub(super) enum Contents {
    Bytes(bytes::Bytes),
    File(fs::File),
}

/// What a snapshot file holds.
#[derive(Debug)]
pub(super) enum Decoded {
    /// Some tables (CSV, Parquet).
    Tables(Vec<FeatureTable>),
    /// Every table (an archive).
    All(FeatureSnapshot),
}

impl Decoded {
    /// Every table the file holds.
    pub(super) fn into_tables(self) -> Vec<FeatureTable> {
        match self {
            Decoded::Tables(tables) => tables,
            Decoded::All(snapshot) => snapshot.tables,
        }
    }
}

/// Decodes a snapshot file; rows of a CSV file, and of a Parquet file without a `table`
/// column, belong to `table`. Decoded rows larger than `max_bytes` are refused.
pub(super) fn decode(
    format: Format,
    contents: Contents,
    table: Option<&str>,
    max_bytes: u64,
) -> anyhow::Result<Decoded> {
    let bytes = match (format, contents) {
        // Parquet is read where it lies: its footer first, then the columns it needs.
        (Format::Parquet, Contents::File(file)) => {
            return Ok(Decoded::Tables(parquet::parse(file, table, max_bytes)?));
        }
        (_, Contents::Bytes(bytes)) => bytes,
        (_, Contents::File(file)) => {
            let mut bytes = Vec::new();
            file.take(max_bytes.saturating_add(1))
                .read_to_end(&mut bytes)
                .context("reading")?;
            anyhow::ensure!(
                bytes.len() as u64 <= max_bytes,
                "larger than {max_bytes} bytes"
            );
            bytes.into()
        }
    };
    match format {
        Format::Csv => {
            let name = table.context("no table name for the CSV rows")?;
            table_name(name)?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|e| anyhow::anyhow!("not UTF-8 text (byte {})", e.valid_up_to()))?;
            let mut table = FeatureTable::new(name);
            table.rows = csv::parse(text, max_bytes)?;
            Ok(Decoded::Tables(vec![table]))
        }
        Format::Parquet => Ok(Decoded::Tables(parquet::parse(bytes, table, max_bytes)?)),
        Format::Archive => Ok(Decoded::All(FeatureSnapshot::from_archive(&bytes)?)),
    }
}

/// The contents of a dropped file, if it is a regular file of its own at most `max_bytes`
/// long: opened without following a symlink and without blocking (a FIFO opened for reading
/// waits for a writer), then checked on the descriptor itself, so that a file swapped for
/// something else after the scan saw it is refused, not read.
fn read_dropped(path: &Path, max_bytes: u64) -> anyhow::Result<Vec<u8>> {
    let file = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => anyhow::anyhow!("a symlink: not followed"),
            _ => anyhow::Error::from(e).context("opening"),
        })?;
    let meta = file.metadata().context("reading its metadata")?;
    if !meta.file_type().is_file() {
        anyhow::bail!("not a regular file");
    }
    if meta.nlink() > 1 {
        anyhow::bail!("a hard link to a file with other names: not read");
    }
    if meta.len() > max_bytes {
        anyhow::bail!(
            "{} bytes, larger than features.max_ingest_bytes ({max_bytes})",
            meta.len()
        );
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .context("reading")?;
    if bytes.len() as u64 > max_bytes {
        anyhow::bail!("grew past features.max_ingest_bytes ({max_bytes}) while read");
    }
    Ok(bytes)
}

fn file_away(from: &Path, to: &Path) {
    if let Err(error) = fs::rename(from, to) {
        tracing::error!(%error, from = %from.display(), "cannot move an ingested file away; removing it");
        let _ = fs::remove_file(from);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("edgewise-ingest-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn refusal(path: &Path, max: u64) -> String {
        format!("{:#}", read_dropped(path, max).unwrap_err())
    }

    #[test]
    fn only_a_regular_file_of_its_own_within_the_cap_is_read() {
        let dir = scratch("read");
        let secret = dir.join("secret");
        fs::write(&secret, "1,2\n").unwrap();
        let plain = dir.join("plain.csv");
        fs::write(&plain, "1,2\n").unwrap();
        assert_eq!(read_dropped(&plain, 4).unwrap(), b"1,2\n");
        assert!(refusal(&plain, 3).contains("max_ingest_bytes"));

        let link = dir.join("link.csv");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        assert!(refusal(&link, 1 << 20).contains("symlink"));

        let hard = dir.join("hard.csv");
        fs::hard_link(&secret, &hard).unwrap();
        assert!(refusal(&hard, 1 << 20).contains("hard link"));

        // A FIFO nobody writes to: refused at once, not waited on.
        let fifo = dir.join("fifo.csv");
        let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `path` is a NUL-terminated string that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
        assert!(refusal(&fifo, 1 << 20).contains("not a regular file"));

        assert!(refusal(&dir, 1 << 20).contains("not a regular file"));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_error_file_is_made_anew_never_through_a_link() {
        let dir = scratch("error");
        let target = dir.join("target");
        fs::write(&target, "keep me").unwrap();
        let error = dir.join("x.csv.error");
        std::os::unix::fs::symlink(&target, &error).unwrap();
        // ... nor through one left where the hidden file is written first.
        std::os::unix::fs::symlink(&target, dir.join(".x.csv.error.tmp")).unwrap();
        write_whole(&error, b"why\n", 0o640).unwrap();
        assert_eq!(fs::read_to_string(&target).unwrap(), "keep me");
        assert_eq!(fs::read_to_string(&error).unwrap(), "why\n");
        assert!(!fs::symlink_metadata(&error).unwrap().is_symlink());
        // A second rejection of the same name replaces the first reason.
        write_whole(&error, b"again\n", 0o640).unwrap();
        assert_eq!(fs::read_to_string(&error).unwrap(), "again\n");
        fs::remove_dir_all(&dir).unwrap();
    }
}
