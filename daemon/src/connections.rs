//! The cap on the API's open connections (`server.max_connections`).
//!
//! Each connection holds a file descriptor, a task and hyper's buffers for as long as the
//! client keeps it: with no cap, a client opening connections without end ran the daemon out of
//! descriptors, and then the token cache could not reach memcached nor the store open a file.
//! At the cap the server stops accepting, so further clients wait in the kernel's listen
//! backlog, as nginx and Envoy's listener limits make them, until a connection closes. Idle and
//! slow ones do within `server.request_timeout_ms` (hyper's header read timeout covers the wait
//! before each request), so a flood of idle connections delays other clients by at most that.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::{Counter, Exposition, Gauge};

/// Slots for open connections, and their figures on `/metrics`.
#[derive(Debug)]
pub(crate) struct Connections {
    slots: Arc<Semaphore>,
    max: usize,
    open: Arc<Gauge>,
    /// Times the server found every slot taken and stopped accepting.
    full: Counter,
}

/// One open connection's slot, given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Arc<Gauge>,
}

impl Connections {
    /// `max` slots: at least 1, at most [`Connections::MAX`] (validated with the config).
    pub(crate) fn new(max: usize) -> Connections {
        let max = max.clamp(1, Self::MAX);
        Connections {
            slots: Arc::new(Semaphore::new(max)),
            max,
            open: Arc::default(),
            full: Counter::default(),
        }
    }

    /// Largest cap: far above any descriptor limit, far below what a semaphore holds.
    pub(crate) const MAX: usize = 1 << 24;

    /// A free slot, waiting for one while every slot is taken.
    pub(crate) async fn slot(&self) -> Slot {
        let permit = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                self.full.inc();
                tracing::warn!(
                    max = self.max,
                    "server.max_connections open: not accepting until one closes"
                );
                self.acquire().await
            }
        };
        self.open.inc();
        Slot {
            _permit: permit,
            open: Arc::clone(&self.open),
        }
    }

    async fn acquire(&self) -> OwnedSemaphorePermit {
        loop {
            // The semaphore is never closed; a closed one would only mean trying again.
            if let Ok(permit) = Arc::clone(&self.slots).acquire_owned().await {
                return permit;
            }
            tokio::task::yield_now().await;
        }
    }

    pub(crate) fn render(&self, page: &mut Exposition) {
        page.gauge(
            "edgewise_http_connections_open",
            "API connections open.",
            self.open.get(),
        );
        page.gauge(
            "edgewise_http_connections_max",
            "server.max_connections: past it the API stops accepting.",
            self.max,
        );
        page.counter(
            "edgewise_http_connections_full_total",
            "Times every connection slot was taken and the API stopped accepting.",
            self.full.get(),
        );
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.dec();
    }
}
