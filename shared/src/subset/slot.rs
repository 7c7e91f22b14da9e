//! Host slots: what the load balancer keeps of each host, split by use.

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
    /// Once the host is removed, pick sets whose member list still holds this slot (0 while
    /// it is alive: then it is in exactly the sets of its subsets).
    pub held: u32,
    /// Requests in flight, for least-request.
    pub active: u32,
    pub alive: bool,
    pub healthy: bool,
}
