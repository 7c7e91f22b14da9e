//! The host table served to workers at `GET /v1/hosts`.
//!
//! It comes from a TOML file (see `daemon/dist/hosts.example.toml`), is reloaded on SIGHUP and
//! when the file changes, and is published as the shared rkyv encoding with an ETag so workers
//! revalidate cheaply. A file that does not parse or validate is rejected with its reason
//! logged and counted; the last good table keeps serving.

mod watch;

use std::{
    collections::VecDeque,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

use anyhow::Context;
use axum::body::Bytes;
use edgewise::{HostDelta, HostTable};
use sha2::{Digest, Sha256};

use crate::{
    HostsConfig,
    metrics::{Counter, Exposition},
};

/// One published table: what `GET /v1/hosts` answers.
#[derive(Debug)]
pub struct Published {
    /// The table, version filled in.
    pub table: HostTable,
    /// Its wire encoding.
    pub bytes: Bytes,
    /// Strong ETag of `bytes`, quoted.
    pub etag: String,
    /// SHA-256 of the table encoded with version 0: what changed, whatever the version says.
    fingerprint: [u8; 32],
    /// Encoded [`HostDelta`]s to this table from the ones served before it, by their ETag:
    /// those of the same configuration whose changes are few enough to beat a rebuild.
    deltas: Vec<(String, Bytes)>,
}

/// Tables served before the current one that deltas are made from: workers check every few
/// seconds, so one that missed more than a few changes gets the whole table.
const HISTORY: usize = 3;

/// Most changes a delta carries for a table of `hosts` hosts. A change costs the worker ~10-20
/// µs (a relabel is a removal and an addition), as much as indexing ~20 hosts from scratch: a
/// delta of 1% of the hosts is 4-6 times faster than a rebuild, one of 5% no faster
/// (`subset_wasm`'s table change rows), so past ~3% the worker gets the table.
fn delta_budget(hosts: usize) -> usize {
    (hosts / 32).max(8)
}

/// The current host table and its reload machinery.
#[derive(Debug)]
pub struct HostTables {
    path: Option<PathBuf>,
    current: RwLock<Option<Arc<Published>>>,
    /// The tables replaced last (all but the newest of the [`HISTORY`] bases of the next
    /// table's deltas; the current one is the newest), oldest first.
    history: Mutex<VecDeque<Arc<Published>>>,
    reloads: Counter,
    deltas: Counter,
    errors: Counter,
}

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// The file's table equals the published one.
    Unchanged,
    /// A new table is being served.
    Updated {
        /// Its version.
        version: u64,
    },
}

impl HostTables {
    /// Loads the configured file; at start-up a bad table is an error, not a warning.
    pub fn load(config: &HostsConfig) -> anyhow::Result<HostTables> {
        let tables = HostTables {
            path: config.file.clone(),
            ..HostTables::none()
        };
        if tables.path.is_some() {
            tables.reload()?;
        }
        Ok(tables)
    }

    /// No table: `GET /v1/hosts` answers 404.
    pub fn none() -> HostTables {
        HostTables {
            path: None,
            current: RwLock::new(None),
            history: Mutex::new(VecDeque::new()),
            reloads: Counter::default(),
            deltas: Counter::default(),
            errors: Counter::default(),
        }
    }

    /// The table being served, if one is configured.
    pub fn current(&self) -> Option<Arc<Published>> {
        self.current
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether a configured table is being served (it always is once loaded: a bad reload
    /// keeps the last good one).
    pub fn readiness(&self) -> Result<String, String> {
        match (&self.path, self.current()) {
            (None, _) => Ok("not configured".to_owned()),
            (Some(_), Some(table)) => Ok(format!(
                "version {}, {} hosts",
                table.table.version,
                table.table.hosts.len()
            )),
            (Some(path), None) => Err(format!("no table loaded from {}", path.display())),
        }
    }

    /// Reads the file again and publishes it if it changed. On error the old table stays.
    pub fn reload(&self) -> anyhow::Result<Reload> {
        let Some(path) = &self.path else {
            return Ok(Reload::Unchanged);
        };
        let outcome = read_table(path).and_then(|table| self.publish(table));
        match &outcome {
            Ok(Reload::Updated { .. }) => self.reloads.inc(),
            Ok(Reload::Unchanged) => {}
            Err(_) => self.errors.inc(),
        }
        outcome.with_context(|| format!("host table {}", path.display()))
    }

    /// Serves `table` unless it equals the current one. A table that names its version must
    /// not reuse the current version for different content: workers rebuild only when the
    /// version moves, so they would keep routing by the old table.
    fn publish(&self, table: HostTable) -> anyhow::Result<Reload> {
        // Held throughout: one publish at a time (`reload` is public; the watcher's own
        // reloads come one after another).
        let mut history = self
            .history
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let current = self.current();
        let fingerprint = fingerprint(&table)?;
        if current
            .as_ref()
            .is_some_and(|c| c.fingerprint == fingerprint)
        {
            return Ok(Reload::Unchanged);
        }
        if let Some(current) = &current
            && table.version != 0
            && table.version == current.table.version
        {
            anyhow::bail!(
                "the table changed but its version is still {}; raise `version` (or omit it and \
                 the daemon derives one from the content)",
                table.version
            );
        }
        let mut published = Published::new(table, fingerprint)?;
        published.deltas = history
            .iter()
            .chain(&current)
            .filter_map(|old| published.delta_from(old))
            .collect();
        let version = published.table.version;
        *self
            .current
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::new(published));
        if let Some(old) = current {
            history.push_back(old);
        }
        // With the current one, the HISTORY bases of the next table's deltas.
        while history.len() >= HISTORY {
            history.pop_front();
        }
        Ok(Reload::Updated { version })
    }

    /// Counts a delta served.
    pub fn delta_served(&self) {
        self.deltas.inc();
    }

    /// Reloads on SIGHUP and, if configured, when the file changes. Call from the runtime.
    pub fn watch(self: &Arc<Self>, config: &HostsConfig) -> anyhow::Result<()> {
        watch::spawn(Arc::clone(self), config)
    }

    /// Appends the `edgewise_hosts_*` families.
    pub fn render(&self, page: &mut Exposition) {
        let current = self.current();
        let (version, hosts) = current
            .as_ref()
            .map_or((0, 0), |c| (c.table.version, c.table.hosts.len()));
        page.gauge(
            "edgewise_hosts_version",
            "Version of the host table being served (0: none).",
            version,
        );
        page.gauge(
            "edgewise_hosts_hosts",
            "Hosts in the table being served.",
            hosts,
        );
        page.counter(
            "edgewise_hosts_reloads_total",
            "Host table reloads that published a new table.",
            self.reloads.get(),
        );
        page.counter(
            "edgewise_hosts_deltas_served_total",
            "Answers to workers that held an earlier table: its changes instead of the table.",
            self.deltas.get(),
        );
        page.counter(
            "edgewise_hosts_reload_errors_total",
            "Host table reloads rejected (the previous table kept serving).",
            self.errors.get(),
        );
    }
}

impl Published {
    fn new(mut table: HostTable, fingerprint: [u8; 32]) -> anyhow::Result<Published> {
        if table.version == 0 {
            table.version = derived_version(&fingerprint);
        }
        let bytes = table.encode()?;
        let etag = format!("\"{}\"", hex(&Sha256::digest(&bytes)[..16]));
        Ok(Published {
            table,
            bytes: Bytes::from(bytes),
            etag,
            fingerprint,
            deltas: Vec::new(),
        })
    }

    /// The encoded delta to this table for a worker holding `old`, by `old`'s ETag, if the
    /// configuration is the same and the changes are few.
    fn delta_from(&self, old: &Published) -> Option<(String, Bytes)> {
        let delta = HostDelta::between(&old.table, &self.table)?;
        if delta.changes() > delta_budget(self.table.hosts.len()) {
            return None;
        }
        let bytes = delta.encode().ok()?;
        Some((old.etag.clone(), Bytes::from(bytes)))
    }

    /// The delta to this table for a worker holding the table of ETag `etag`, if there is one.
    pub fn delta(&self, etag: &str) -> Option<&Bytes> {
        let found = self.deltas.iter().find(|(base, _)| base == etag);
        found.map(|(_, bytes)| bytes)
    }
}

/// Parses and validates the file.
fn read_table(path: &Path) -> anyhow::Result<HostTable> {
    let text = std::fs::read_to_string(path).context("reading")?;
    let mut table: HostTable = toml::from_str(&text).context("parsing")?;
    table.normalize_addresses();
    table.validate().context("validating")?;
    // Served in address order: a file whose hosts only moved is no change (the fingerprint
    // is of the sorted table).
    table.sort_hosts();
    // An empty file is far more often a truncated write than a wish to route nowhere.
    anyhow::ensure!(
        !table.hosts.is_empty(),
        "validating: the table lists no hosts"
    );
    Ok(table)
}

fn fingerprint(table: &HostTable) -> anyhow::Result<[u8; 32]> {
    let mut unversioned = table.clone();
    unversioned.version = 0;
    Ok(Sha256::digest(unversioned.encode()?).into())
}

/// A version for a table that names none: its content hash, never 0 (which means "none").
fn derived_version(fingerprint: &[u8; 32]) -> u64 {
    let mut word = [0; 8];
    word.copy_from_slice(&fingerprint[..8]);
    u64::from_be_bytes(word).max(1)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

#[cfg(test)]
mod tests;
