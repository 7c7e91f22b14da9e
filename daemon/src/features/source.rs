//! Snapshots pulled from object storage: every daemon of a fleet polls one manifest and
//! publishes the snapshot it names, so nobody pushes to each host.
//!
//! A poll is a conditional GET of the manifest (`If-None-Match` with the last ETag seen), so
//! an idle poll is one small `304`. A new manifest's object is downloaded in chunks to a
//! file beside the store, its size and SHA-256 checked, decoded, and published as the
//! manifest's version, replacing every table: the source owns the store's contents.
//!
//! A failure of any kind keeps the last good version serving. Failures the store may get
//! over (unreachable, denied, an object missing or cut short, a store that fails to publish)
//! are retried after waits that double from 1 s to `retry_max_secs`; a manifest or snapshot
//! that is wrong in itself (bad JSON, wrong hash, a file that does not decode) is not fetched
//! again until the manifest changes. Every request has a deadline, and so does each chunk of a
//! download, so a store that stalls is a failure, not a hang.

mod applied;
mod download;
mod failure;
mod manifest;
mod push;
mod remote;

use std::{
    hash::BuildHasher,
    path::PathBuf,
    sync::{Arc, Mutex},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use object_store::{GetOptions, ObjectStore, path::Path};

use failure::{Failure, REASONS, Reason};
pub use manifest::Manifest;
pub use push::{Pushed, push};
pub use remote::check;

use super::{
    Change, Features, PublishError,
    ingest::{Contents, decode},
    lock,
};
use crate::{
    config::SourceConfig,
    metrics::{Counter, Exposition, Gauge, Histogram},
};

/// A source and what it last did.
#[derive(Debug)]
pub struct Source {
    config: SourceConfig,
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    manifest: Path,
    /// The file downloads are written to, in the store's directory.
    spool: PathBuf,
    /// The record of the last manifest published, in the store's directory.
    applied: PathBuf,
    max_bytes: u64,
    state: Mutex<State>,
    metrics: Metrics,
}

#[derive(Debug, Default)]
struct State {
    /// ETag of the last manifest dealt with (published, ignored or refused).
    etag: Option<String>,
    /// The manifest version published.
    serving: Option<u64>,
    /// The last manifest refused: not fetched again, even from a store without ETags.
    refused: Option<Manifest>,
    /// The last failure and how many polls in a row failed.
    failing: Option<(Failure, u32)>,
}

#[derive(Debug, Default)]
struct Metrics {
    polls: Counter,
    updates: Counter,
    errors: [Counter; REASONS.len()],
    bytes: Counter,
    version: Gauge,
    last_success: Gauge,
    download: Histogram,
}

impl Source {
    /// A source from its configuration, for the store in `dir` (downloads and the record of
    /// the last manifest published go there); snapshots over `max_bytes` (as stored, or as
    /// decoded) are refused.
    pub fn new(
        config: &SourceConfig,
        dir: &std::path::Path,
        max_bytes: u64,
    ) -> anyhow::Result<Source> {
        let (store, prefix) = remote::open(config)?;
        let manifest = remote::under(&prefix, &config.manifest);
        Ok(Source {
            config: config.clone(),
            store,
            prefix,
            manifest,
            spool: dir.join("source.download"),
            applied: dir.join("source.applied"),
            max_bytes,
            state: Mutex::new(State::default()),
            metrics: Metrics::default(),
        })
    }

    /// Polls until the process ends: the first poll at once, then every poll interval plus
    /// jitter, or after a backoff while polls fail. A restarted daemon whose store still
    /// serves the last manifest it published does not download that manifest again.
    pub fn spawn(self: Arc<Self>, features: Arc<Features>) {
        let store_version = lock(&features.publisher).writer.version();
        let serving = applied::serving(&self.applied, store_version);
        lock(&self.state).serving = serving;
        self.metrics.version.set(serving.unwrap_or(0) as i64);
        tokio::spawn(async move {
            loop {
                let failed = match self.poll(&features).await {
                    Ok(()) => 0,
                    Err(failure) => self.failed(failure),
                };
                let wait = match failed {
                    0 => Duration::from_secs(self.config.poll_interval_secs),
                    n => backoff(n, Duration::from_secs(self.config.retry_max_secs)),
                };
                let wait = wait.saturating_add(jitter(self.config.poll_jitter_ms));
                tokio::time::sleep(wait).await;
            }
        });
    }

    /// Records a failure; the number of polls in a row that failed.
    fn failed(&self, failure: Failure) -> u32 {
        let index = REASONS.iter().position(|r| *r == failure.reason);
        self.metrics.errors[index.unwrap_or(0)].inc();
        let mut state = lock(&self.state);
        let count = state.failing.as_ref().map_or(0, |(_, n)| *n) + 1;
        tracing::error!(
            reason = failure.reason.label(),
            error = %failure.message,
            failures = count,
            serving = state.serving,
            "feature source: poll failed, the last good version keeps serving"
        );
        state.failing = Some((failure, count));
        count
    }

    /// One poll: the manifest, and if it is new, its snapshot.
    async fn poll(&self, features: &Arc<Features>) -> Result<(), Failure> {
        self.metrics.polls.inc();
        let etag = lock(&self.state).etag.clone();
        let Some((manifest, etag)) = self.manifest(etag).await? else {
            return self.succeeded(None);
        };
        if lock(&self.state).refused.as_ref() == Some(&manifest) {
            return self.succeeded(None);
        }
        let outcome = self.take(features, &manifest).await;
        let refused = matches!(&outcome, Err(failure) if failure.reason == Reason::Refused);
        if outcome.is_ok() || refused {
            // Polls wait for the next manifest.
            let mut state = lock(&self.state);
            state.etag = etag;
            state.refused = refused.then_some(manifest);
        }
        self.succeeded(outcome?)
    }

    /// Records a poll that succeeded, and the manifest version it published if it did.
    fn succeeded(&self, published: Option<u64>) -> Result<(), Failure> {
        let mut state = lock(&self.state);
        if let Some((failure, count)) = state.failing.take() {
            // A refusal stands until a new manifest replaces it.
            if failure.reason == Reason::Refused && published.is_none() {
                state.failing = Some((failure, count));
            } else {
                tracing::info!(failures = count, "feature source: polls succeed again");
            }
        }
        if let Some(version) = published {
            state.serving = Some(version);
            self.metrics.version.set(version as i64);
        }
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.metrics.last_success.set(secs as i64);
        Ok(())
    }

    /// The manifest and its ETag, or None if it has not changed since `etag`.
    async fn manifest(
        &self,
        etag: Option<String>,
    ) -> Result<Option<(Manifest, Option<String>)>, Failure> {
        let limit = Duration::from_millis(self.config.request_timeout_ms);
        let options = GetOptions {
            if_none_match: etag,
            ..GetOptions::default()
        };
        let get = async {
            let result = self.store.get_opts(&self.manifest, options).await?;
            if result.meta.size > manifest::MAX_BYTES {
                return Ok(Err(result.meta.size));
            }
            let etag = result.meta.e_tag.clone();
            result.bytes().await.map(|bytes| Ok((bytes, etag)))
        };
        let (bytes, etag) = match tokio::time::timeout(limit, get).await {
            Err(_) => return Err(Failure::timeout("manifest", limit)),
            Ok(Err(object_store::Error::NotModified { .. })) => return Ok(None),
            Ok(Err(error)) => return Err(Failure::store("manifest", &error)),
            Ok(Ok(Err(size))) => {
                let message = format!("manifest: {size} bytes, more than a manifest holds");
                return Err(Failure::new(Reason::Refused, message));
            }
            Ok(Ok(Ok(got))) => got,
        };
        match Manifest::parse(&bytes) {
            Ok(manifest) => Ok(Some((manifest, etag))),
            Err(error) => {
                // Not retried until it changes.
                lock(&self.state).etag = etag;
                Err(Failure::new(Reason::Refused, format!("{error:#}")))
            }
        }
    }

    /// Downloads, checks, decodes and publishes the snapshot `manifest` names, unless it is not
    /// newer than the one served; the manifest version published, if it was.
    async fn take(
        &self,
        features: &Arc<Features>,
        manifest: &Manifest,
    ) -> Result<Option<u64>, Failure> {
        let serving = lock(&self.state).serving;
        if serving.is_some_and(|v| manifest.version <= v) {
            tracing::warn!(
                manifest = manifest.version,
                serving,
                "feature source: the manifest is not newer than the version served; ignored"
            );
            return Ok(None);
        }
        let refused = |error: anyhow::Error| Failure::new(Reason::Refused, format!("{error:#}"));
        let format = manifest.format().map_err(refused)?;
        if manifest.size > self.max_bytes {
            let message = format!(
                "the snapshot is {} bytes, more than features.max_ingest_bytes ({})",
                manifest.size, self.max_bytes
            );
            return Err(Failure::new(Reason::Refused, message));
        }
        tracing::info!(
            version = manifest.version,
            object = %manifest.object,
            bytes = manifest.size,
            "feature source: downloading a new snapshot"
        );
        let started = Instant::now();
        let object = remote::under(&self.prefix, &manifest.object);
        let file = download::fetch(self, &object, manifest).await?;
        self.metrics.download.observe(started.elapsed());

        let (features, max_bytes) = (Arc::clone(features), self.max_bytes);
        let (version, table) = (manifest.version, manifest.table.clone());
        let record = self.applied.clone();
        let published = tokio::task::spawn_blocking(move || {
            let decoded = decode(format, Contents::File(file), table.as_deref(), max_bytes)
                .map_err(refused)?;
            let change = Change::ReplaceAll(edgewise::FeatureSnapshot {
                version,
                created_unix_ms: 0,
                tables: decoded.into_tables(),
            });
            // Held through the publish: shutdown waits for it, and none starts after.
            let closed = lock(&features.ingest_gate);
            if *closed {
                return Err(Failure::new(Reason::Publish, "shutting down"));
            }
            let published = features
                .apply_at(change, version)
                .map_err(|error| match error {
                    PublishError::Invalid(error) => Failure::new(Reason::Refused, error),
                    error => Failure::new(Reason::Publish, error),
                })?;
            let applied = applied::Applied {
                manifest: version,
                published: published.version,
            };
            if let Err(error) = applied::record(&record, applied) {
                tracing::warn!(%error, path = %record.display(), "feature source: could not record the manifest published; the next start takes it again");
            }
            Ok(published)
        })
        .await
        .unwrap_or_else(|join| {
            // A decoder that panicked on these bytes would panic again: refused, not retried.
            let reason = if join.is_panic() {
                Reason::Refused
            } else {
                Reason::Publish
            };
            Err(Failure::new(reason, join))
        })?;
        self.metrics.updates.inc();
        tracing::info!(
            version = published.version,
            keys = published.keys,
            "feature source: snapshot published"
        );
        if published.version != version {
            tracing::warn!(
                manifest = version,
                published = published.version,
                "feature source: the store was past the manifest's version (a local change?); \
                 published above it"
            );
        }
        Ok(Some(version))
    }

    /// What the source last did, for `/readyz`.
    pub fn describe(&self) -> String {
        let state = lock(&self.state);
        let serving = match state.serving {
            Some(version) => format!("manifest version {version}"),
            None => "no manifest published yet".to_owned(),
        };
        match &state.failing {
            None => format!("source: {serving}"),
            Some((failure, count)) => format!(
                "source: {serving}; {count} poll(s) failed ({}): {}",
                failure.reason.label(),
                failure.message
            ),
        }
    }

    /// Appends the `edgewise_features_source_*` families.
    pub fn render(&self, page: &mut Exposition) {
        let m = &self.metrics;
        let counters = [
            ("polls", "Manifest polls.", &m.polls),
            (
                "updates",
                "Snapshots downloaded from the source and published.",
                &m.updates,
            ),
            (
                "downloaded_bytes",
                "Snapshot bytes downloaded, whole or not.",
                &m.bytes,
            ),
        ];
        for (name, help, counter) in counters {
            let name = format!("edgewise_features_source_{name}_total");
            page.counter(&name, help, counter.get());
        }
        let name = "edgewise_features_source_errors_total";
        let help = "Failed polls by reason (the last good version kept serving).";
        page.family(name, "counter", help);
        for (reason, counter) in REASONS.iter().zip(&m.errors) {
            page.sample(name, &[("reason", reason.label())], counter.get());
        }
        let gauges = [
            (
                "version",
                "Manifest version of the snapshot published from the source (0: none yet).",
                &m.version,
            ),
            (
                "last_success_timestamp_seconds",
                "When a poll last succeeded, seconds since the Unix epoch (0: never).",
                &m.last_success,
            ),
        ];
        for (name, help, gauge) in gauges {
            page.gauge(
                &format!("edgewise_features_source_{name}"),
                help,
                gauge.get(),
            );
        }
        let name = "edgewise_features_source_download_seconds";
        page.family(name, "histogram", "Time to download and check a snapshot.");
        page.histogram(name, &[], &m.download);
    }
}

/// The wait after `failures` polls in a row failed: 1 s, doubling, at most `max`.
fn backoff(failures: u32, max: Duration) -> Duration {
    let doubled = Duration::from_secs(1).saturating_mul(1 << failures.saturating_sub(1).min(20));
    doubled.min(max)
}

/// A random wait of at most `max_ms`.
fn jitter(max_ms: u64) -> Duration {
    let random = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    Duration::from_millis(random % max_ms.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_back_off_to_the_cap() {
        let max = Duration::from_secs(300);
        let waits: Vec<u64> = (1..=11).map(|n| backoff(n, max).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]);
        assert_eq!(backoff(u32::MAX, max), max);
        assert!((0..100).all(|_| jitter(50) <= Duration::from_millis(50)));
        assert_eq!(jitter(0), Duration::ZERO);
        jitter(u64::MAX);
    }
}
