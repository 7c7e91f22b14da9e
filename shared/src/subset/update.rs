//! Incremental updates: one host added, removed, or changed touches only its own subsets.

use alloc::{boxed::Box, vec, vec::Vec};

use super::pick::HostSet;
use super::{HostId, Slot, SubsetError, SubsetLb};
use crate::hosttable::{MAX_HOSTS, check_list_subsets, distinct_items, shown, validate_host};
use crate::{Host, HostTableError, MAX_WEIGHT};

impl SubsetLb {
    /// Adds a host (validated as in a table) to every subset it belongs to, creating subsets
    /// as needed.
    pub fn add_host(&mut self, host: Host) -> Result<HostId, SubsetError> {
        self.add(&host)
    }

    pub(super) fn add(&mut self, host: &Host) -> Result<HostId, SubsetError> {
        validate_host(self.len(), host)?;
        if self.find(&host.address).is_some() {
            return Err(SubsetError::DuplicateAddress(host.address.clone()));
        }
        if self.len() >= MAX_HOSTS {
            return Err(SubsetError::Full);
        }
        let labels = host.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()));
        self.lists_allow(self.len(), labels.clone())?;
        let kvs = self.intern_labels(labels);
        let record = Slot {
            address: host.address.as_str().into(),
            kvs,
            weight: host.weight,
            healthy: host.healthy,
            alive: true,
            generation: 0,
            active: 0,
        };
        let s = match self.free_slots.pop() {
            Some(s) => {
                let generation = self.slots[s as usize].generation;
                self.slots[s as usize] = Slot {
                    generation,
                    ..record
                };
                s
            }
            None => {
                self.slots.push(record);
                self.slots.len() as u32 - 1
            }
        };
        self.index_address(s);
        self.weighted_hosts += usize::from(host.weight != 1);
        let kvs = self.slots[s as usize].kvs.clone();
        for (selector, subset) in self.memberships(&kvs) {
            let single = self.selectors[selector].single;
            match self.subsets.add(&subset, s, &self.slots, single) {
                true => {
                    self.stats.subsets_created += 1;
                    self.stats.subsets_active += 1;
                }
                false => self.stats.single_host_collisions += u64::from(single),
            }
        }
        self.any.insert(s, &self.slots);
        if let Some((default, set)) = &mut self.default
            && default.iter().all(|kv| kvs.binary_search(kv).is_ok())
        {
            set.insert(s, &self.slots);
        }
        Ok(self.id(s))
    }

    /// With `list_as_any`, checks that `host` (at `index`, as the error names it) joins few
    /// enough subsets: [`MAX_LIST_SUBSETS`](crate::MAX_LIST_SUBSETS).
    pub(super) fn lists_allow<'a>(
        &self,
        index: usize,
        labels: impl Iterator<Item = (&'a str, &'a str)> + Clone,
    ) -> Result<(), HostTableError> {
        if !self.options.list_as_any {
            return Ok(());
        }
        let selectors = self.selectors.iter().map(|s| s.keys.iter());
        let items = |&key: &u32| {
            let key = self.names.key_text(key);
            let value = labels.clone().find(|&(k, _)| k == key);
            value.map_or(0, |(_, v)| distinct_items(v))
        };
        check_list_subsets(index, selectors, items, u64::MAX)
    }

    /// Removes the host with `address`; subsets left without hosts are dropped.
    pub fn remove_host(&mut self, address: &str) -> Result<(), SubsetError> {
        let s = self.known(address)?;
        self.unindex_address(s);
        let kvs = core::mem::take(&mut self.slots[s as usize].kvs);
        for (selector, subset) in self.memberships(&kvs) {
            let Some(empty) = self.subsets.remove(&subset, s, &self.slots) else {
                continue;
            };
            if self.selectors[selector].single && !empty {
                self.stats.single_host_collisions -= 1;
            }
            if empty {
                self.stats.subsets_removed += 1;
                self.stats.subsets_active -= 1;
            }
        }
        self.any.remove(s, &self.slots);
        if let Some((_, set)) = &mut self.default {
            set.remove(s, &self.slots);
        }
        let slot = &mut self.slots[s as usize];
        self.weighted_hosts -= usize::from(slot.weight != 1);
        // Ids kept by callers stop naming the slot, which the next host added reuses.
        slot.generation = slot.generation.wrapping_add(1);
        slot.alive = false;
        slot.address = Box::default();
        self.free_slots.push(s);
        Ok(())
    }

    /// Marks the host with `address` healthy or not.
    pub fn set_healthy(&mut self, address: &str, healthy: bool) -> Result<(), SubsetError> {
        let s = self.known(address)?;
        if self.slots[s as usize].healthy == healthy {
            return Ok(());
        }
        self.slots[s as usize].healthy = healthy;
        self.each_set_of(s, |set| set.set_healthy(s, healthy));
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
        // A delta sets the weight of every host it updates: an unchanged one keeps the sums
        // (weighted round robin would start its cycle over).
        let old = self.slots[index].weight;
        if old == weight {
            return Ok(());
        }
        self.weighted_hosts =
            self.weighted_hosts + usize::from(weight != 1) - usize::from(old != 1);
        self.slots[index].weight = weight;
        self.each_set_of(s, HostSet::stale);
        Ok(())
    }

    pub(super) fn known(&self, address: &str) -> Result<u32, SubsetError> {
        let slot = self.find(address);
        slot.ok_or_else(|| SubsetError::UnknownHost(shown(address)))
    }

    /// Calls `f` on every set holding the host of slot `s` (one-host subsets keep none).
    fn each_set_of(&mut self, s: u32, mut f: impl FnMut(&mut HostSet)) {
        let kvs = self.slots[s as usize].kvs.clone();
        for (_, kvs) in self.memberships(&kvs) {
            self.subsets.with_set(&kvs, &mut f);
        }
        f(&mut self.any);
        if let Some((_, set)) = &mut self.default
            && set.members.contains(s)
        {
            f(set);
        }
    }

    /// The subsets a host with key=value ids `kvs` belongs to, with the selector that made
    /// each: per selector whose keys it all has, every combination of its values (several per
    /// key with `list_as_any`). Selectors repeating another's keys add nothing.
    pub(super) fn memberships(&self, kvs: &[u32]) -> Vec<(usize, Box<[u32]>)> {
        let mut out = Vec::new();
        for (s, selector) in self.selectors.iter().enumerate() {
            if self.selector_of.get(&selector.keys) != Some(&(s as u8)) {
                continue;
            }
            let mut combos: Vec<Vec<u32>> = vec![Vec::new()];
            for &key in selector.keys.iter() {
                let values = kvs.iter().filter(|&&kv| self.names.kv_key(kv) == key);
                let values: Vec<u32> = values.copied().collect();
                combos = combos
                    .iter()
                    .flat_map(|c| values.iter().map(move |&v| [c.as_slice(), &[v]].concat()))
                    .collect();
            }
            out.extend(combos.into_iter().map(|c| (s, c.into_boxed_slice())));
        }
        out
    }
}
