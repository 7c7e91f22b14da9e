//! Reload triggers: SIGHUP (what operators and config managers send) and a cheap poll of the
//! file's size, times and inode (editors and deploy tools that do not signal). A changed file
//! is read once it held still for a whole interval: one read mid-write was published, half a
//! table, and with an explicit `version` the whole file then came too late (same version,
//! other content: refused), so the half table kept serving. Writing aside and renaming into
//! place is still the safe way.

use std::{os::unix::fs::MetadataExt, path::Path, sync::Arc, time::Duration};

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

use super::{HostTables, Reload};
use crate::HostsConfig;

/// Starts the reload task. The SIGHUP handler is installed before returning, so a SIGHUP sent
/// once the daemon says it is listening reloads instead of killing it (the default action),
/// with or without a host table: `systemctl reload` of a daemon without one killed it, and
/// systemd counts SIGHUP as a clean exit, so it stayed down.
pub(super) fn spawn(tables: Arc<HostTables>, config: &HostsConfig) -> anyhow::Result<()> {
    let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let Some(path) = tables.path.clone() else {
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                tracing::info!("SIGHUP: no host table configured, nothing to reload");
            }
        });
        return Ok(());
    };
    let interval = config.watch_interval();
    tokio::spawn(async move {
        // No stamp yet, so a first look finds a change (unchanged content publishes nothing):
        // a stamp taken here could already be of a file written after the start-up load, and
        // that change would never be seen (a flaky integration test showed it).
        let (mut seen, mut settled) = (None, true);
        loop {
            tokio::select! {
                Some(()) = hangup.recv() => {
                    tracing::info!(path = %path.display(), "SIGHUP: reloading the host table");
                }
                () = tick(interval) => {
                    let now = Some(stamp(&path));
                    // Changed since the last look: look again an interval later.
                    if now != seen {
                        (seen, settled) = (now, false);
                        continue;
                    }
                    if settled {
                        continue;
                    }
                    settled = true;
                }
            }
            // Parsing, encoding and diffing 100k hosts takes a few hundred ms: off the
            // runtime's threads, which serve the API meanwhile.
            let reloading = Arc::clone(&tables);
            match tokio::task::spawn_blocking(move || reloading.reload()).await {
                Ok(outcome) => report(outcome),
                Err(error) => tracing::error!(%error, "host table reload panicked"),
            }
        }
    });
    Ok(())
}

fn report(outcome: anyhow::Result<Reload>) {
    match outcome {
        Ok(Reload::Updated { version }) => tracing::info!(version, "host table published"),
        Ok(Reload::Unchanged) => tracing::debug!("host table unchanged"),
        Err(error) => {
            tracing::error!(
                error = format!("{error:#}"),
                "host table rejected, the previous one keeps serving"
            );
        }
    }
}

async fn tick(interval: Option<Duration>) {
    match interval {
        Some(interval) => tokio::time::sleep(interval).await,
        None => std::future::pending().await,
    }
}

/// What tells a changed file apart cheaply: size, modification and change times, and inode
/// (a file renamed into place); a missing file is a state of its own.
fn stamp(path: &Path) -> Option<[i64; 6]> {
    let meta = std::fs::metadata(path).ok()?;
    let size = i64::try_from(meta.len()).unwrap_or(i64::MAX);
    let inode = i64::try_from(meta.ino()).unwrap_or(i64::MAX);
    Some([
        size,
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        inode,
    ])
}
