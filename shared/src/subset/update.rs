//! Incremental updates: one host added, removed, or changed touches only its own subsets.

use alloc::{vec, vec::Vec};

use super::pickset::{Members, PickSet, Pool, SetRef};
use super::table::{Hit, array_kv};
use super::{HostId, SubsetError, SubsetLb};
use crate::hosttable::list_items;
use crate::hosttable::{MAX_HOSTS, check_list_subsets, distinct_items, validate_host};
use crate::{Host, HostTableError, MAX_WEIGHT};

impl SubsetLb {
    /// Adds a host (validated as in a table) to every subset it belongs to, creating subsets
    /// as needed.
    pub fn add_host(&mut self, host: Host) -> Result<HostId, SubsetError> {
        self.add(&host)
    }

    pub(super) fn add(&mut self, host: &Host) -> Result<HostId, SubsetError> {
        validate_host(self.len(), host)?;
        self.lists_allow(self.len(), host)?;
        if self.find_address(&host.address).is_some() {
            return Err(SubsetError::DuplicateAddress(host.address.clone()));
        }
        if self.len() >= MAX_HOSTS {
            return Err(SubsetError::Full);
        }
        if !self
            .records
            .make_room(host.address.len(), self.id_count(host))
        {
            return Err(SubsetError::TooLarge);
        }
        let s = self.push_slot(host);
        self.join_subsets(s);
        if self.in_default(s)
            && let Some((_, set)) = &mut self.default
        {
            set.add(s, &self.slots);
        }
        Ok(self.id(s))
    }

    /// With `list_as_any`, checks that `host` (at `index`, as the error names it) joins few
    /// enough subsets: [`MAX_LIST_SUBSETS`](crate::MAX_LIST_SUBSETS).
    pub(super) fn lists_allow(&self, index: usize, host: &Host) -> Result<(), HostTableError> {
        if !self.options.list_as_any {
            return Ok(());
        }
        let selectors = self.selectors.iter().map(|s| s.keys.iter());
        let items = |&key: &u32| {
            let value = host.labels.get(self.interner.key_text(key));
            value.map_or(0, |v| distinct_items(v))
        };
        check_list_subsets(index, selectors, items, u64::MAX)
    }

    /// The ids `host`'s record holds at most: one per label, or per list item with
    /// `list_as_any`.
    pub(super) fn id_count(&self, host: &Host) -> usize {
        match self.options.list_as_any {
            true => host.labels.values().map(|v| list_items(v).count()).sum(),
            false => host.labels.len(),
        }
    }

    /// Removes the host with `address`; subsets left without hosts are dropped.
    pub fn remove_host(&mut self, address: &str) -> Result<(), SubsetError> {
        let s = self.known(address)?;
        let subsets = self.subsets_of(s);
        let sets = self.sets_of(&subsets);
        let in_default = self.in_default(s);
        let held = sets.len() as u32 + u32::from(in_default);
        // A live host is in the sets of its subsets (and the default one) and nowhere else:
        // counted now rather than kept up to date by every build and update. Each set lets
        // go of it (dropped, or compacted) in its own time; the last one frees the slot.
        self.slots[s as usize].hold(held);
        self.addresses.remove(&self.records, s);
        self.records.remove(s);
        for &set in &sets {
            let shared = &mut self.sets[set as usize];
            shared.remove(s, &self.slots);
            if shared.single && shared.first == s {
                self.elect(set);
            }
        }
        // One host fewer left out of each single-host subset that keeps another.
        let left_out = |hit: &&Hit| {
            let set = hit.set.as_set().map(|i| &self.sets[i as usize]);
            set.is_some_and(|set| set.single && set.live > 0)
        };
        let fewer = subsets.iter().filter(left_out).count() as u64;
        self.stats.single_host_collisions = self.stats.single_host_collisions.saturating_sub(fewer);
        self.any.remove(s, &self.slots);
        if in_default && let Some((_, set)) = &mut self.default {
            set.remove(s, &self.slots);
        }
        self.free_slot_if_unheld(s);
        for hit in subsets {
            self.drop_subset_if_empty(hit);
        }
        for set in sets {
            self.compact_set(set);
        }
        self.compact_default();
        Ok(())
    }

    /// Marks the host with `address` healthy or not.
    pub fn set_healthy(&mut self, address: &str, healthy: bool) -> Result<(), SubsetError> {
        let s = self.known(address)?;
        if self.slots[s as usize].healthy() == healthy {
            return Ok(());
        }
        let sets = self.sets_of(&self.subsets_of(s));
        let in_default = self.in_default(s);
        let adjust = |set: &mut PickSet| {
            match healthy {
                true => set.healthy += 1,
                false => set.healthy -= 1,
            }
            set.changed();
        };
        sets.iter()
            .for_each(|&i| adjust(&mut self.sets[i as usize]));
        adjust(&mut self.any);
        if let (true, Some((_, set))) = (in_default, &mut self.default) {
            adjust(set);
        }
        self.slots[s as usize].set_healthy(healthy);
        Ok(())
    }

    /// Sets the weight of the host with `address` (1 to [`MAX_WEIGHT`]).
    pub fn set_weight(&mut self, address: &str, weight: u32) -> Result<(), SubsetError> {
        let s = self.known(address)?;
        let index = s as usize;
        if weight == 0 {
            return Err(HostTableError::ZeroWeight { index }.into());
        }
        if weight > MAX_WEIGHT {
            return Err(HostTableError::WeightTooLarge { index, weight }.into());
        }
        // A delta sets the weight of every host it updates: an unchanged one must not drop the
        // sums (weighted round robin would start its cycle over at a random point).
        if self.slots[index].weight() == weight {
            return Ok(());
        }
        // The bounds widen at once; a weight raised or lowered inside them leaves them loose
        // (picks stay exact) until a weighted pick's sums make them exact again.
        let reweigh = |set: &mut PickSet| {
            set.weights.count(weight);
            set.changed();
        };
        for set in self.sets_of(&self.subsets_of(s)) {
            reweigh(&mut self.sets[set as usize]);
        }
        reweigh(&mut self.any);
        if let (true, Some((_, set))) = (self.in_default(s), &mut self.default) {
            reweigh(set);
        }
        self.slots[index].set_weight(weight);
        Ok(())
    }

    pub(super) fn known(&self, address: &str) -> Result<u32, SubsetError> {
        self.find_address(address)
            .ok_or_else(|| SubsetError::UnknownHost(crate::hosttable::shown(address)))
    }

    /// Each (selector, value ids) the host of slot `s` belongs to: one per selector whose keys
    /// it all has, or several with `list_as_any` (every combination of its list elements).
    fn memberships(&self, s: u32) -> Vec<(u8, Vec<u32>)> {
        let kvs = self.records.kvs(s);
        let mut out = Vec::new();
        for (i, selector) in self.selectors.iter().enumerate() {
            let mut combos: Vec<Vec<u32>> = vec![Vec::new()];
            for &key in selector.keys.iter() {
                let values: Vec<u32> = kvs
                    .iter()
                    .copied()
                    .filter(|&kv| self.interner.kv_key(kv) == key)
                    .collect();
                combos = combos
                    .iter()
                    .flat_map(|c| values.iter().map(move |&v| [&c[..], &[v]].concat()))
                    .collect();
            }
            out.extend(combos.into_iter().map(|c| (i as u8, c)));
        }
        out
    }

    fn find(&self, selector: u8, kvs: &[u32]) -> Option<Hit> {
        let hit = self.subset_entry(kvs.iter().copied(), kvs.len())?;
        (self.selector_of(hit.subset)? == selector).then_some(hit)
    }

    /// The selector of subset `i`: its record's, or for a subset in the table's array, the
    /// selector of its value's key alone.
    fn selector_of(&self, i: u32) -> Option<u8> {
        let Some(kv) = array_kv(i) else {
            return self.subsets.get(i).map(|subset| subset.selector);
        };
        let key = self.interner.kv_key(kv);
        let selector = self.selectors.iter().position(|s| *s.keys == [key])?;
        Some(selector as u8)
    }

    /// The existing subsets of slot `s`.
    fn subsets_of(&self, s: u32) -> Vec<Hit> {
        let found = self.memberships(s);
        found
            .iter()
            .filter_map(|(sel, kvs)| self.find(*sel, kvs))
            .collect()
    }

    /// The distinct sets of `subsets` (a subset of one host has none: its host is all it
    /// keeps, and nothing counts there).
    fn sets_of(&self, subsets: &[Hit]) -> Vec<u32> {
        let mut sets: Vec<u32> = subsets.iter().filter_map(|hit| hit.set.as_set()).collect();
        sets.sort_unstable();
        sets.dedup();
        sets
    }

    /// Puts the new slot `s` in its subsets. A set shared with subsets the host does not join
    /// is copied first (the sharers stay identical among themselves).
    fn join_subsets(&mut self, s: u32) {
        let mut joined: Vec<(SetRef, Vec<u32>)> = Vec::new();
        for (selector, kvs) in self.memberships(s) {
            let Some(hit) = self.find(selector, &kvs) else {
                self.push_subset(selector, &kvs, SetRef::one(s));
                continue;
            };
            match joined.iter_mut().find(|(set, _)| *set == hit.set) {
                Some((_, subsets)) => subsets.push(hit.subset),
                None => joined.push((hit.set, vec![hit.subset])),
            }
        }
        for (set, subsets) in joined {
            self.join_set(s, set, &subsets);
        }
    }

    /// Puts slot `s` in `set`, shared by `subsets` and maybe others.
    fn join_set(&mut self, s: u32, set: SetRef, subsets: &[u32]) {
        let i = match set.get() {
            Pool::Set(i) => i,
            Pool::One(first) => return self.join_one(s, first, subsets),
        };
        let shared = &self.sets[i as usize];
        if shared.single && shared.live > 0 {
            // One per subset the host is left out of, as the build counts them.
            self.stats.single_host_collisions += subsets.len() as u64;
        }
        if shared.refs as usize == subsets.len() {
            self.sets[i as usize].add(s, &self.slots);
            self.elect_between(i, s);
            return;
        }
        let copy = if shared.has_no_dead() {
            shared.extended(s, &self.slots)
        } else {
            let mut members = shared.live_members(&self.slots, &self.chains);
            members.push(s);
            let members = Members::owned(members);
            PickSet::new(members, shared.single, &self.slots, &self.chains)
        };
        self.sets[i as usize].refs -= subsets.len() as u32;
        self.move_to_new_set(copy, subsets);
    }

    /// Puts slot `s` in `subsets` of the one host of slot `first`: they get a set of the two,
    /// one for the subsets of `single_host_per_subset` selectors and one for the others.
    fn join_one(&mut self, s: u32, first: u32, subsets: &[u32]) {
        let single = |i: &u32| {
            let selector = self.selector_of(*i);
            selector.is_some_and(|selector| self.selectors[usize::from(selector)].single)
        };
        let (singles, others): (Vec<u32>, Vec<u32>) = subsets.iter().copied().partition(single);
        for (subsets, single) in [(singles, true), (others, false)] {
            if !subsets.is_empty() {
                if single {
                    self.stats.single_host_collisions += subsets.len() as u64;
                }
                let members = Members::owned(vec![first.min(s), first.max(s)]);
                let set = PickSet::new(members, single, &self.slots, &self.chains);
                self.move_to_new_set(set, &subsets);
            }
        }
    }

    /// A new set, `copy`, for `subsets`, which leave their old one.
    fn move_to_new_set(&mut self, mut copy: PickSet, subsets: &[u32]) {
        copy.refs = subsets.len() as u32;
        let copy = self.push_set(copy);
        self.elect(copy);
        let copy = SetRef::set(copy);
        for &i in subsets {
            if let Some(set) = self.subset_table.set_mut(self.subsets.kvs(i), i) {
                *set = copy;
            }
        }
    }

    /// Drops subset `hit` if no live host is left in it.
    fn drop_subset_if_empty(&mut self, hit: Hit) {
        let i = hit.subset;
        // A subset of one host is dropped with it (only the subsets of a removed host come
        // here).
        let set = hit.set.as_set();
        if set.is_some_and(|set| self.sets[set as usize].live > 0) {
            return;
        }
        // Dropped already (a host's memberships are distinct, so not today): counts and
        // references must not go twice.
        if !self.subset_table.remove(self.subsets.kvs(i), i) {
            return;
        }
        self.subsets.remove(i);
        self.stats.subsets_removed += 1;
        self.stats.subsets_active -= 1;
        let Some(set) = set else {
            return;
        };
        let shared = &mut self.sets[set as usize];
        shared.refs -= 1;
        if shared.refs == 0 {
            let members = core::mem::take(&mut shared.members);
            *shared = PickSet::default();
            self.free_sets.push(set);
            self.release_slots(members.iter(&self.chains).collect());
            if members.is_chained() {
                self.unchain();
            }
        }
    }

    fn compact_set(&mut self, set: u32) {
        let shared = &mut self.sets[set as usize];
        if shared.refs > 0 && shared.wants_compaction() {
            let chained = shared.members.is_chained();
            let dead = shared.compact(&self.slots, &self.chains);
            self.release_slots(dead);
            if chained {
                self.unchain();
            }
        }
    }

    /// A set's members left the chains (compacted, or the set dropped): once no set has any
    /// there, the chains go too (until the next build), rather than outlive every set.
    fn unchain(&mut self) {
        self.chained -= 1;
        if self.chained == 0 {
            self.chains = Vec::new();
        }
    }

    fn compact_default(&mut self) {
        if let Some((_, set)) = &mut self.default
            && set.wants_compaction()
        {
            let dead = set.compact(&self.slots, &self.chains);
            self.release_slots(dead);
        }
    }

    /// `slots` are no longer held by one set each.
    fn release_slots(&mut self, slots: Vec<u32>) {
        for s in slots {
            self.slots[s as usize].let_go();
            self.free_slot_if_unheld(s);
        }
    }

    fn free_slot_if_unheld(&mut self, s: u32) {
        if self.slots[s as usize].is_free() {
            self.free_slots.push(s);
        }
    }

    /// Chooses the host of set `set` if it is `single`: its live member of the lowest address
    /// (byte order). Not the lowest slot: deltas reuse freed slots, so an isolate updated by
    /// them and one built from the same table would send a subset's requests to different
    /// hosts. An address is the same everywhere. O(members), for single-host sets only (a
    /// set there means hosts that share their values, a misconfiguration Envoy counts too),
    /// when one is made or loses its chosen host; a host joining is one comparison
    /// ([`SubsetLb::elect_between`]).
    pub(super) fn elect(&mut self, set: u32) {
        let shared = &self.sets[set as usize];
        if !shared.single {
            return;
        }
        let (slots, records) = (&self.slots, &self.records);
        let first = shared
            .members
            .iter(&self.chains)
            .filter(|&m| slots[m as usize].alive())
            .min_by(|&a, &b| records.address(a).cmp(records.address(b)));
        self.sets[set as usize].first = first.unwrap_or(0);
    }

    /// [`SubsetLb::elect`] after live slot `s` joined set `set`: `s` or the host chosen before.
    fn elect_between(&mut self, set: u32, s: u32) {
        let shared = &self.sets[set as usize];
        if !shared.single {
            return;
        }
        let address = |slot: u32| self.records.address(slot);
        let first = match shared.live {
            1 => s,
            _ if address(s) < address(shared.first) => s,
            _ => shared.first,
        };
        self.sets[set as usize].first = first;
    }

    /// Whether slot `s` belongs to the configured default subset.
    fn in_default(&self, s: u32) -> bool {
        let kvs = self.records.kvs(s);
        self.default
            .as_ref()
            .is_some_and(|(default, _)| default.iter().all(|d| kvs.contains(d)))
    }
}
