//! Reload triggers: SIGHUP (what operators and config managers send) and a cheap poll of the
//! file's size and modification time (editors and deploy tools that do not signal).

use std::{
    fs::Metadata,
    path::Path,
    sync::Arc,
    time::{Duration, SystemTime},
};

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};

use super::{HostTables, Reload};
use crate::HostsConfig;

/// Starts the reload task. The SIGHUP handler is installed before returning, so a SIGHUP sent
/// once the daemon says it is listening reloads instead of killing it (the default action).
pub(super) fn spawn(tables: Arc<HostTables>, config: &HostsConfig) -> anyhow::Result<()> {
    let Some(path) = tables.path.clone() else {
        return Ok(());
    };
    let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    let interval = config.watch_interval();
    tokio::spawn(async move {
        // No stamp yet, so the first tick reloads (unchanged content publishes nothing): a
        // stamp taken here could already be of a file written after the start-up load, and
        // that change would never be seen (a flaky integration test showed it).
        let mut seen = None;
        loop {
            tokio::select! {
                Some(()) = hangup.recv() => {
                    tracing::info!(path = %path.display(), "SIGHUP: reloading the host table");
                }
                () = tick(interval) => {
                    let now = Some(stamp(&path));
                    if now == seen {
                        continue;
                    }
                    seen = now;
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

/// What tells a changed file apart cheaply; a missing file is a state of its own.
fn stamp(path: &Path) -> Option<(u64, SystemTime)> {
    let meta: Metadata = std::fs::metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}
