//! Slots by address: what updates and [`SubsetLb::host_id`](super::SubsetLb::host_id) find
//! hosts by, and what proves a table's addresses unique.
//!
//! A table whose addresses ascend (the daemon serves its tables in address order) needs no hash
//! table for either: strict order proves them unique in one sequential pass, and slot `s`
//! holds the `s`-th address, so a lookup is a binary search over the records. Hashing 100k
//! addresses into a table was a third of a build from bytes at that size (perf samples, 4
//! keys x 3 values: random probes into 640 KiB, which with the rest of the build spill out of
//! a core's 1 MiB L2); the order check compares neighbours 8 bytes at a time
//! ([`Records::ascending`]). Changes keep the build's order for the hosts they leave alone: a
//! removed one is marked in a bitset that the search steps over, and added ones go to a small
//! table of their own. Hashing every address at the first change instead took 1.6-2.5 ms at
//! 100k hosts, a spike on the first delta after each build; the whole table is made only once
//! an eighth of the build's hosts are gone, when the search would step over too many.

use alloc::vec::Vec;
use core::cmp::Ordering;
use core::hash::{BuildHasher, Hasher};

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::records::Records;

#[cfg(test)]
mod tests;

/// Slots by address.
#[derive(Debug, Default)]
pub(super) struct Addresses {
    hasher: FixedState,
    /// Slot by address, of every host; `None` while the build's order serves (see [`Sorted`]).
    hashed: Option<HashTable<u32>>,
    sorted: Sorted,
}

/// The build's slots in address order, and the changes since.
#[derive(Debug, Default)]
struct Sorted {
    /// Slots `0..built` held the build's addresses, strictly ascending.
    built: u32,
    /// Bit `s`: build slot `s` no longer holds its host (removed, maybe reused since).
    moved: Vec<u64>,
    moved_count: u32,
    /// Slot by address of the hosts added since the build.
    added: HashTable<u32>,
}

impl Sorted {
    fn is_moved(&self, s: u32) -> bool {
        let word = self.moved.get(s as usize / 64).copied().unwrap_or(0);
        word >> (s % 64) & 1 == 1
    }

    fn mark_moved(&mut self, s: u32) {
        if self.moved.is_empty() {
            self.moved = alloc::vec![0; (self.built as usize).div_ceil(64)];
        }
        self.moved[s as usize / 64] |= 1 << (s % 64);
        self.moved_count += 1;
    }

    /// The build slot that still holds `address`, by a search over the build's order that
    /// steps over moved slots.
    fn search(&self, records: &Records, address: &[u8]) -> Option<u32> {
        let (mut low, mut high) = (0, self.built);
        while low < high {
            let mid = low + (high - low) / 2;
            // Slots `mid..m` are moved: nothing there to compare with or to find.
            let Some(m) = (mid..high).find(|&s| !self.is_moved(s)) else {
                high = mid;
                continue;
            };
            match records.address_bytes(m).cmp(address) {
                Ordering::Less => low = m + 1,
                Ordering::Greater => high = mid,
                Ordering::Equal => return Some(m),
            }
        }
        None
    }
}

impl Addresses {
    /// The addresses of the `slots` recorded by a build, or `None` if two are the same;
    /// `ascending`, whether they ascend strictly if the caller found out already (if `None`,
    /// they are compared here). A pass of its own over the records, whose addresses lie back to back:
    /// interleaved with the build's walk of the hosts, each probe waited on a table line the
    /// walk had evicted (apart, builds of 100k hosts took 12-17% less, before tables in address
    /// order skipped it).
    pub fn claim(records: &Records, slots: u32, ascending: Option<bool>) -> Option<Addresses> {
        let mut addresses = Addresses::default();
        if ascending.unwrap_or_else(|| records.ascending()) {
            addresses.sorted.built = slots;
            return Some(addresses);
        }
        let state = &addresses.hasher;
        let table = addresses.hashed.insert(HashTable::new());
        let rehash = |&t: &u32| hash(state, records.address_bytes(t));
        table.reserve(slots as usize, rehash);
        let unique = (0..slots).all(|s| {
            let address = records.address_bytes(s);
            let same = |&t: &u32| records.address_bytes(t) == address;
            match table.entry(hash(state, address), same, rehash) {
                Entry::Occupied(_) => false,
                Entry::Vacant(place) => {
                    place.insert(s);
                    true
                }
            }
        });
        unique.then_some(addresses)
    }

    /// The slot of `address`, if any.
    pub fn find(&self, records: &Records, address: &str) -> Option<u32> {
        let address = address.as_bytes();
        let same = |&s: &u32| records.address_bytes(s) == address;
        let hash = || hash(&self.hasher, address);
        match &self.hashed {
            Some(table) => table.find(hash(), same).copied(),
            None if self.sorted.added.is_empty() => self.sorted.search(records, address),
            None => (self.sorted.added.find(hash(), same).copied())
                .or_else(|| self.sorted.search(records, address)),
        }
    }

    /// Enters slot `s`, a new one (or a freed one) whose address is recorded and in no other
    /// slot.
    pub fn insert(&mut self, records: &Records, s: u32) {
        let state = &self.hasher;
        let table = self.hashed.as_mut().unwrap_or(&mut self.sorted.added);
        let rehash = |&t: &u32| hash(state, records.address_bytes(t));
        table.insert_unique(hash(state, records.address_bytes(s)), s, rehash);
    }

    /// Takes out slot `s`, whose address is still recorded.
    pub fn remove(&mut self, records: &Records, s: u32) {
        let sorted = &mut self.sorted;
        let in_order = s < sorted.built && !sorted.is_moved(s);
        if self.hashed.is_none() && in_order {
            sorted.mark_moved(s);
            if sorted.moved_count > sorted.built / 8 {
                self.hash_all(records);
            }
            return;
        }
        let table = self.hashed.as_mut().unwrap_or(&mut self.sorted.added);
        let hash = hash(&self.hasher, records.address_bytes(s));
        if let Ok(entry) = table.find_entry(hash, |&t| t == s) {
            entry.remove();
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let sorted = &self.sorted;
        self.hashed.as_ref().map_or(0, HashTable::allocation_size)
            + sorted.added.allocation_size()
            + sorted.moved.capacity() * size_of::<u64>()
    }

    /// Puts every host in one table: the build's that have not moved, and those added since.
    #[cold]
    fn hash_all(&mut self, records: &Records) {
        let sorted = core::mem::take(&mut self.sorted);
        let state = &self.hasher;
        let rehash = |&t: &u32| hash(state, records.address_bytes(t));
        let kept = (0..sorted.built).filter(|&s| !sorted.is_moved(s));
        let mut table = HashTable::with_capacity(kept.clone().count() + sorted.added.len());
        for s in kept.chain(sorted.added.iter().copied()) {
            table.insert_unique(hash(state, records.address_bytes(s)), s, rehash);
        }
        self.hashed = Some(table);
    }
}

/// The hash of `address`: its bytes alone. `Hash for str` adds an end mark (a second write and
/// a multiply at `finish`) so that strings hashed one after another stay apart; the table
/// hashes one string, and a build of 100k hosts hashes each.
fn hash(state: &FixedState, address: &[u8]) -> u64 {
    let mut hasher = state.build_hasher();
    hasher.write(address);
    hasher.finish()
}
