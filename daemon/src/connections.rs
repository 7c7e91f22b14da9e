//! The cap on a listener's open connections: the API's (`server.max_connections`) and the
//! feature socket's (`features.socket_max_connections`).
//!
//! Each connection holds a file descriptor, a task and hyper's buffers for as long as the
//! client keeps it: with no cap, a client opening connections without end could run the daemon
//! out of descriptors, and then the token cache could not reach memcached nor the store open a
//! file.
//! At the cap the server stops accepting, so further clients wait in the kernel's listen
//! backlog, as nginx and Envoy's listener limits make them, until a connection closes. Idle and
//! slow ones do within `server.request_timeout_ms` (hyper's header read timeout covers the wait
//! before each request), so a flood of idle connections delays other clients by at most that.
//! The feature socket, like memcached, keeps idle connections: its clients are local processes
//! of the store's group, and the cap bounds what they hold.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::metrics::{Counter, Exposition, Gauge};

/// Slots for open connections, and their figures on `/metrics`.
#[derive(Debug)]
pub(crate) struct Connections {
    /// The listener, in the metric names: `edgewise_<listener>_connections_open`...
    listener: &'static str,
    slots: Arc<Semaphore>,
    max: usize,
    open: Arc<Gauge>,
    /// Times the server found every slot taken and stopped accepting.
    full: Counter,
}

/// A slot for the next connection, taken before accepting it; given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    permit: OwnedSemaphorePermit,
    open: Arc<Gauge>,
}

/// An accepted connection's slot, counted open until dropped.
#[derive(Debug)]
pub(crate) struct Open {
    _permit: OwnedSemaphorePermit,
    open: Arc<Gauge>,
}

impl Connections {
    /// `max` slots: at least 1, at most [`Connections::MAX`] (validated with the config).
    pub(crate) fn new(listener: &'static str, max: usize) -> Connections {
        let max = max.clamp(1, Self::MAX);
        Connections {
            listener,
            slots: Arc::new(Semaphore::new(max)),
            max,
            open: Arc::default(),
            full: Counter::default(),
        }
    }

    /// Largest cap: far above any descriptor limit, far below what a semaphore holds.
    pub(crate) const MAX: usize = 1 << 24;

    /// Checks the cap `max` set by config key `key`.
    pub(crate) fn check(key: &str, max: usize) -> anyhow::Result<()> {
        if !(1..=Self::MAX).contains(&max) {
            anyhow::bail!("{key} must be between 1 and {}", Self::MAX);
        }
        Ok(())
    }

    /// A free slot, waiting for one while every slot is taken.
    pub(crate) async fn slot(&self) -> Slot {
        let permit = match Arc::clone(&self.slots).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                self.full.inc();
                tracing::warn!(
                    listener = self.listener,
                    max = self.max,
                    "as many connections open as allowed: not accepting until one closes"
                );
                self.acquire().await
            }
        };
        Slot {
            permit,
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
        let name = |what: &str| format!("edgewise_{}_connections_{what}", self.listener);
        page.gauge(&name("open"), "Connections open.", self.open.get());
        page.gauge(
            &name("max"),
            "Most connections open at once: past it the listener stops accepting.",
            self.max,
        );
        page.counter(
            &name("full_total"),
            "Times every connection slot was taken and the listener stopped accepting.",
            self.full.get(),
        );
    }
}

impl Slot {
    /// The slot, now held by an accepted connection.
    pub(crate) fn open(self) -> Open {
        self.open.inc();
        Open {
            _permit: self.permit,
            open: self.open,
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.open.dec();
    }
}
