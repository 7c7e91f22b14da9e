//! Host slots: what the load balancer keeps of each host, split by use.

/// The per-host state a pick reads, kept apart from the strings so that picks in large tables
/// walk a dense array: 12 bytes a host, so that 100k hosts (1.2 MB) stay in a core's L2
/// cache, where a hit's one load of its host's slot is cheap.
///
/// A removed host's slot stays dead (`alive == false`) until no pick set holds it any more,
/// and only then is reused (with the next generation), so a stale entry in a member list can
/// never point at a newer host.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub generation: u32,
    /// While alive, requests in flight (least-request). Once removed, when nothing counts its
    /// requests any more, the pick sets whose member list still holds the slot (while alive
    /// it is in exactly the sets of its subsets, so that count is taken at removal).
    pub active: u32,
    weight: u16,
    pub alive: bool,
    pub healthy: bool,
}

// Weights are stored in 16 bits.
const _: () = assert!(crate::MAX_WEIGHT <= u16::MAX as u32);

impl Slot {
    /// A live slot of generation 0 (the caller brings its own generation to a reused one).
    pub fn new(weight: u32, healthy: bool) -> Slot {
        Slot {
            generation: 0,
            active: 0,
            weight: weight as u16,
            alive: true,
            healthy,
        }
    }

    pub fn weight(&self) -> u32 {
        u32::from(self.weight)
    }

    /// `weight` is at most [`MAX_WEIGHT`](crate::MAX_WEIGHT).
    pub fn set_weight(&mut self, weight: u32) {
        self.weight = weight as u16;
    }

    /// The pick sets still holding a removed host's slot.
    pub fn held_mut(&mut self) -> &mut u32 {
        debug_assert!(!self.alive);
        &mut self.active
    }
}
