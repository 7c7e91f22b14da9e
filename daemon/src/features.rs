//! The feature store the daemon publishes: local processes map it and read features in
//! nanoseconds (`edgewise::FeatureReader`); the daemon is its one writer.
//!
//! Changes arrive as snapshot files in the ingest directory or as `PUT /v1/features` batches.
//! Each accepted change is applied to the daemon's in-memory snapshot and published as a new
//! version; a change that does not validate is refused whole and the last good version keeps
//! serving. The daemon reads its own store (through a small pool of readers) to answer
//! `GET /v1/features/{table}/{key}` and the memcached-protocol socket.

mod change;
mod ingest;
mod memcache;
mod source;

use std::{
    path::PathBuf,
    sync::{
        Arc, Mutex, PoisonError,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use anyhow::Context;
use edgewise::{
    FeatureGuard, FeatureReader, FeatureSnapshot, FeatureWriter, PublishReport, WriterOptions,
};

pub use change::{Change, ChangeError, Delete, Upsert};
pub use ingest::read_file as read_snapshot_file;
pub use source::{Manifest, Pushed, check as check_source, push};

use crate::{
    FeaturesConfig,
    connections::Connections,
    metrics::{Counter, Exposition, Gauge, Histogram},
};

/// The daemon's feature store.
#[derive(Debug)]
pub struct Features {
    dir: PathBuf,
    publisher: Mutex<Publisher>,
    readers: Mutex<Vec<FeatureReader>>,
    /// The last version a refusal was logged for.
    warned: AtomicU64,
    /// Held for a whole ingest (read, publish, file away); true once shutdown closed it.
    ingest_gate: Mutex<bool>,
    metrics: Metrics,
    /// The feature socket's connections, if it is served.
    socket: Option<Arc<Connections>>,
    /// The object store snapshots are pulled from, if one is configured.
    source: Option<Arc<source::Source>>,
}

#[derive(Debug)]
struct Publisher {
    writer: FeatureWriter,
    snapshot: FeatureSnapshot,
}

#[derive(Debug, Default)]
struct Metrics {
    publish: Histogram,
    published: Counter,
    refused: Counter,
    failed: Counter,
    version: Gauge,
    keys: Gauge,
    bytes: Gauge,
    ingested: Counter,
    rejected_files: Counter,
    damaged: Counter,
}

/// What a publish did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Published {
    /// The new version.
    pub version: u64,
    /// Rows across all tables.
    pub keys: usize,
    /// Size of the archive.
    pub bytes: usize,
}

/// Why a change was not published.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PublishError {
    /// The change itself is wrong (the client's fault).
    #[error(transparent)]
    Invalid(#[from] ChangeError),
    /// The store could not publish it (the daemon's problem).
    #[error("publishing: {0}")]
    Store(#[from] edgewise::StoreError),
}

impl Features {
    /// Opens (or creates) the store and starts ingest and the socket if configured. A store
    /// left by an earlier run (or a crashed one) is resumed: its last good version is where
    /// changes continue from. Call from within the runtime.
    pub fn start(config: &FeaturesConfig) -> anyhow::Result<Option<Arc<Features>>> {
        let Some(dir) = &config.dir else {
            return Ok(None);
        };
        let options =
            WriterOptions::default().with_grace(Duration::from_millis(config.reader_grace_ms));
        let mut writer = FeatureWriter::open(dir, options)
            .with_context(|| format!("opening the feature store {}", dir.display()))?;
        // With a source, store versions are manifest versions: nothing from it yet is 0.
        let first = if config.source.is_some() { 0 } else { 1 };
        let snapshot = resume(&mut writer, first)?;
        let source = match &config.source {
            Some(source) => {
                let source = source::Source::new(source, dir, config.max_ingest_bytes)
                    .context("features.source")?;
                Some(Arc::new(source))
            }
            None => None,
        };
        let features = Arc::new(Features {
            dir: dir.clone(),
            publisher: Mutex::new(Publisher { writer, snapshot }),
            readers: Mutex::new(Vec::new()),
            warned: AtomicU64::new(0),
            ingest_gate: Mutex::new(false),
            metrics: Metrics::default(),
            socket: config.socket.as_ref().map(|_| {
                let max = config.socket_max_connections;
                Arc::new(Connections::new("features_socket", max))
            }),
            source: source.clone(),
        });
        features
            .metrics
            .observe_snapshot(&lock(&features.publisher).snapshot);
        if let Some(ingest_dir) = &config.ingest_dir {
            ingest::spawn(
                Arc::clone(&features),
                ingest_dir,
                config.ingest_interval(),
                config.max_ingest_bytes,
            )?;
        }
        if let Some(source) = source {
            source.spawn(Arc::clone(&features));
        }
        if let Some(interval) = config.verify_interval() {
            let verifying = Arc::clone(&features);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(interval).await;
                    let features = Arc::clone(&verifying);
                    // A checksum over the whole file: off the runtime's threads.
                    if let Err(error) = tokio::task::spawn_blocking(move || features.verify()).await
                    {
                        tracing::error!(%error, "feature store check panicked");
                    }
                }
            });
        }
        if let (Some(socket), Some(connections)) = (&config.socket, &features.socket) {
            let lookup = Arc::clone(&features) as Arc<dyn memcache::Lookup>;
            memcache::serve(socket, lookup, Arc::clone(connections))
                .with_context(|| format!("binding the feature socket {}", socket.display()))?;
        }
        Ok(Some(features))
    }

    /// Applies `change` and publishes the result, off the async threads: serializing a large
    /// snapshot and waiting out slow readers take milliseconds.
    pub async fn apply(self: &Arc<Self>, change: Change) -> Result<Published, PublishError> {
        let features = Arc::clone(self);
        tokio::task::spawn_blocking(move || features.apply_now(change))
            .await
            .unwrap_or_else(|join| std::panic::resume_unwind(join.into_panic()))
    }

    /// [`Features::apply`] on the calling thread. Changes are serialized: each one is
    /// published as its own version.
    ///
    /// The change is applied in place once it validated (copying a large snapshot per change
    /// would cost more than publishing it). If the store then fails, readers keep the last good
    /// version and the change stays in memory, published with the next one; the caller gets
    /// the error and may resend (every change is idempotent).
    pub fn apply_now(&self, change: Change) -> Result<Published, PublishError> {
        self.apply_at(change, 0)
    }

    /// [`Features::apply_now`], published as version `at_least` if that is above the current
    /// one (a source's manifest version), else as the next.
    fn apply_at(&self, change: Change, at_least: u64) -> Result<Published, PublishError> {
        let started = Instant::now();
        let mut publisher = lock(&self.publisher);
        if let Err(error) = change.apply(&mut publisher.snapshot) {
            self.metrics.refused.inc();
            return Err(error.into());
        }
        let report = self.publish(&mut publisher, at_least)?;
        self.metrics.publish.observe(started.elapsed());
        Ok(Published {
            version: report.version,
            keys: keys(&publisher.snapshot),
            bytes: usize::try_from(report.bytes).unwrap_or(usize::MAX),
        })
    }

    /// Publishes the in-memory snapshot as the next version, or as `at_least` if that is
    /// higher, and counts it on `/metrics`.
    fn publish(
        &self,
        publisher: &mut Publisher,
        at_least: u64,
    ) -> Result<PublishReport, edgewise::StoreError> {
        let Publisher { writer, snapshot } = publisher;
        snapshot.version = (writer.version() + 1).max(at_least);
        snapshot.created_unix_ms = unix_ms();
        let report = writer
            .publish(snapshot)
            .inspect_err(|_| self.metrics.failed.inc())?;
        self.metrics.observe_snapshot(snapshot);
        self.metrics.published.inc();
        self.metrics
            .bytes
            .set(i64::try_from(report.bytes).unwrap_or(i64::MAX));
        Ok(report)
    }

    /// Checks the published version's file whole (readers check only its header and index)
    /// and, if it is damaged, publishes the snapshot again from memory; the version then
    /// published, if it had to.
    pub fn verify(&self) -> Option<u64> {
        let mut publisher = lock(&self.publisher);
        let error = publisher.writer.verify().err()?;
        self.metrics.damaged.inc();
        tracing::error!(
            %error,
            "the published feature file is damaged: publishing the snapshot again"
        );
        match self.publish(&mut publisher, 0) {
            Ok(report) => Some(report.version),
            Err(error) => {
                tracing::error!(%error, "publishing the snapshot again failed");
                None
            }
        }
    }

    /// Waits for an ingest or publish in progress to end and takes no further files
    /// (shutdown calls this so that none is cut off); returns the version now published.
    pub fn settle(&self) -> u64 {
        *lock(&self.ingest_gate) = true;
        lock(&self.publisher).writer.version()
    }

    /// The features of `key` in `table`, read from the published store.
    pub fn get(
        &self,
        table: &str,
        key: u64,
    ) -> Result<Option<(u64, Vec<f32>)>, edgewise::StoreError> {
        self.with_guard(|guard| {
            let found = guard
                .table(table)
                .and_then(|t| t.get(key).map(<[f32]>::to_vec));
            found.map(|values| (guard.version(), values))
        })
    }

    /// Whether the store can be read, as the origin apps read it.
    pub fn readiness(&self) -> Result<String, String> {
        let read = self.with_guard(|guard| match guard.refused() {
            None => format!("version {}", guard.version()),
            Some(why) => format!(
                "version {} (a newer one was refused: {why})",
                guard.version()
            ),
        });
        let read = read.map_err(|e| format!("store unreadable: {e}"))?;
        // A failing source is shown, not failed: the last good version serves meanwhile.
        Ok(match &self.source {
            Some(source) => format!("{read}; {}", source.describe()),
            None => read,
        })
    }

    /// Runs `f` on the current version, read through a reader from the pool (a new one if
    /// all are busy: the pool grows to the peak number of concurrent lookups).
    fn with_guard<T>(
        &self,
        f: impl FnOnce(&FeatureGuard<'_>) -> T,
    ) -> Result<T, edgewise::StoreError> {
        let pooled = lock(&self.readers).pop();
        let mut reader = match pooled {
            Some(reader) => reader,
            None => FeatureReader::open(&self.dir)?,
        };
        let outcome = reader.read().map(|guard| {
            self.warn_refused(&guard);
            f(&guard)
        });
        lock(&self.readers).push(reader);
        outcome
    }

    /// A newer version the reader refused (damaged on disk: the daemon wrote it, so something
    /// else touched the files) is logged once per version; lookups go on from the last good one.
    fn warn_refused(&self, guard: &FeatureGuard<'_>) {
        let Some(error) = guard.refused() else {
            return;
        };
        if self.warned.swap(guard.version(), Ordering::Relaxed) != guard.version() {
            tracing::error!(%error, serving = guard.version(), "feature store: a newer version was refused");
        }
    }

    /// Appends the `edgewise_features_*` families.
    pub fn render(&self, page: &mut Exposition) {
        let m = &self.metrics;
        let gauges = [
            (
                "version",
                "Version of the published feature snapshot.",
                &m.version,
            ),
            (
                "keys",
                "Rows across all tables of the published snapshot.",
                &m.keys,
            ),
            ("bytes", "Size of the published archive in bytes.", &m.bytes),
        ];
        for (name, help, gauge) in gauges {
            page.gauge(&format!("edgewise_features_{name}"), help, gauge.get());
        }
        let counters = [
            ("publishes", "Snapshots published.", &m.published),
            (
                "refused",
                "Well-formed changes refused by validation (nothing published).",
                &m.refused,
            ),
            (
                "publish_errors",
                "Publishes the store failed (the previous version kept serving).",
                &m.failed,
            ),
            ("ingested_files", "Snapshot files ingested.", &m.ingested),
            (
                "rejected_files",
                "Snapshot files rejected (moved to rejected/ with the reason).",
                &m.rejected_files,
            ),
            (
                "damaged",
                "Published files found damaged by the periodic check (then published again).",
                &m.damaged,
            ),
        ];
        for (name, help, counter) in counters {
            page.counter(
                &format!("edgewise_features_{name}_total"),
                help,
                counter.get(),
            );
        }
        page.family(
            "edgewise_features_publish_seconds",
            "histogram",
            "Time to apply and publish one change.",
        );
        page.histogram("edgewise_features_publish_seconds", &[], &m.publish);
        if let Some(socket) = &self.socket {
            socket.render(page);
        }
        if let Some(source) = &self.source {
            source.render(page);
        }
    }
}

impl memcache::Lookup for Features {
    fn lookup(&self, table: &str, key: u64, out: &mut Vec<u8>) -> bool {
        let found = self.with_guard(|guard| {
            let Some(values) = guard.table(table).and_then(|t| t.get(key)) else {
                return false;
            };
            out.extend(values.iter().flat_map(|v| v.to_le_bytes()));
            true
        });
        found.unwrap_or_else(|error| {
            tracing::warn!(%error, "feature lookup failed");
            false
        })
    }
}

impl Metrics {
    fn observe_snapshot(&self, snapshot: &FeatureSnapshot) {
        self.version.set(snapshot.version as i64);
        self.keys.set(keys(snapshot) as i64);
    }
}

/// The snapshot changes continue from: the last published, or the one before it if the
/// current version's file is damaged (published again, since readers have none to read); a
/// new store gets an empty version `first`, so readers can open it at once.
fn resume(writer: &mut FeatureWriter, first: u64) -> anyhow::Result<FeatureSnapshot> {
    let intact = writer
        .last_intact()
        .context("reading the last published features (the previous copy is damaged too)")?;
    let Some(mut snapshot) = intact else {
        let empty = FeatureSnapshot {
            version: first,
            created_unix_ms: unix_ms(),
            tables: Vec::new(),
        };
        writer
            .publish(&empty)
            .context("publishing the first, empty, version")?;
        return Ok(empty);
    };
    if snapshot.version != writer.version() {
        tracing::error!(
            resumed = snapshot.version,
            "feature store: the current version's file is damaged; resuming from the version before it and publishing it again"
        );
        // Above the damaged version too, whose header may be gone: this daemon publishes
        // versions one apart, so it was the one after.
        snapshot.version = (snapshot.version + 1).max(writer.version()) + 1;
        snapshot.created_unix_ms = unix_ms();
        writer
            .publish(&snapshot)
            .context("publishing the last intact version again")?;
    }
    Ok(snapshot)
}

fn keys(snapshot: &FeatureSnapshot) -> usize {
    snapshot.tables.iter().map(|t| t.rows.len()).sum()
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
