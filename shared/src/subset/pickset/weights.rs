//! What a set knows of its members' weights: bounds kept as members come and go, and the
//! prefix sums that weighted picks draw from and weighted round robin walks.

use alloc::vec::Vec;

/// Sums per entry of [`Weights::blocks`]: 64 sums are 8 cache lines.
const BLOCK: usize = 64;

/// The weights of a set's members.
#[derive(Debug)]
#[repr(C)]
pub(in crate::subset) struct Weights {
    /// Upper bound of the live members' weights.
    pub max: u32,
    /// Lower bound of the live members' weights. Both bounds are exact after a build and
    /// after [`Weights::fill`]; a removal or a weight lowered leaves them loose until then.
    pub min: u32,
    /// Per member, the weights of the eligible members up to it (live and healthy, or live
    /// in panic); empty until a pick needs them and after any change to the set's members,
    /// their health or weights ([`Weights::changed`]). Clearing keeps the capacity, and a
    /// set that grows makes room as it does ([`Weights::make_room`]): a set's lookups allocate
    /// them once.
    sums: Vec<u64>,
    /// The last sum of each [`BLOCK`] of `sums`: a search reads these (a few KiB, cached
    /// between picks) and then one block, instead of stepping through every level of `sums`
    /// (each a cache miss in a large set: weighted round robin at 100k hosts took 158 ns a
    /// pick by one binary search).
    blocks: Vec<u64>,
    /// Weighted round robin's point on `0..total`; see [`Weights::turn`].
    point: u64,
    /// What the point moves by each turn: coprime to the total.
    stride: u64,
}

impl Default for Weights {
    fn default() -> Weights {
        Weights {
            max: 0,
            min: u32::MAX,
            sums: Vec::new(),
            blocks: Vec::new(),
            point: 0,
            stride: 0,
        }
    }
}

impl Weights {
    /// The bounds of members that all weigh `weight`.
    pub fn uniform(weight: u32) -> Weights {
        Weights {
            max: weight,
            min: weight,
            ..Weights::default()
        }
    }

    /// The same bounds, without sums.
    pub fn bounds(&self) -> Weights {
        Weights {
            max: self.max,
            min: self.min,
            ..Weights::default()
        }
    }

    /// A live member of `weight` joined, or a member's weight became `weight`.
    pub fn count(&mut self, weight: u32) {
        self.max = self.max.max(weight);
        self.min = self.min.min(weight);
    }

    /// Whether every live member weighs the same, as far as the bounds tell: plain turns and
    /// uniform draws then pick as the weights would.
    #[inline(always)]
    pub fn even(&self) -> bool {
        self.min >= self.max
    }

    /// A member, its health or its weight changed: the sums no longer hold.
    pub fn changed(&mut self) {
        self.sums.clear();
        self.blocks.clear();
    }

    /// Room for the sums of `members` members if a pick made them before: the pick that makes
    /// them again, once the set has grown, then allocates nothing (the update does).
    pub fn make_room(&mut self, members: usize) {
        if self.sums.capacity() > 0 {
            self.sums.reserve(members.saturating_sub(self.sums.len()));
            let blocks = members.div_ceil(BLOCK);
            self.blocks
                .reserve(blocks.saturating_sub(self.blocks.len()));
        }
    }

    /// The total of the sums, if made and not 0.
    pub fn total(&self) -> Option<u64> {
        self.sums.last().copied().filter(|&total| total > 0)
    }

    /// The sums over `members` (each as `(live, eligible, weight)`), made if there are none
    /// (the bounds made exact on the way, the point put somewhere at random by `start`);
    /// their total, `None` if nothing is eligible.
    pub fn fill(
        &mut self,
        members: impl Iterator<Item = (bool, bool, u32)>,
        start: impl FnOnce(u64) -> u64,
    ) -> Option<u64> {
        if self.sums.is_empty() {
            let (mut sum, mut max, mut min) = (0, 0, u32::MAX);
            for (live, eligible, weight) in members {
                if live {
                    max = max.max(weight);
                    min = min.min(weight);
                }
                sum += if eligible { u64::from(weight) } else { 0 };
                self.sums.push(sum);
            }
            let ends = self.sums.chunks(BLOCK).filter_map(|block| block.last());
            self.blocks.extend(ends);
            (self.max, self.min) = (max, min);
            if sum > 0 {
                self.point = start(sum);
                self.stride = stride(sum);
            }
        }
        self.total()
    }

    /// Heap bytes held, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        (self.sums.capacity() + self.blocks.capacity()) * size_of::<u64>()
    }

    /// The member whose span of the sums holds `point` (< the total).
    pub fn member_at(&self, point: u64) -> u32 {
        let block = self.blocks.partition_point(|&end| end <= point);
        let start = block * BLOCK;
        let sums = &self.sums[start..(start + BLOCK).min(self.sums.len())];
        (start + sums.partition_point(|&sum| sum <= point)) as u32
    }

    /// Weighted round robin's member this turn (sums filled, `total` theirs). The point
    /// moves on by a stride coprime to the total, so each cycle of `total` turns visits every
    /// point once and so takes every member as often as its weight. A stride of the golden
    /// ratio's fraction of the total spreads a member's turns over the cycle (a heavy host
    /// is not taken weight times in a row, as stepping by 1 would).
    pub fn turn(&mut self, total: u64) -> u32 {
        let point = self.point;
        // Both below the total, which is below 2^63 (weights and hosts are bounded).
        self.point = (point + self.stride) % total;
        self.member_at(point)
    }
}

/// The stride of a weighted round robin over `total` points: the one nearest above
/// `total × 0.618` that is coprime to it (`total - 1` always is), so that the walk visits every
/// point before it repeats.
fn stride(total: u64) -> u64 {
    if total <= 2 {
        return 1;
    }
    let golden = ((u128::from(total) * 0x9e37_79b9_7f4a_7c15) >> 64) as u64;
    (golden.max(1)..total)
        .find(|&s| gcd(s, total) == 1)
        .unwrap_or(1)
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests;
