//! Host slots: what the load balancer keeps of each host, split by use.

/// The per-host state a pick reads, kept apart from the strings so that picks in large tables
/// walk a dense array of 8 bytes a host: 800 KB at 100k hosts. At 12 bytes (1.2 MB) each
/// lookup's one read of its host's slot missed more often: 4x3 lookups at 100k hosts took
/// 10-15% longer. Even 800 KB does not fit these machines' L2 (512 KiB a core), so the
/// round-robin pick hints the next turn's slot to the cache (`prefetch`).
///
/// A removed host's slot stays dead (not alive) until no pick set holds it any more, and only
/// then is reused (with the next generation), so a stale entry in a member list can never
/// point at a newer host.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    pub generation: u32,
    /// While alive, requests in flight (least-request), counted up to `u16::MAX`. Once
    /// removed, the pick sets whose member list still holds the slot (while alive it is in
    /// exactly the sets of its subsets, so that count is taken at removal; see
    /// [`Slot::hold`]).
    pub active: u16,
    /// The weight in the low [`WEIGHT_BITS`], then [`ALIVE`] and [`HEALTHY`].
    bits: u16,
}

const WEIGHT_BITS: u32 = 14;
const WEIGHT: u16 = (1 << WEIGHT_BITS) - 1;
const ALIVE: u16 = 1 << WEIGHT_BITS;
const HEALTHY: u16 = 1 << (WEIGHT_BITS + 1);

// Weights fit their bits.
const _: () = assert!(crate::MAX_WEIGHT <= WEIGHT as u32);

/// A hold count too large for the slot: it is never freed.
const HELD_FOREVER: u16 = u16::MAX;

impl Slot {
    /// A live slot of generation 0 (the caller brings its own generation to a reused one).
    pub fn new(weight: u32, healthy: bool) -> Slot {
        let mut slot = Slot {
            generation: 0,
            active: 0,
            bits: ALIVE,
        };
        slot.set_weight(weight);
        slot.set_healthy(healthy);
        slot
    }

    pub fn weight(&self) -> u32 {
        u32::from(self.bits & WEIGHT)
    }

    /// `weight` is at most [`MAX_WEIGHT`](crate::MAX_WEIGHT).
    pub fn set_weight(&mut self, weight: u32) {
        debug_assert!(weight <= crate::MAX_WEIGHT);
        self.bits = (self.bits & !WEIGHT) | (weight as u16 & WEIGHT);
    }

    /// Whether the slot holds a host (not removed).
    pub fn alive(&self) -> bool {
        self.bits & ALIVE != 0
    }

    pub fn healthy(&self) -> bool {
        self.bits & HEALTHY != 0
    }

    pub fn set_healthy(&mut self, healthy: bool) {
        self.bits = (self.bits & !HEALTHY) | if healthy { HEALTHY } else { 0 };
    }

    /// Marks the host removed, its slot held by `sets` pick sets (see [`Slot::let_go`]). A
    /// count past what the slot keeps holds it forever: a slot never reused is safe, one
    /// reused while a set still holds it is not.
    pub fn hold(&mut self, sets: u32) {
        self.bits &= !ALIVE;
        self.active = u16::try_from(sets).unwrap_or(HELD_FOREVER);
    }

    /// One set holding the removed host's slot let go of it.
    pub fn let_go(&mut self) {
        debug_assert!(!self.alive());
        if self.active != HELD_FOREVER {
            self.active -= 1;
        }
    }

    /// Whether the slot can take another host: removed, and no set holds it any more.
    pub fn is_free(&self) -> bool {
        !self.alive() && self.active == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_weight_share_their_bits() {
        for weight in [1, 2, 9_999, crate::MAX_WEIGHT] {
            for healthy in [false, true] {
                let mut slot = Slot::new(weight, healthy);
                assert_eq!(
                    (slot.weight(), slot.healthy(), slot.alive()),
                    (weight, healthy, true)
                );
                slot.set_healthy(!healthy);
                slot.set_weight(crate::MAX_WEIGHT + 1 - weight);
                assert_eq!(slot.weight(), crate::MAX_WEIGHT + 1 - weight);
                assert_eq!((slot.healthy(), slot.alive()), (!healthy, true));
            }
        }
        assert_eq!(size_of::<Slot>(), 8);
    }

    #[test]
    fn a_removed_slot_is_free_once_every_set_let_go() {
        let mut slot = Slot::new(3, true);
        slot.active = 7;
        slot.hold(2);
        assert!(!slot.alive() && !slot.is_free());
        slot.let_go();
        assert!(!slot.is_free());
        slot.let_go();
        assert!(slot.is_free());
        assert_eq!(slot.weight(), 3);
        // Too many sets to count: never free.
        slot.hold(u32::from(u16::MAX) + 5);
        for _ in 0..100_000 {
            slot.let_go();
        }
        assert!(!slot.is_free());
        let mut none = Slot::new(1, false);
        none.hold(0);
        assert!(none.is_free());
    }
}
