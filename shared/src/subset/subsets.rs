//! The subsets of every selector, found by their key=value ids (which imply the keys).
//!
//! A key unique per host (an id, a pod name) makes a subset per host, so most subsets may hold
//! one host: such a subset is that host's slot, and one-key subsets are keyed by their one id.
//! Subsets of several hosts keep a [`HostSet`] in an arena.

use alloc::vec::Vec;

use roaring::RoaringBitmap;

use super::metadata::UNKNOWN_VALUE;
use super::pick::{Context, HostSet, Rng};
use super::{IdMap, METADATA_CAPACITY, Slot};

/// A subset's hosts: one slot, or a set in the arena. Valid until the next update.
#[derive(Debug, Clone, Copy)]
pub(super) enum Subset {
    One(u32),
    Many(u32),
}

/// The key=value ids of a subset of several keys, padded with [`UNKNOWN_VALUE`]: compared and
/// hashed as a fixed-size array, without a call per comparison. Ids with an unknown value are
/// in no subset, and never looked up.
type Key = [u32; METADATA_CAPACITY];

#[derive(Debug, Default)]
pub(super) struct Subsets {
    one_key: IdMap<u32, Subset>,
    keys: IdMap<Key, Subset>,
    sets: Vec<HostSet>,
    free_sets: Vec<u32>,
}

fn key(kvs: &[u32]) -> Key {
    let mut key = [UNKNOWN_VALUE; METADATA_CAPACITY];
    key[..kvs.len()].copy_from_slice(kvs);
    key
}

impl Subsets {
    /// The subset with key=value ids `kvs` (ascending by key).
    pub(super) fn get(&self, kvs: &[u32]) -> Option<Subset> {
        match kvs {
            [kv] => self.one_key.get(kv).copied(),
            _ if kvs.contains(&UNKNOWN_VALUE) => None,
            _ => self.keys.get(&key(kvs)).copied(),
        }
    }

    fn put(&mut self, kvs: &[u32], subset: Subset) {
        match kvs {
            [kv] => self.one_key.insert(*kv, subset),
            _ => self.keys.insert(key(kvs), subset),
        };
    }

    fn forget(&mut self, kvs: &[u32]) {
        match kvs {
            [kv] => self.one_key.remove(kv),
            _ => self.keys.remove(&key(kvs)),
        };
    }

    /// Records a new subset of `members` (at least one), none of them in `unhealthy`.
    pub(super) fn insert(
        &mut self,
        kvs: &[u32],
        members: RoaringBitmap,
        unhealthy: &RoaringBitmap,
        slots: &[Slot],
        single: bool,
    ) {
        let subset = match (members.len(), members.min()) {
            (1, Some(slot)) => Subset::One(slot),
            _ => {
                let healthy = match unhealthy.is_empty() {
                    true => members.clone(),
                    false => &members - unhealthy,
                };
                let set = HostSet::with_healthy(members, healthy, slots, single);
                Subset::Many(self.store(set))
            }
        };
        self.put(kvs, subset);
    }

    fn store(&mut self, set: HostSet) -> u32 {
        match self.free_sets.pop() {
            Some(i) => {
                self.sets[i as usize] = set;
                i
            }
            None => {
                self.sets.push(set);
                self.sets.len() as u32 - 1
            }
        }
    }

    /// Adds `slot` to the subset `kvs`, created if new; returns whether it was.
    pub(super) fn add(&mut self, kvs: &[u32], slot: u32, slots: &[Slot], single: bool) -> bool {
        match self.get(kvs) {
            None => {
                self.put(kvs, Subset::One(slot));
                true
            }
            Some(Subset::One(first)) => {
                let members = [first, slot].into_iter().collect();
                let set = self.store(HostSet::new(members, slots, single));
                self.put(kvs, Subset::Many(set));
                false
            }
            Some(Subset::Many(set)) => {
                self.sets[set as usize].insert(slot, slots);
                false
            }
        }
    }

    /// Removes `slot` from the subset `kvs`, dropped when it empties; `Some(dropped)` if the
    /// subset was there.
    pub(super) fn remove(&mut self, kvs: &[u32], slot: u32, slots: &[Slot]) -> Option<bool> {
        let empty = match self.get(kvs)? {
            Subset::One(only) => only == slot,
            Subset::Many(i) => {
                let set = &mut self.sets[i as usize];
                set.remove(slot, slots);
                let empty = set.members.is_empty();
                if empty {
                    *set = HostSet::default();
                    self.free_sets.push(i);
                }
                empty
            }
        };
        if empty {
            self.forget(kvs);
        }
        Some(empty)
    }

    /// Calls `f` on the set of the subset `kvs`, if it has one (a one-host subset keeps no
    /// state of its own).
    pub(super) fn with_set(&mut self, kvs: &[u32], f: impl FnOnce(&mut HostSet)) {
        if let Some(Subset::Many(i)) = self.get(kvs) {
            f(&mut self.sets[i as usize]);
        }
    }

    /// Whether `subset` has a healthy host.
    pub(super) fn any_healthy(&self, subset: Subset, slots: &[Slot]) -> bool {
        match subset {
            Subset::One(slot) => slots[slot as usize].healthy,
            Subset::Many(i) => !self.sets[i as usize].healthy.is_empty(),
        }
    }

    /// A pick in `subset`, as [`HostSet::pick`].
    pub(super) fn pick(
        &mut self,
        subset: Subset,
        cx: &Context<'_>,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<(u32, bool)> {
        match subset {
            Subset::Many(i) => self.sets[i as usize].pick(cx, rng, exclude),
            // As a set of one: unhealthy, it is in panic unless the threshold is 0.
            Subset::One(slot) => {
                let healthy = cx.slots[slot as usize].healthy;
                let panic = !healthy && cx.panic_threshold > 0;
                ((healthy || panic) && exclude != Some(slot)).then_some((slot, panic))
            }
        }
    }

    /// The members of `subset`.
    #[cfg(test)]
    pub(super) fn members(&self, subset: Subset) -> RoaringBitmap {
        match subset {
            Subset::One(slot) => [slot].into_iter().collect(),
            Subset::Many(i) => self.sets[i as usize].members.clone(),
        }
    }

    /// Heap bytes: the maps' tables, the sets and their bitmaps.
    pub(super) fn heap_bytes(&self) -> usize {
        let one_key = self.one_key.capacity() * (size_of::<(u32, Subset)>() + 1);
        let keys = self.keys.capacity() * (size_of::<(Key, Subset)>() + 1);
        let sets: usize = self.sets.iter().map(HostSet::heap_bytes).sum();
        one_key + keys + self.sets.capacity() * size_of::<HostSet>() + sets
    }
}
