//! A set of hosts (a subset, the default subset, every host) and how the child policy picks in
//! it. Members and healthy members are roaring bitmaps of host slots; a pick selects by rank,
//! so it allocates nothing. A policy is one impl of [`Policy`].

use alloc::vec::Vec;

use roaring::RoaringBitmap;

use super::Slot;
use crate::LbPolicy;

/// A splitmix64 stream over the caller's entropy: picks need spread, not secrecy.
#[derive(Debug)]
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n` > 0).
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// The hosts a pick may return: `hosts` but `exclude` (a member, when set).
pub(super) struct Pool<'a> {
    hosts: &'a RoaringBitmap,
    /// Hosts in `hosts`.
    count: u64,
    /// Rank of the excluded host in `hosts`.
    excluded: Option<u64>,
    slots: &'a [Slot],
    /// Whether hosts' weights differ anywhere in the index: else weights are ignored.
    weighted: bool,
}

impl Pool<'_> {
    fn len(&self) -> u64 {
        self.count - u64::from(self.excluded.is_some())
    }

    /// The `n`-th host (`n` < [`Pool::len`]).
    fn nth(&self, n: u64) -> Option<u32> {
        let n = match self.excluded {
            Some(r) if n >= r => n + 1,
            _ => n,
        };
        self.hosts.select(u32::try_from(n).ok()?)
    }

    fn weight(&self, slot: u32) -> u64 {
        u64::from(self.slots[slot as usize].weight)
    }
}

/// What a set keeps between picks for its policy.
#[derive(Debug, Clone, Default)]
pub(super) struct Turn {
    /// Round robin's position, in hosts or in weight units; it starts at a random one, so
    /// that isolates do not all begin with the same host.
    next: Option<u64>,
    /// Running weight sums over the pool, for weighted picks; rebuilt when stale.
    sums: Vec<u64>,
    /// The pool `sums` were built for (`Some(panic)`), `None` when stale.
    sums_for: Option<bool>,
    /// Whether the pool's weights are all equal: then picks ignore them.
    even: bool,
}

/// A child load balancing policy: picks one host of the pool.
pub(super) trait Policy {
    fn pick(&self, pool: &Pool<'_>, turn: &mut Turn, rng: &mut Rng) -> Option<u32>;
}

struct RoundRobin;
struct Weighted;
struct Random;
/// Power of two choices on requests in flight (Envoy's default `choice_count`).
struct LeastRequest;

pub(super) fn policy(policy: LbPolicy) -> &'static dyn Policy {
    match policy {
        LbPolicy::Weighted => &Weighted,
        LbPolicy::Random => &Random,
        LbPolicy::LeastRequest => &LeastRequest,
        _ => &RoundRobin,
    }
}

impl Policy for RoundRobin {
    fn pick(&self, pool: &Pool<'_>, turn: &mut Turn, rng: &mut Rng) -> Option<u32> {
        if !pool.weighted {
            // The turn kept below the pool's size: a division only when the pool shrank.
            let len = pool.len();
            let at = match turn.next {
                Some(at) if at < len => at,
                Some(at) => at % len,
                None => rng.below(len),
            };
            turn.next = Some(at + 1);
            return pool.nth(at);
        }
        // Weighted round robin: each host owns as many weight units as its weight, and the
        // turn visits the units in a stride coprime with their total, so any `total` turns in
        // a row give each host its weight, interleaved.
        let at = *turn.next.get_or_insert_with(|| rng.next() >> 32);
        turn.next = Some(at.wrapping_add(1));
        by_weight(pool, turn, |total| (at % total) * stride(total) % total)
    }
}

/// The step near `total` / golden ratio that shares no factor with `total`.
fn stride(total: u64) -> u64 {
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut step = (total * 5 / 8).max(1);
    while gcd(step, total) != 1 {
        step += 1;
    }
    step
}

impl Policy for Weighted {
    fn pick(&self, pool: &Pool<'_>, turn: &mut Turn, rng: &mut Rng) -> Option<u32> {
        match pool.weighted {
            false => pool.nth(rng.below(pool.len())),
            true => by_weight(pool, turn, |total| rng.below(total)),
        }
    }
}

impl Policy for Random {
    fn pick(&self, pool: &Pool<'_>, _: &mut Turn, rng: &mut Rng) -> Option<u32> {
        pool.nth(rng.below(pool.len()))
    }
}

impl Policy for LeastRequest {
    fn pick(&self, pool: &Pool<'_>, turn: &mut Turn, rng: &mut Rng) -> Option<u32> {
        // Two candidates, drawn by weight when weights differ.
        let (a, b) = match pool.weighted {
            true => (
                by_weight(pool, turn, |total| rng.below(total))?,
                by_weight(pool, turn, |total| rng.below(total))?,
            ),
            false => {
                let len = pool.len();
                let a = rng.below(len);
                // A second, different host when there is one.
                let b = match len {
                    1 => a,
                    _ => (a + 1 + rng.below(len - 1)) % len,
                };
                (pool.nth(a)?, pool.nth(b)?)
            }
        };
        let load = |s: u32| u64::from(pool.slots[s as usize].active);
        // Fewer in flight per unit of weight: a * w_b <= b * w_a.
        let a_first = load(a) * pool.weight(b) <= load(b) * pool.weight(a);
        Some(if a_first { a } else { b })
    }
}

/// The host owning weight unit `unit(total)` of the pool, `total` its weight.
fn by_weight(pool: &Pool<'_>, turn: &Turn, unit: impl FnOnce(u64) -> u64) -> Option<u32> {
    let excluded = pool.excluded.map(|r| r as usize);
    let sums = &turn.sums;
    let before = |i: usize| if i == 0 { 0 } else { sums[i - 1] };
    let all = *sums.last()?;
    let (total, skipped) = match excluded {
        Some(r) => (
            all - (sums[r] - before(r)),
            Some((before(r), sums[r] - before(r))),
        ),
        None => (all, None),
    };
    if total == 0 {
        return None;
    }
    let mut u = unit(total);
    if let Some((start, width)) = skipped
        && u >= start
    {
        u += width;
    }
    let i = sums.partition_point(|&s| s <= u);
    pool.hosts.select(u32::try_from(i).ok()?)
}

/// A set of hosts with what its picks need.
#[derive(Debug, Clone, Default)]
pub(super) struct HostSet {
    pub(super) members: RoaringBitmap,
    pub(super) healthy: RoaringBitmap,
    /// The bitmaps' lengths, which a pick reads without touching them.
    counts: Counts,
    /// `single_host_per_subset`: the member every pick returns, the lowest address (as in
    /// every isolate, whatever order hosts came in).
    pub(super) first: Option<u32>,
    pub(super) single: bool,
    turn: Turn,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    members: u64,
    healthy: u64,
}

/// Everything a pick reads besides the set.
pub(super) struct Context<'a> {
    pub(super) slots: &'a [Slot],
    pub(super) policy: &'static dyn Policy,
    pub(super) panic_threshold: u8,
    pub(super) weighted: bool,
}

impl HostSet {
    pub(super) fn new(members: RoaringBitmap, slots: &[Slot], single: bool) -> HostSet {
        let healthy = members.iter().filter(|&s| slots[s as usize].healthy);
        let healthy = RoaringBitmap::from_sorted_iter(healthy).unwrap_or_default();
        HostSet::with_healthy(members, healthy, slots, single)
    }

    /// A set whose healthy members are known.
    pub(super) fn with_healthy(
        members: RoaringBitmap,
        healthy: RoaringBitmap,
        slots: &[Slot],
        single: bool,
    ) -> HostSet {
        let counts = Counts {
            members: members.len(),
            healthy: healthy.len(),
        };
        let mut set = HostSet {
            healthy,
            members,
            counts,
            single,
            ..HostSet::default()
        };
        set.elect(slots);
        set
    }

    pub(super) fn len(&self) -> u64 {
        self.counts.members
    }

    /// Heap bytes of the bitmaps and the weight sums.
    pub(super) fn heap_bytes(&self) -> usize {
        let bitmap = |b: &RoaringBitmap| {
            let stats = b.statistics();
            let bytes = stats.n_bytes_array_containers
                + stats.n_bytes_run_containers
                + stats.n_bytes_bitset_containers;
            bytes as usize
        };
        bitmap(&self.members) + bitmap(&self.healthy) + self.turn.sums.capacity() * 8
    }

    pub(super) fn insert(&mut self, slot: u32, slots: &[Slot]) {
        self.counts.members += u64::from(self.members.insert(slot));
        // Room for the sums of a set that has made them: a pick after updates allocates
        // nothing.
        let sums = &mut self.turn.sums;
        if sums.capacity() > 0 {
            sums.reserve((self.members.len() as usize).saturating_sub(sums.len()));
        }
        if slots[slot as usize].healthy {
            self.counts.healthy += u64::from(self.healthy.insert(slot));
        }
        if self.single
            && self
                .first
                .is_none_or(|f| address(slots, slot) < address(slots, f))
        {
            self.first = Some(slot);
        }
        self.stale();
    }

    pub(super) fn remove(&mut self, slot: u32, slots: &[Slot]) {
        self.counts.members -= u64::from(self.members.remove(slot));
        self.counts.healthy -= u64::from(self.healthy.remove(slot));
        if self.first == Some(slot) {
            self.elect(slots);
        }
        self.stale();
    }

    /// Records the host's health (a member).
    pub(super) fn set_healthy(&mut self, slot: u32, healthy: bool) {
        match healthy {
            true => self.counts.healthy += u64::from(self.healthy.insert(slot)),
            false => self.counts.healthy -= u64::from(self.healthy.remove(slot)),
        };
        self.stale();
    }

    /// Weight sums are rebuilt at the next weighted pick.
    pub(super) fn stale(&mut self) {
        self.turn.sums_for = None;
    }

    fn elect(&mut self, slots: &[Slot]) {
        self.first = match self.single {
            true => self.members.iter().min_by_key(|&s| address(slots, s)),
            false => None,
        };
    }

    /// A host other than `exclude`, and whether the set was in panic (fewer healthy members
    /// than `panic_threshold` percent: then any member may be picked).
    pub(super) fn pick(
        &mut self,
        cx: &Context<'_>,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<(u32, bool)> {
        let threshold = u64::from(cx.panic_threshold);
        if self.single {
            let first = self.first?;
            let healthy = cx.slots[first as usize].healthy;
            let panic = !healthy && threshold > 0;
            return ((healthy || panic) && exclude != Some(first)).then_some((first, panic));
        }
        let Counts { members, healthy } = self.counts;
        let panic = healthy * 100 < threshold * members;
        let (hosts, count) = match panic {
            true => (&self.members, members),
            false => (&self.healthy, healthy),
        };
        let excluded = exclude
            .filter(|&e| hosts.contains(e))
            .map(|e| hosts.rank(e) - 1);
        let mut pool = Pool {
            hosts,
            count,
            excluded,
            slots: cx.slots,
            weighted: cx.weighted,
        };
        if pool.len() == 0 {
            return None;
        }
        if cx.weighted && self.turn.sums_for != Some(panic) {
            let turn = &mut self.turn;
            turn.sums.clear();
            let first = hosts.min().map(|s| pool.weight(s));
            turn.even = true;
            let mut sum = 0;
            for slot in hosts {
                let weight = pool.weight(slot);
                turn.even &= Some(weight) == first;
                sum += weight;
                turn.sums.push(sum);
            }
            turn.sums_for = Some(panic);
        }
        pool.weighted = cx.weighted && !self.turn.even;
        let host = cx.policy.pick(&pool, &mut self.turn, rng)?;
        Some((host, panic))
    }
}

fn address(slots: &[Slot], slot: u32) -> &str {
    &slots[slot as usize].address
}
