//! One pick's view of a set: its members, which of them are eligible, and the child load
//! balancers' picks over them.

use super::weights::Weights;
use super::{Members, Rng, next_turn};
use crate::subset::slot::Slot;

/// Random draws before a pick falls back to an exact draw over every member (O(members)): with
/// at least a quarter of the members eligible (compaction keeps half live; out of panic half
/// of those are healthy) that is needed less than once in 10^4 random picks. Weighted picks
/// keep a draw with probability weight / max_weight and so need it more often when weights
/// are skewed: theirs keeps its prefix sums until the set changes.
const TRIES: u32 = 32;

/// The candidates of one pick.
pub(super) struct View<'a> {
    /// `None`: every slot.
    pub members: Option<(&'a Members, &'a [u32])>,
    pub slots: &'a [Slot],
    pub n: u32,
    pub panic: bool,
    pub exclude: Option<u32>,
}

impl View<'_> {
    fn at(&self, i: u32) -> u32 {
        self.members.map_or(i, |(m, chains)| m.get(chains, i))
    }

    /// Whether slot `s` may be picked, the excluded one aside.
    fn eligible(&self, s: u32) -> bool {
        let slot = &self.slots[s as usize];
        slot.alive() && (self.panic || slot.healthy())
    }

    fn ok(&self, s: u32) -> bool {
        self.eligible(s) && self.exclude != Some(s)
    }

    fn weight(&self, s: u32) -> u32 {
        self.slots[s as usize].weight()
    }

    /// The first eligible member from `start` (< n) on, wrapping; its index.
    fn scan(&self, start: u32) -> Option<u32> {
        let mut i = start;
        for _ in 0..self.n {
            if self.ok(self.at(i)) {
                return Some(i);
            }
            i += 1;
            if i == self.n {
                i = 0;
            }
        }
        None
    }

    /// Round robin over members that weigh the same.
    pub fn round_robin(&self, cursor: &mut u32, rng: &mut Rng) -> Option<u32> {
        let start = match *cursor < self.n {
            true => *cursor,
            false => next_turn(*cursor, self.n, rng),
        };
        let i = self.scan(start)?;
        *cursor = i + 1;
        Some(self.at(i))
    }

    /// Round robin over members of different weights (as Envoy's, which takes an earliest
    /// deadline first schedule then): turns over the prefix sums (see [`Weights::turn`]).
    /// A turn on the excluded host (a retry) takes the next turn.
    pub fn weighted_round_robin(&self, rng: &mut Rng, weights: &mut Weights) -> Option<u32> {
        self.take_from_sums(rng, weights, |weights, _, total| weights.turn(total))
    }

    pub fn random(&self, rng: &mut Rng) -> Option<u32> {
        for _ in 0..TRIES {
            let s = self.at(rng.below(self.n));
            if self.ok(s) {
                return Some(s);
            }
        }
        // Not the first eligible member from a random start: one after a long run of
        // ineligible ones would win most such scans.
        self.draw(rng, |_| 1)
    }

    /// In proportion to weight: rejection sampling first (a uniform member kept with
    /// probability weight / max, no memory per set), then, when every draw was rejected, an
    /// exact draw over the prefix sums: for skewed weights (one heavy host among light ones),
    /// or a `max` left high by a weight lowered since, which the sums bring down.
    pub fn weighted(&self, rng: &mut Rng, weights: &mut Weights) -> Option<u32> {
        for _ in 0..TRIES {
            let s = self.at(rng.below(self.n));
            if self.ok(s) && rng.below(weights.max.max(1)) < self.weight(s) {
                return Some(s);
            }
        }
        self.weighted_exact(rng, weights)
    }

    /// An exact draw in proportion to weight over the sums (made on first need, O(members),
    /// then a binary search a draw until the set changes); a draw of the excluded host is
    /// drawn again.
    fn weighted_exact(&self, rng: &mut Rng, weights: &mut Weights) -> Option<u32> {
        self.take_from_sums(rng, weights, |weights, rng, total| {
            weights.member_at(rng.below_u64(total))
        })
    }

    /// The member `next` takes from the sums (given their total), taken again while it is the
    /// excluded host; after [`TRIES`], an exact draw over the eligible members.
    fn take_from_sums(
        &self,
        rng: &mut Rng,
        weights: &mut Weights,
        mut next: impl FnMut(&mut Weights, &mut Rng, u64) -> u32,
    ) -> Option<u32> {
        let total = self.sums(weights, rng)?;
        for _ in 0..TRIES {
            let s = self.at(next(weights, rng, total));
            if self.exclude != Some(s) {
                return Some(s);
            }
        }
        self.draw(rng, |s| u64::from(self.weight(s)))
    }

    /// The set's sums of eligible weights (made if the set changed since); their total.
    fn sums(&self, weights: &mut Weights, rng: &mut Rng) -> Option<u64> {
        let members = (0..self.n).map(|i| {
            let s = self.at(i);
            let slot = &self.slots[s as usize];
            (slot.alive(), self.eligible(s), slot.weight())
        });
        weights.fill(members, |total| rng.below_u64(total))
    }

    /// An exact draw over the eligible members, each in proportion to `weight`: O(members).
    fn draw(&self, rng: &mut Rng, weight: impl Fn(u32) -> u64) -> Option<u32> {
        let eligible = (0..self.n).map(|i| self.at(i)).filter(|&s| self.ok(s));
        let total: u64 = eligible.clone().map(&weight).sum();
        if total == 0 {
            return None;
        }
        let mut left = rng.below_u64(total);
        for s in eligible {
            match left.checked_sub(weight(s)) {
                Some(rest) => left = rest,
                None => return Some(s),
            }
        }
        None
    }

    /// Power of two choices over members that weigh the same: the one of two random members
    /// with fewer requests in flight.
    pub fn least_request(&self, rng: &mut Rng) -> Option<u32> {
        let a = self.random(rng)?;
        let b = self.random(rng).unwrap_or(a);
        let active = |s: u32| self.slots[s as usize].active;
        Some(if active(b) < active(a) { b } else { a })
    }

    /// Power of two choices over members of different weights: two members drawn in
    /// proportion to weight, the one with fewer requests in flight per unit of weight kept,
    /// the first on a tie. With nothing in flight that is the first draw, in proportion to
    /// weight; under load requests in flight settle in proportion to weight, where Envoy's
    /// schedule of `weight / (active + 1)` also aims.
    pub fn weighted_least_request(&self, rng: &mut Rng, weights: &mut Weights) -> Option<u32> {
        let a = self.weighted(rng, weights)?;
        let b = self.weighted(rng, weights).unwrap_or(a);
        let load = |s: u32, other: u32| {
            u64::from(self.slots[s as usize].active) * u64::from(self.weight(other))
        };
        Some(if load(b, a) < load(a, b) { b } else { a })
    }
}
