//! The cap on a listener's open connections: the API's (`server.max_connections`) and the
//! feature socket's (`features.socket_max_connections`).
//!
//! Each connection holds a file descriptor, a task and hyper's buffers for as long as the
//! client keeps it: with no cap, a client opening connections without end could run the daemon
//! out of descriptors, and then the token cache could not reach memcached nor the store open a
//! file.
//! At the cap the server stops accepting, so further clients wait in the kernel's listen
//! backlog, as nginx and Envoy's listener limits make them, until a connection closes. Idle and
//! slow ones do within `server.header_timeout_ms` (hyper's header read timeout covers the wait
//! before each request).
//!
//! Before authentication, one address must not be able to take every slot: the API's
//! connections are also capped per peer (`server.max_connections_per_peer`; an IPv4 address, or
//! an IPv6 /64, one host's usual share). A peer past its cap has its new connection closed at
//! once, and the others keep their slots.
//!
//! The feature socket, like memcached, keeps idle connections: its clients are local processes
//! of the store's group, and the cap bounds what they hold.

use std::{
    collections::HashMap,
    net::IpAddr,
    sync::{Arc, Mutex},
};

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
    /// The per-peer cap, on listeners whose peers have addresses.
    peers: Option<Arc<Peers>>,
}

/// Connections open per peer, against the cap.
#[derive(Debug)]
struct Peers {
    max: usize,
    open: Mutex<HashMap<u128, usize>>,
    /// Connections closed at once because their peer had `max` open.
    refused: Counter,
}

/// A slot for the next connection, taken before accepting it; given back when dropped.
#[derive(Debug)]
pub(crate) struct Slot {
    permit: OwnedSemaphorePermit,
    open: Arc<Gauge>,
    peers: Option<Arc<Peers>>,
}

/// An accepted connection's slot, counted open until dropped.
#[derive(Debug)]
pub(crate) struct Open {
    _permit: OwnedSemaphorePermit,
    open: Arc<Gauge>,
    /// The peer's count this connection holds a share of.
    peer: Option<(Arc<Peers>, u128)>,
}

/// What the per-peer cap counts by: an IPv4 address (mapped into IPv6), or an IPv6 /64.
fn peer_key(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u128::from(v4.to_ipv6_mapped()),
            None => u128::from(v6) & !u128::from(u64::MAX),
        },
    }
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
            peers: None,
        }
    }

    /// The same, and no peer holds more than `per_peer` of the slots ([`Slot::open_for`]).
    pub(crate) fn per_peer(mut self, per_peer: usize) -> Connections {
        self.peers = Some(Arc::new(Peers {
            max: per_peer.clamp(1, self.max),
            open: Mutex::default(),
            refused: Counter::default(),
        }));
        self
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
            peers: self.peers.clone(),
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
        if let Some(peers) = &self.peers {
            page.gauge(
                &name("max_per_peer"),
                "Most connections one peer (an IPv4 address, an IPv6 /64) may hold open.",
                peers.max,
            );
            page.counter(
                &name("per_peer_refused_total"),
                "Connections closed at once because their peer held as many as it may.",
                peers.refused.get(),
            );
        }
    }
}

impl Slot {
    /// The slot, now held by an accepted connection (of a peer not counted: a Unix socket's).
    pub(crate) fn open(self) -> Open {
        self.open.inc();
        Open {
            _permit: self.permit,
            open: self.open,
            peer: None,
        }
    }

    /// The slot, now held by a connection from `peer`; none (the slot given back) when that
    /// peer holds as many as the listener's per-peer cap allows.
    pub(crate) fn open_for(mut self, peer: IpAddr) -> Option<Open> {
        let Some(peers) = self.peers.take() else {
            return Some(self.open());
        };
        let key = peer_key(peer);
        {
            let mut open = peers.open.lock().unwrap_or_else(|e| e.into_inner());
            let count = open.entry(key).or_insert(0);
            if *count >= peers.max {
                peers.refused.inc();
                return None;
            }
            *count += 1;
        }
        let mut open = self.open();
        open.peer = Some((peers, key));
        Some(open)
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.open.dec();
        if let Some((peers, key)) = self.peer.take() {
            let mut open = peers.open.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(count) = open.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    open.remove(&key);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn a_peer_holds_at_most_its_share_and_gets_it_back() {
        let connections = Connections::new("t", 8).per_peer(2);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "::ffff:192.0.2.2".parse().unwrap();
        let first = connections.slot().await.open_for(a).unwrap();
        let _second = connections.slot().await.open_for(a).unwrap();
        assert!(connections.slot().await.open_for(a).is_none());
        // The refused connection gave its slot back; another peer is served.
        let _other = connections.slot().await.open_for(b).unwrap();
        assert_eq!(connections.open.get(), 3);
        drop(first);
        let _again = connections.slot().await.open_for(a).unwrap();
        let refused = connections.peers.as_ref().map(|p| p.refused.get());
        assert_eq!(refused, Some(1));
        // One IPv6 host's /64 counts as one peer; the IPv4 form of an address as itself.
        let v6 = |s: &str| peer_key(s.parse().unwrap());
        assert_eq!(v6("2001:db8::1"), v6("2001:db8::ffff:2"));
        assert_ne!(v6("2001:db8::1"), v6("2001:db8:0:1::1"));
        assert_eq!(v6("::ffff:192.0.2.1"), v6("192.0.2.1"));
    }
}
