//! Host slots: what the load balancer keeps of each host, split by use.

use alloc::boxed::Box;

/// The per-host state a pick reads, kept apart from the strings so that picks in large tables
/// walk a dense array (20 bytes a host, not 56).
///
/// A removed host's slot stays dead (`alive == false`) until no pick set holds it any more,
/// and only then is reused (with the next generation), so a stale entry in a member list can
/// never point at a newer host.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub weight: u32,
    pub generation: u32,
    /// Pick sets whose member list holds this slot (live or not).
    pub held: u32,
    /// Requests in flight, for least-request.
    pub active: u32,
    pub alive: bool,
    pub healthy: bool,
}

/// What only updates and address lookups read.
#[derive(Debug)]
pub(super) struct Record {
    pub address: Box<str>,
    /// The host's key=value ids, sorted by key then id (several per key with `list_as_any`).
    pub kvs: Box<[u32]>,
}
