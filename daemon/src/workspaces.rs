//! Pooled request workspaces for the daemon's hot paths: the memcached connections assemble
//! every batch of commands and read every batch of replies in one, so spend keys never linger in
//! reused memory after their batch, and no batch allocates.
//!
//! A pool hands out workspaces (allocating one only when none is free) and takes them back when
//! the holder drops them. Every reset is recorded in shared counters, which `/metrics` exports,
//! and a failed verification (the watermark missed a write: a bug) is logged.

use std::{
    fmt,
    ops::{Deref, DerefMut},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering::Relaxed},
    },
};

use edgewise::{ResetReport, ScrubMode, Workspace, WorkspaceConfig};

use crate::metrics::{Counter, Exposition, Family};

/// Workspaces of one size and scrub mode.
pub struct WorkspacePool {
    name: &'static str,
    config: WorkspaceConfig,
    free: Mutex<Vec<Workspace>>,
    counters: ScrubCounters,
}

#[derive(Debug, Default)]
struct ScrubCounters {
    resets: Counter,
    bytes_zeroed: Counter,
    bytes_full_clear: Counter,
    verifications: Counter,
    failures: Counter,
    overflows: Counter,
    peak_watermark: AtomicU64,
    created: Counter,
}

impl fmt::Debug for WorkspacePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkspacePool")
            .field("name", &self.name)
            .field("size", &self.config.size)
            .field("mode", &self.config.mode)
            .finish_non_exhaustive()
    }
}

impl WorkspacePool {
    /// A pool named `name` (the `pool` label on `/metrics`).
    pub fn new(name: &'static str, config: WorkspaceConfig) -> Arc<WorkspacePool> {
        Arc::new(WorkspacePool {
            name,
            config,
            free: Mutex::default(),
            counters: ScrubCounters::default(),
        })
    }

    /// A workspace for as long as the returned guard lives.
    pub fn take(self: &Arc<Self>) -> PooledWorkspace {
        let reused = self.free.lock().ok().and_then(|mut free| free.pop());
        let workspace = reused.unwrap_or_else(|| {
            self.counters.created.inc();
            // Each workspace samples on its own sequence, not in lockstep with the others.
            let seed = self.config.seed
                ^ self
                    .counters
                    .created
                    .get()
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            Workspace::with_config(self.config.with_seed(seed))
        });
        PooledWorkspace {
            workspace: Some(workspace),
            pool: Arc::clone(self),
        }
    }

    /// Counts one reset; logs a verification failure.
    pub fn record(&self, report: &ResetReport) {
        let c = &self.counters;
        c.resets.inc();
        c.bytes_zeroed.add(report.zeroed as u64);
        c.bytes_full_clear.add(self.config.size as u64);
        c.verifications.add(u64::from(report.verified));
        c.overflows.add(u64::from(report.overflowed));
        c.peak_watermark.fetch_max(report.watermark as u64, Relaxed);
        if let Some(failure) = report.failure {
            c.failures.inc();
            tracing::error!(
                pool = self.name,
                offset = failure.offset,
                watermark = failure.watermark,
                "workspace verification found a byte written above the watermark; zeroed the \
                 whole workspace (a tracking bug: report it)"
            );
        }
    }

    /// Writes the `edgewise_workspace_*` families for every pool in `pools`.
    pub fn render(page: &mut Exposition, pools: &[&WorkspacePool]) {
        let labels: Vec<_> = pools
            .iter()
            .map(|p| {
                (
                    [("pool", p.name), ("mode", p.config.mode.as_str())],
                    &p.counters,
                )
            })
            .collect();
        let sources: Vec<_> = labels.iter().map(|(l, c)| (&l[..], *c)).collect();
        page.families(&SCRUB_FAMILIES, &sources);
    }

    /// The scrub mode of this pool's workspaces.
    pub fn mode(&self) -> ScrubMode {
        self.config.mode
    }
}

fn gauge(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The scrub counters as `/metrics` families.
const SCRUB_FAMILIES: [Family<ScrubCounters>; 8] = [
    (
        "edgewise_workspace_resets_total",
        "counter",
        "Workspace resets (batches or requests ended).",
        |c| gauge(c.resets.get()),
    ),
    (
        "edgewise_workspace_bytes_zeroed_total",
        "counter",
        "Bytes the resets zeroed.",
        |c| gauge(c.bytes_zeroed.get()),
    ),
    (
        "edgewise_workspace_bytes_full_clear_total",
        "counter",
        "Bytes the resets would have zeroed clearing whole workspaces.",
        |c| gauge(c.bytes_full_clear.get()),
    ),
    (
        "edgewise_workspace_verifications_total",
        "counter",
        "Sampled checks that everything above the watermark is zero.",
        |c| gauge(c.verifications.get()),
    ),
    (
        "edgewise_workspace_verification_failures_total",
        "counter",
        "Checks that found a non-zero byte above the watermark (must stay 0).",
        |c| gauge(c.failures.get()),
    ),
    (
        "edgewise_workspace_overflows_total",
        "counter",
        "Uses that ran out of workspace room.",
        |c| gauge(c.overflows.get()),
    ),
    (
        "edgewise_workspace_peak_watermark_bytes",
        "gauge",
        "Highest watermark reached.",
        |c| gauge(c.peak_watermark.load(Relaxed)),
    ),
    (
        "edgewise_workspace_created_total",
        "counter",
        "Workspaces allocated (the rest were reused).",
        |c| gauge(c.created.get()),
    ),
];

/// A workspace on loan from a pool; it goes back when dropped.
pub struct PooledWorkspace {
    workspace: Option<Workspace>,
    pool: Arc<WorkspacePool>,
}

impl PooledWorkspace {
    /// The pool, for [`WorkspacePool::record`].
    pub fn pool(&self) -> &WorkspacePool {
        &self.pool
    }
}

impl fmt::Debug for PooledWorkspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledWorkspace")
            .field("pool", &self.pool)
            .finish()
    }
}

impl Deref for PooledWorkspace {
    type Target = Workspace;

    fn deref(&self) -> &Workspace {
        // Only `drop` takes the workspace out.
        self.workspace
            .as_ref()
            .unwrap_or_else(|| unreachable!("workspace taken before drop"))
    }
}

impl DerefMut for PooledWorkspace {
    fn deref_mut(&mut self) -> &mut Workspace {
        self.workspace
            .as_mut()
            .unwrap_or_else(|| unreachable!("workspace taken before drop"))
    }
}

impl Drop for PooledWorkspace {
    fn drop(&mut self) {
        let Some(workspace) = self.workspace.take() else {
            return;
        };
        // A workspace only leaves a scope scrubbed; check anyway before it serves anyone else.
        if !workspace.is_scrubbed() {
            tracing::error!(
                pool = self.pool.name,
                "workspace returned unscrubbed; discarded"
            );
            return;
        }
        if let Ok(mut free) = self.pool.free.lock() {
            free.push(workspace);
        }
    }
}

#[cfg(test)]
mod tests;
