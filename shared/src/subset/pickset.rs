//! The member list of a subset (shared by identical subsets) and the child load balancers that
//! pick from it.
//!
//! Members are a plain array of slots, so a pick is an index, never a bitmap `select`: a range
//! of a chain (see `build::chain`) that the build shares among the sets of nested selectors,
//! then slots of the set's own (hosts added later). Removed hosts stay as
//! tombstones (picks skip them) until they are more than half of the members, which keeps a
//! removal O(subsets of the host) instead of O(subset size).

use alloc::vec::Vec;

use super::prefetch::prefetch;
use super::slot::Slot;
use crate::LbPolicy;

mod view;
mod weights;

#[cfg(test)]
mod tests;

use view::View;
use weights::Weights;

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
    let panic = !slot.healthy() && child.panic_threshold > 0;
    let ok = (slot.healthy() || panic) && exclude != Some(s);
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

    /// Member `i` if it lies in the chains; past them, a slot of the chains or `None`. For
    /// hints, in as few instructions as can be.
    #[inline(always)]
    pub fn chained(&self, chains: &[u32], i: u32) -> Option<u32> {
        chains.get((self.start + i) as usize).copied()
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
///
/// Laid out by hand, a cache line per set: what a pick reads (members, counts, cursor, weight
/// bounds) comes first, within the set's first 64 bytes; the weighted picks' sums and the
/// bookkeeping of updates after.
#[derive(Debug)]
#[repr(C, align(64))]
pub(super) struct PickSet {
    /// Member slots, possibly dead; unused when `all`.
    pub members: Members,
    pub live: u32,
    pub healthy: u32,
    /// Round robin's next member while the members weigh the same (else see
    /// [`Weights::turn`]), from a random one at the first pick ([`UNSTARTED`] until then):
    /// every isolate starting at member 0 would send the first requests after each
    /// table change to the same host.
    cursor: u32,
    /// Every slot of the table is a member.
    pub all: bool,
    /// single_host_per_subset: only `first` is picked.
    pub single: bool,
    /// A set of members (neither `all` nor `single`) that are all live and healthy: the one
    /// flag the lookup's fast path reads for five counts and flags (14 instructions of a 4
    /// keys x 3 values lookup's 199). Kept by [`PickSet::changed`], which every change of the
    /// members or counts calls; debug builds check it at each fast pick.
    clean: bool,
    /// Bounds of the live members' weights, and the sums weighted picks draw from.
    pub weights: Weights,
    /// Subsets sharing this set.
    pub refs: u32,
    /// In a `single` set, the host picked: its live member of the lowest address (see
    /// `SubsetLb::elect`); unused in other sets.
    pub first: u32,
}

impl Default for PickSet {
    fn default() -> PickSet {
        PickSet {
            members: Members::default(),
            all: false,
            refs: 0,
            live: 0,
            healthy: 0,
            weights: Weights::default(),
            single: false,
            clean: false,
            first: 0,
            cursor: UNSTARTED,
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
        set.note_clean();
        set
    }

    /// A set of live `members` of a table whose hosts are all healthy and weigh `weight`:
    /// counted without reading a slot.
    pub fn uniform(members: Members, single: bool, weight: u32) -> PickSet {
        let n = members.len() as u32;
        let mut set = PickSet {
            single,
            live: n,
            healthy: n,
            weights: Weights::uniform(weight),
            members,
            ..PickSet::default()
        };
        set.note_clean();
        set
    }

    /// This set's members (none dead) and counts, with live slot `s` added: the set of a host
    /// that joins only some of the subsets sharing this one. No member's slot is read (a
    /// chained set's copy shares its range of the chains; its own members are copied):
    /// recounting them made a canary host's add take 0.5 ms in MOSN's scheme at 100k hosts.
    pub fn extended(&self, s: u32, slots: &[Slot]) -> PickSet {
        debug_assert!(!self.all && self.has_no_dead());
        let mut set = PickSet {
            members: self.members.clone(),
            live: self.live,
            healthy: self.healthy,
            single: self.single,
            weights: self.weights.bounds(),
            ..PickSet::default()
        };
        set.add(s, slots);
        set
    }

    /// Whether every member is live (no removed host's entry left).
    pub fn has_no_dead(&self) -> bool {
        self.live as usize == self.members.len()
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
        self.healthy += u32::from(slot.healthy());
        self.weights.count(slot.weight());
    }

    /// Counts `slots` (live, none a member yet) in the set of all slots.
    pub fn count_all(&mut self, slots: &[Slot]) {
        debug_assert!(self.all);
        slots.iter().for_each(|slot| self.count_in(slot));
        self.changed();
    }

    /// Adds a live slot (not yet a member).
    pub fn add(&mut self, s: u32, slots: &[Slot]) {
        if !self.all {
            self.members.push(s);
        }
        self.count_in(&slots[s as usize]);
        self.changed();
        self.weights.make_room(self.positions(slots));
    }

    /// The positions a pick draws from: every slot for the set of all slots, else the members
    /// (live or not).
    #[inline(always)]
    fn positions(&self, slots: &[Slot]) -> usize {
        match self.all {
            true => slots.len(),
            false => self.members.len(),
        }
    }

    /// A member, its health or its weight changed: the weights' sums no longer hold, and the
    /// set may have become clean or stopped being so.
    pub fn changed(&mut self) {
        self.weights.changed();
        self.note_clean();
    }

    fn note_clean(&mut self) {
        self.clean = self.is_clean();
    }

    fn is_clean(&self) -> bool {
        !self.all
            && !self.single
            && self.live > 0
            && self.has_no_dead()
            && self.healthy == self.live
    }

    /// Takes a member out of the counts as its host is removed; its entry stays as a tombstone.
    pub fn remove(&mut self, s: u32, slots: &[Slot]) {
        self.live -= 1;
        self.healthy -= u32::from(slots[s as usize].healthy());
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
            .partition(|&m| slots[m as usize].alive());
        self.members = Members::owned(live);
        self.changed();
        dead
    }

    /// The live members, for a copy.
    pub fn live_members(&self, slots: &[Slot], chains: &[u32]) -> Vec<u32> {
        let live = |m: &u32| slots[*m as usize].alive();
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
            && let Some(slot) = self.pick_clean(slots, chains, child.policy, rng)
        {
            return Some(Pick { slot, panic: false });
        }
        self.pick_general(slots, chains, child, rng, exclude)
    }

    /// The pick over a [`View`], for every case [`PickSet::pick_clean`] declines (and, in
    /// tests, its model).
    fn pick_general(
        &mut self,
        slots: &[Slot],
        chains: &[u32],
        child: Child,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<Pick> {
        let panic =
            u64::from(self.healthy) * 100 < u64::from(child.panic_threshold) * u64::from(self.live);
        if !panic && self.healthy == 0 {
            return None;
        }
        let n = self.positions(slots) as u32;
        let view = View {
            members: (!self.all).then_some((&self.members, chains)),
            slots,
            n,
            panic,
            exclude,
        };
        let even = self.weights.even();
        let weights = &mut self.weights;
        let slot = match child.policy {
            LbPolicy::RoundRobin if even => view.round_robin(&mut self.cursor, rng),
            LbPolicy::RoundRobin => view.weighted_round_robin(rng, weights),
            LbPolicy::Weighted => view.weighted(rng, weights),
            LbPolicy::LeastRequest if even => view.least_request(rng),
            LbPolicy::LeastRequest => view.weighted_least_request(rng, weights),
            _ => view.random(rng),
        }?;
        Some(Pick { slot, panic })
    }

    /// [`PickSet::pick`] without `exclude` when it would take [`PickSet::pick_clean`], else
    /// `None` with nothing changed: the lookup's fast path, which the general pick redoes.
    #[inline]
    pub fn pick_fast(
        &mut self,
        slots: &[Slot],
        chains: &[u32],
        policy: LbPolicy,
        rng: &mut Rng,
    ) -> Option<u32> {
        debug_assert_eq!(self.clean, self.is_clean(), "a change missed `changed`");
        if !self.clean {
            return None;
        }
        // The default policy before the others' jump table: 184.5 -> 180.6 instructions a 4
        // keys x 3 values lookup.
        if let LbPolicy::RoundRobin = policy
            && self.weights.even()
        {
            let i = take_turn(&mut self.cursor, self.live, rng);
            // The next turn's slot, for it to find in the cache: in large tables the slot
            // read missed L1 in 96% of 4 keys x 3 values lookups at 100k hosts. At the wrap,
            // and for members of the set's own, the hint is of no use; handling those cost
            // more instructions than the hint saved at 8k hosts.
            if let Some(next) = self.members.chained(chains, self.cursor) {
                prefetch(slots, next as usize);
            }
            return Some(self.members.get(chains, i));
        }
        self.turn(self.live, false, slots, chains, policy, rng)
    }

    /// Picks as the general pick would when every member is live and healthy (no tombstone,
    /// no panic, any member eligible) and weighs the same (random ignores weights, weighted
    /// round robin takes its turns once the sums are made): no slot read but least request's
    /// two; `None` to take the general pick.
    /// Always inlined into [`PickSet::pick`]: once the general pick grew (weighted prefix sums)
    /// a plain `#[inline]` was not taken, and the call cost a lookup 8 instructions of 265
    /// while the fast path went through here too (it now takes [`PickSet::turn`] itself, past
    /// the `clean` flag).
    #[inline(always)]
    fn pick_clean(
        &mut self,
        slots: &[Slot],
        chains: &[u32],
        policy: LbPolicy,
        rng: &mut Rng,
    ) -> Option<u32> {
        let n = self.positions(slots);
        if self.live as usize != n || self.healthy != self.live {
            return None;
        }
        self.turn(self.live, self.all, slots, chains, policy, rng)
    }

    /// [`PickSet::pick_clean`] past its checks: the turn of one of the `n` members (or slots,
    /// if `all`), all live and healthy. `all` is a constant in the fast path's copy.
    #[inline(always)]
    fn turn(
        &mut self,
        n: u32,
        all: bool,
        slots: &[Slot],
        chains: &[u32],
        policy: LbPolicy,
        rng: &mut Rng,
    ) -> Option<u32> {
        let member = |i: u32| match all {
            true => i,
            false => self.members.get(chains, i),
        };
        let i = match policy {
            LbPolicy::RoundRobin if self.weights.even() => take_turn(&mut self.cursor, n, rng),
            // Weighted turns once a pick made the sums.
            LbPolicy::RoundRobin => self.weights.turn(self.weights.total()?),
            LbPolicy::Random => rng.below(n),
            // Weighted over even weights keeps its first draw.
            LbPolicy::Weighted if self.weights.even() => rng.below(n),
            // The general pick's two draws, each eligible at once.
            LbPolicy::LeastRequest if self.weights.even() => {
                let a = member(rng.below(n));
                let b = member(rng.below(n));
                let active = |s: u32| slots[s as usize].active;
                return Some(if active(b) < active(a) { b } else { a });
            }
            _ => return None,
        };
        Some(member(i))
    }

    fn pick_single(&self, slots: &[Slot], child: Child, exclude: Option<u32>) -> Option<Pick> {
        pick_one(self.first, slots, child, exclude)
    }

    /// Heap bytes held, for the memory figures (not counting the chains).
    pub fn heap_bytes(&self) -> usize {
        self.members.heap_bytes() + self.weights.heap_bytes()
    }
}

/// Round robin's member of `n` of even weight at `cursor`, which moves past it.
#[inline(always)]
fn take_turn(cursor: &mut u32, n: u32, rng: &mut Rng) -> u32 {
    let i = if *cursor < n {
        *cursor
    } else {
        next_turn(*cursor, n, rng)
    };
    *cursor = i + 1;
    i
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
