//! The member list of a subset (shared by identical subsets) and the child load balancers that
//! pick from it.
//!
//! Members are a plain array of slots, so a pick is an index, never a bitmap `select`: a range
//! of a chain (see `build::chain`) that the build shares among the sets of nested selectors,
//! then slots of the set's own (hosts added later). Removed hosts stay as
//! tombstones (picks skip them) until they are more than half of the members, which keeps a
//! removal O(subsets of the host) instead of O(subset size).

use alloc::vec::Vec;

use super::slot::Slot;
use crate::LbPolicy;

/// Random draws before a pick falls back to an exact draw over every member (O(members)): with
/// at least a quarter of the members eligible (compaction keeps half live; out of panic half
/// of those are healthy) that is needed less than once in 10^4 random picks. Weighted picks
/// keep a draw with probability weight / max_weight and so need it more often when weights
/// are skewed: theirs keeps its prefix sums until the set changes.
const TRIES: u32 = 32;

/// splitmix64 over the caller's entropy: one multiply-xorshift per draw, same in Wasm.
#[derive(Debug)]
pub(super) struct Rng(pub u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    fn below(&mut self, n: u32) -> u32 {
        (((self.next() >> 32) * u64::from(n)) >> 32) as u32
    }

    /// Uniform in `0..n` (n > 0), for sums of weights past `u32`.
    fn below_u64(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// How hosts are picked inside a set.
#[derive(Debug, Clone, Copy)]
pub(super) struct Child {
    pub policy: LbPolicy,
    pub panic_threshold: u8,
}

/// A host picked, and whether the set was in panic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Pick {
    pub slot: u32,
    pub panic: bool,
}

/// Where a subset's hosts are, in one word (it rides in the subset table's entries): a
/// [`PickSet`] of `SubsetLb::sets`, or the slot of a subset's only host. A key unique per host
/// makes a subset per host, and a set for each (members, counts, a cursor: 60 bytes and an
/// allocation) was most of such an index, of its build, and a cache miss per lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SetRef(u32);

/// A [`SetRef`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pool {
    /// Index into `SubsetLb::sets`.
    Set(u32),
    /// The slot of the subset's one live host.
    One(u32),
}

impl SetRef {
    /// Set indices and slots stay far below it (at most [`MAX_HOSTS`](crate::hosttable::MAX_HOSTS)
    /// live hosts, and tombstones no more than their sets' live members).
    const ONE: u32 = 1 << 31;

    pub const fn set(i: u32) -> SetRef {
        debug_assert!(i < SetRef::ONE);
        SetRef(i)
    }

    pub const fn one(slot: u32) -> SetRef {
        debug_assert!(slot < SetRef::ONE);
        SetRef(slot | SetRef::ONE)
    }

    #[inline]
    pub fn get(self) -> Pool {
        match self.0 & SetRef::ONE {
            0 => Pool::Set(self.0),
            _ => Pool::One(self.0 & !SetRef::ONE),
        }
    }

    /// The set index, if a set.
    pub fn as_set(self) -> Option<u32> {
        match self.get() {
            Pool::Set(i) => Some(i),
            Pool::One(_) => None,
        }
    }
}

/// Picks the live host of slot `s` as a set of that one host would: when healthy, or when
/// not and any panic threshold (one unhealthy host is 0% healthy) lets the set panic; never
/// `exclude`.
pub(super) fn pick_one(s: u32, slots: &[Slot], child: Child, exclude: Option<u32>) -> Option<Pick> {
    let slot = &slots[s as usize];
    let panic = !slot.healthy && child.panic_threshold > 0;
    let ok = (slot.healthy || panic) && exclude != Some(s);
    ok.then_some(Pick { slot: s, panic })
}

/// A set's member slots: `shared` slots of the chains from `start` on, then its `own`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Members {
    start: u32,
    shared: u32,
    own: Vec<u32>,
}

impl Members {
    /// Members of the set's own.
    pub fn owned(own: Vec<u32>) -> Members {
        Members {
            start: 0,
            shared: 0,
            own,
        }
    }

    /// The `len` slots of the chains from `start` on.
    pub fn shared(start: u32, len: u32) -> Members {
        Members {
            // None shared start at 0: freed chains are empty.
            start: if len == 0 { 0 } else { start },
            shared: len,
            own: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.shared as usize + self.own.len()
    }

    /// Whether some members are in the chains.
    pub fn is_chained(&self) -> bool {
        self.shared > 0
    }

    /// Member `i` (< `len`). Always inlined, as [`PickSet::pick_clean`] is.
    #[inline(always)]
    pub fn get(&self, chains: &[u32], i: u32) -> u32 {
        match i.checked_sub(self.shared) {
            None => chains[(self.start + i) as usize],
            Some(j) => self.own[j as usize],
        }
    }

    pub fn iter<'a>(&'a self, chains: &'a [u32]) -> impl Iterator<Item = u32> + Clone + 'a {
        let (start, shared) = (self.start as usize, self.shared as usize);
        chains[start..start + shared]
            .iter()
            .chain(&self.own)
            .copied()
    }

    pub fn push(&mut self, s: u32) {
        self.own.push(s);
    }

    /// Heap bytes of its own (the chains are counted once, by their owner).
    pub fn heap_bytes(&self) -> usize {
        self.own.capacity() * size_of::<u32>()
    }
}

/// Round robin's cursor before a set's first pick.
const UNSTARTED: u32 = u32::MAX;

/// The hosts of one or more identical subsets, or (`all`) of the whole table.
#[derive(Debug)]
pub(super) struct PickSet {
    /// Member slots, possibly dead; unused when `all`.
    pub members: Members,
    /// Every slot of the table is a member.
    pub all: bool,
    /// Subsets sharing this set.
    pub refs: u32,
    pub live: u32,
    pub healthy: u32,
    /// Upper bound of the live members' weights.
    pub max_weight: u32,
    /// single_host_per_subset: only `first` is picked.
    pub single: bool,
    /// In a `single` set, the host picked: its live member of the lowest address (see
    /// `SubsetLb::elect`); unused in other sets.
    pub first: u32,
    /// Round robin's next member, from a random one at the first pick ([`UNSTARTED`] until
    /// then): every isolate starting at member 0 would send the first requests after each
    /// table change to the same host.
    cursor: u32,
    /// Weighted picks' last resort: per member, the weights of the eligible members up to it
    /// (live and healthy: not in panic, nothing excluded); empty until needed and after any
    /// change to the set's members, their health or weights ([`PickSet::changed`]).
    prefix: Vec<u64>,
}

impl Default for PickSet {
    fn default() -> PickSet {
        PickSet {
            members: Members::default(),
            all: false,
            refs: 0,
            live: 0,
            healthy: 0,
            max_weight: 0,
            single: false,
            first: 0,
            cursor: UNSTARTED,
            prefix: Vec::new(),
        }
    }
}

impl PickSet {
    /// A set of live `members`.
    pub fn new(members: Members, single: bool, slots: &[Slot], chains: &[u32]) -> PickSet {
        let mut set = PickSet {
            single,
            ..PickSet::default()
        };
        for m in members.iter(chains) {
            set.count_in(&slots[m as usize]);
        }
        set.members = members;
        set
    }

    /// A set of live `members` of a table whose hosts are all healthy and weigh `weight`:
    /// counted without reading a slot.
    pub fn uniform(members: Members, single: bool, weight: u32) -> PickSet {
        let n = members.len() as u32;
        PickSet {
            single,
            live: n,
            healthy: n,
            max_weight: weight,
            members,
            ..PickSet::default()
        }
    }

    /// The set of every slot of the table, empty for now.
    pub fn all() -> PickSet {
        PickSet {
            all: true,
            ..PickSet::default()
        }
    }

    fn count_in(&mut self, slot: &Slot) {
        self.live += 1;
        self.healthy += u32::from(slot.healthy);
        self.max_weight = self.max_weight.max(slot.weight());
    }

    /// Adds a live slot (not yet a member).
    pub fn add(&mut self, s: u32, slots: &[Slot]) {
        if !self.all {
            self.members.push(s);
        }
        self.count_in(&slots[s as usize]);
        self.changed();
    }

    /// A member, its health or its weight changed: the weighted prefix sums no longer hold.
    pub fn changed(&mut self) {
        self.prefix.clear();
    }

    /// Takes a member out of the counts as its host is removed; its entry stays as a tombstone.
    pub fn remove(&mut self, s: u32, slots: &[Slot]) {
        self.live -= 1;
        self.healthy -= u32::from(slots[s as usize].healthy);
        self.changed();
    }

    /// Whether tombstones are more than half of the members.
    pub fn wants_compaction(&self) -> bool {
        !self.all && self.members.len() > 2 * self.live as usize
    }

    /// Drops the tombstones (the live members become the set's own); returns their slots, no
    /// longer held by this set.
    pub fn compact(&mut self, slots: &[Slot], chains: &[u32]) -> Vec<u32> {
        let (live, dead): (Vec<u32>, _) = self
            .members
            .iter(chains)
            .partition(|&m| slots[m as usize].alive);
        self.members = Members::owned(live);
        self.changed();
        dead
    }

    /// The live members, for a copy.
    pub fn live_members(&self, slots: &[Slot], chains: &[u32]) -> Vec<u32> {
        let live = |m: &u32| slots[*m as usize].alive;
        self.members.iter(chains).filter(live).collect()
    }

    /// Picks a host, never `exclude`; `None` if the set has no host the policy may pick.
    pub fn pick(
        &mut self,
        slots: &[Slot],
        chains: &[u32],
        child: Child,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<Pick> {
        if self.live == 0 {
            return None;
        }
        if self.single {
            return self.pick_single(slots, child, exclude);
        }
        if exclude.is_none()
            && let Some(slot) = self.pick_clean(slots.len(), chains, child.policy, rng)
        {
            return Some(Pick { slot, panic: false });
        }
        let panic =
            u64::from(self.healthy) * 100 < u64::from(child.panic_threshold) * u64::from(self.live);
        if !panic && self.healthy == 0 {
            return None;
        }
        let n = if self.all {
            slots.len() as u32
        } else {
            self.members.len() as u32
        };
        let view = View {
            members: (!self.all).then_some((&self.members, chains)),
            slots,
            n,
            panic,
            exclude,
        };
        let slot = match child.policy {
            LbPolicy::RoundRobin => view.round_robin(&mut self.cursor, rng),
            LbPolicy::Weighted => view
                .weighted(rng, self.max_weight)
                .or_else(|| view.weighted_exact(rng, &mut self.prefix, &mut self.max_weight)),
            LbPolicy::LeastRequest => view.least_request(rng),
            _ => view.random(rng),
        }?;
        Some(Pick { slot, panic })
    }

    /// [`PickSet::pick`] without `exclude` when it would take [`PickSet::pick_clean`], else
    /// `None` with nothing changed: the lookup's fast path, which the general pick redoes.
    #[inline]
    pub fn pick_fast(
        &mut self,
        slot_count: usize,
        chains: &[u32],
        policy: LbPolicy,
        rng: &mut Rng,
    ) -> Option<u32> {
        if self.live == 0 || self.single {
            return None;
        }
        self.pick_clean(slot_count, chains, policy, rng)
    }

    /// Picks without reading the slots when every member is live and healthy (no tombstone,
    /// no panic, any member eligible), as the general pick would; `None` to take that one.
    /// Always inlined: once the general pick grew (weighted prefix sums) a plain `#[inline]`
    /// was not taken, and the call cost a lookup 8 instructions of 265.
    #[inline(always)]
    fn pick_clean(
        &mut self,
        slot_count: usize,
        chains: &[u32],
        policy: LbPolicy,
        rng: &mut Rng,
    ) -> Option<u32> {
        let n = match self.all {
            true => slot_count,
            false => self.members.len(),
        };
        if self.live as usize != n || self.healthy != self.live {
            return None;
        }
        let i = match policy {
            LbPolicy::RoundRobin => {
                let i = if (self.cursor as usize) < n {
                    self.cursor
                } else {
                    next_turn(self.cursor, n as u32, rng)
                };
                self.cursor = i + 1;
                i
            }
            LbPolicy::Random => rng.below(n as u32),
            _ => return None,
        };
        Some(match self.all {
            true => i,
            false => self.members.get(chains, i),
        })
    }

    fn pick_single(&self, slots: &[Slot], child: Child, exclude: Option<u32>) -> Option<Pick> {
        pick_one(self.first, slots, child, exclude)
    }

    /// Heap bytes held, for the memory figures (not counting the chains).
    pub fn heap_bytes(&self) -> usize {
        self.members.heap_bytes() + self.prefix.capacity() * size_of::<u64>()
    }
}

/// Round robin's member after the cursor ran past the `n` members: the first, or a random one
/// at a set's first pick.
#[cold]
fn next_turn(cursor: u32, n: u32, rng: &mut Rng) -> u32 {
    match cursor {
        UNSTARTED => rng.below(n),
        _ => 0,
    }
}

/// The candidates of one pick.
struct View<'a> {
    /// `None`: every slot.
    members: Option<(&'a Members, &'a [u32])>,
    slots: &'a [Slot],
    n: u32,
    panic: bool,
    exclude: Option<u32>,
}

impl View<'_> {
    fn at(&self, i: u32) -> u32 {
        self.members.map_or(i, |(m, chains)| m.get(chains, i))
    }

    fn ok(&self, s: u32) -> bool {
        let slot = &self.slots[s as usize];
        slot.alive && (self.panic || slot.healthy) && self.exclude != Some(s)
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

    fn round_robin(&self, cursor: &mut u32, rng: &mut Rng) -> Option<u32> {
        let start = match *cursor < self.n {
            true => *cursor,
            false => next_turn(*cursor, self.n, rng),
        };
        let i = self.scan(start)?;
        *cursor = i + 1;
        Some(self.at(i))
    }

    fn random(&self, rng: &mut Rng) -> Option<u32> {
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

    /// Rejection sampling: a uniform member is kept with probability weight / max_weight, which
    /// picks in proportion to weight without a prefix-sum array per subset. `None` when every
    /// draw was rejected: [`View::weighted_exact`] then.
    fn weighted(&self, rng: &mut Rng, max_weight: u32) -> Option<u32> {
        for _ in 0..TRIES {
            let s = self.at(rng.below(self.n));
            if self.ok(s) && rng.below(max_weight.max(1)) < self.slots[s as usize].weight() {
                return Some(s);
            }
        }
        None
    }

    /// An exact draw in proportion to weight, for when rejection sampling keeps rejecting:
    /// skewed weights (one heavy host among light ones), or a `max_weight` left high by a
    /// weight lowered since, which it brings down. Over the set's prefix sums of eligible
    /// weights (made on first need, O(members), then a binary search until the set changes);
    /// in panic or with a host excluded, a walk of every member.
    fn weighted_exact(
        &self,
        rng: &mut Rng,
        prefix: &mut Vec<u64>,
        max_weight: &mut u32,
    ) -> Option<u32> {
        let weight = |s: u32| u64::from(self.slots[s as usize].weight());
        if self.panic || self.exclude.is_some() {
            return self.draw(rng, weight);
        }
        if prefix.is_empty() {
            let mut sum = 0;
            *max_weight = 0;
            for i in 0..self.n {
                let s = self.at(i);
                let slot = &self.slots[s as usize];
                if slot.alive {
                    *max_weight = (*max_weight).max(slot.weight());
                }
                sum += if self.ok(s) { weight(s) } else { 0 };
                prefix.push(sum);
            }
        }
        let total = prefix.last().copied().filter(|&t| t > 0)?;
        let r = rng.below_u64(total);
        let i = prefix.partition_point(|&sum| sum <= r);
        Some(self.at(i as u32))
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

    fn least_request(&self, rng: &mut Rng) -> Option<u32> {
        let a = self.random(rng)?;
        let b = self.random(rng).unwrap_or(a);
        let active = |s: u32| self.slots[s as usize].active;
        Some(if active(b) < active(a) { b } else { a })
    }
}
