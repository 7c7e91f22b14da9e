//! Slots by address: what updates and [`SubsetLb::host_id`](super::SubsetLb::host_id) find
//! hosts by, and what proves a table's addresses unique.
//!
//! A table whose addresses ascend (the daemon serves its tables in address order) needs no hash
//! table for either: strict order proves them unique in one sequential pass, and slot `s`
//! holds the `s`-th address, so a lookup is a binary search over the records. Hashing 100k
//! addresses into a table was a third of a build from bytes at that size (perf samples, 4
//! keys x 3 values: random probes into 640 KiB, which with the rest of the build spill out of
//! a core's 1 MiB L2); the order check compares neighbours 8 bytes at a time
//! ([`Records::ascending`]). The table is made when the first host is added or removed (which
//! breaks the order), ~1.4 ms at 100k hosts, once; a worker whose isolate gets no delta
//! before it goes never makes it.

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
    /// Slot by address; `None` while slot `s` of the build's holds the `s`-th address in
    /// strictly ascending order (every slot live, with the address it was built with).
    hashed: Option<HashTable<u32>>,
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

    /// The slot of `address` among `slots` slots, if any.
    pub fn find(&self, records: &Records, slots: u32, address: &str) -> Option<u32> {
        let Some(table) = &self.hashed else {
            return search(records, slots, address);
        };
        let address = address.as_bytes();
        let same = |&s: &u32| records.address_bytes(s) == address;
        table.find(hash(&self.hasher, address), same).copied()
    }

    /// Enters slot `s`, a new one whose address is recorded and in no other slot. While the
    /// build's order holds no slot is free, so `s` is the first past the build's.
    pub fn insert(&mut self, records: &Records, s: u32) {
        let (state, table) = self.hashed(records, s);
        let rehash = |&t: &u32| hash(state, records.address_bytes(t));
        table.insert_unique(hash(state, records.address_bytes(s)), s, rehash);
    }

    /// Takes out slot `s` of `slots`, whose address is still recorded.
    pub fn remove(&mut self, records: &Records, slots: u32, s: u32) {
        let (state, table) = self.hashed(records, slots);
        let hash = hash(state, records.address_bytes(s));
        if let Ok(entry) = table.find_entry(hash, |&t| t == s) {
            entry.remove();
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.hashed.as_ref().map_or(0, HashTable::allocation_size)
    }

    /// The hash table, made of the first `built` slots (the build's) if there was none: before
    /// a change breaks their order.
    fn hashed(&mut self, records: &Records, built: u32) -> (&FixedState, &mut HashTable<u32>) {
        let state = &self.hasher;
        let table = self.hashed.get_or_insert_with(|| {
            let rehash = |&t: &u32| hash(state, records.address_bytes(t));
            let mut table = HashTable::with_capacity(built as usize + 1);
            for s in 0..built {
                table.insert_unique(hash(state, records.address_bytes(s)), s, rehash);
            }
            table
        });
        (state, table)
    }
}

/// The slot of `address` among `slots` slots of ascending addresses.
fn search(records: &Records, slots: u32, address: &str) -> Option<u32> {
    let (mut low, mut high) = (0, slots);
    while low < high {
        let mid = low + (high - low) / 2;
        match records.address_bytes(mid).cmp(address.as_bytes()) {
            Ordering::Less => low = mid + 1,
            Ordering::Greater => high = mid,
            Ordering::Equal => return Some(mid),
        }
    }
    None
}

/// The hash of `address`: its bytes alone. `Hash for str` adds an end mark (a second write and
/// a multiply at `finish`) so that strings hashed one after another stay apart; the table
/// hashes one string, and a build of 100k hosts hashes each.
fn hash(state: &FixedState, address: &[u8]) -> u64 {
    let mut hasher = state.build_hasher();
    hasher.write(address);
    hasher.finish()
}
