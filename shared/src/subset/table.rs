//! The subset table: each subset's set (its hosts) and index, by its value ids. A subset of
//! several keys is found by one hash probe on its ids packed into a word ([`key`]); a subset
//! of one key by its value id alone, an array index. A key unique per host makes a subset per
//! host: the hash table cost such a lookup a second probe after its value's (another cache
//! miss or two in a large table) and 17 bytes a subset, the array 4 bytes a value id.
//!
//! A subset in the array has no record in `SubsetLb::subsets`: its value id is its identity
//! ([`array_id`]), its one key names its selector, and the array holds its set. Such records
//! (12 bytes) and the subset indices beside each set (4) were a third of an index of 100k
//! unique values.
//!
//! Value ids number every key's values, also of keys no selector has alone: a one-key subset
//! whose id lies far past the array (a new zone after 100k unique pod labels) goes to the hash
//! table instead, so the array stays within twice the one-key subsets it holds.

use alloc::vec::Vec;

use super::key;
use super::pickset::SetRef;

mod packed;

use packed::{Entry, Packed};

/// Ids below this always fit the array: small tables never probe for one-key subsets.
const ALWAYS: usize = 1024;

/// Marks the subset index of a subset held in the array, whose value id is the rest. Record
/// indices stay far below it (one per subset of several keys). Value ids grow with churn (the
/// interner frees none), but the array only takes ids below twice its subsets plus
/// [`ALWAYS`], and its subsets are at most one per value of a live host.
const IN_ARRAY: u32 = 1 << 31;

/// An unused place of the array: no slot is that high.
const NO_SET: SetRef = SetRef::one(IN_ARRAY - 1);

/// The subset index of the one-key subset of value id `kv` held in the array.
pub(super) const fn array_id(kv: u32) -> u32 {
    kv | IN_ARRAY
}

/// The value id of a subset index held in the array, `None` for a record's index.
pub(super) const fn array_kv(subset: u32) -> Option<u32> {
    match subset & IN_ARRAY {
        0 => None,
        _ => Some(subset & !IN_ARRAY),
    }
}

/// What the table holds of a subset.
#[derive(Debug, Clone, Copy)]
pub(super) struct Hit {
    /// Its hosts: they come with the probe, so a hit needs no other load.
    pub set: SetRef,
    /// Index into `SubsetLb::subsets`, or the [`array_id`] of a subset held in the array.
    pub subset: u32,
}

impl Hit {
    /// An unused place of the packed table.
    const NONE: Hit = Hit {
        set: NO_SET,
        subset: u32::MAX,
    };
}

/// Subsets by value ids.
#[derive(Debug, Default)]
pub(super) struct Table {
    /// Subsets of several keys, and of one key whose id is past `single`, by [`key::pack`] of
    /// their ids (exact for one id).
    packed: Packed,
    /// Sets of the subsets of one key, by value id (`NO_SET` where none).
    single: Vec<SetRef>,
    /// Subsets held in `single`.
    singles: usize,
    /// Subsets of one key held in `packed`: while none, a miss in `single` is final.
    strays: usize,
    /// While a build makes subsets ([`Table::defer`]), the entries of `packed` to add.
    deferred: Option<Vec<Entry>>,
}

impl Table {
    /// Holds the subsets of the hash table added from now on, about `n` of them, until
    /// [`Table::settle`]: a build's, which looks none up meanwhile, all placed at once (see
    /// [`Packed::extend`]).
    pub fn defer(&mut self, n: usize) {
        self.packed.reserve(n);
        self.deferred = Some(Vec::with_capacity(n));
    }

    /// Lookups and changes see placed subsets only: none may come while a build holds some
    /// back (they would miss them).
    fn assert_settled(&self) {
        debug_assert!(
            self.deferred.is_none(),
            "the subset table used while a build defers"
        );
    }

    /// Places the subsets held since [`Table::defer`].
    pub fn settle(&mut self) {
        if let Some(mut entries) = self.deferred.take() {
            self.packed.extend(&mut entries);
        }
    }

    /// An empty array for value ids below `len`, for a build to fill and hand to
    /// [`Table::adopt_array`].
    pub fn empty_array(len: usize) -> Vec<SetRef> {
        alloc::vec![NO_SET; len]
    }

    /// Takes `array` (by value id, [`Table::empty_array`] where no subset), holding `count`
    /// subsets, as the array of a build that has put none there yet; hands it back if it would
    /// pass its bound (ids far past its subsets, see the module's docs).
    pub fn adopt_array(&mut self, mut array: Vec<SetRef>, count: usize) -> Result<(), Vec<SetRef>> {
        debug_assert!(self.singles == 0 && self.single.is_empty());
        let len = array
            .iter()
            .rposition(|&set| set != NO_SET)
            .map_or(0, |at| at + 1);
        if len > 2 * count + ALWAYS {
            return Err(array);
        }
        array.truncate(len);
        self.single = array;
        self.singles = count;
        Ok(())
    }

    /// Room in the array for value ids below `kvs`.
    pub fn reserve_array(&mut self, kvs: usize) {
        self.single.reserve(kvs.saturating_sub(self.single.len()));
    }

    /// The subset with value ids `kvs` (`len` of them), whose [`key::pack`] is `key`.
    /// `same(subset, kvs)` confirms a hit when packed keys of `len` ids are not `exact` (see
    /// [`key::is_exact`]).
    #[inline]
    pub fn find<I>(
        &self,
        key: u64,
        kvs: I,
        len: usize,
        exact: bool,
        same: impl Fn(u32, I) -> bool,
    ) -> Option<Hit>
    where
        I: Iterator<Item = u32> + Clone,
    {
        self.assert_settled();
        if len <= 1 {
            // An unknown value's id (`u32::MAX`) is past the array. No ids name no subset (the
            // packed table must not be asked for key 0, its mark of a free place).
            let kv = kvs.clone().next()?;
            let set = self.single.get(kv as usize).filter(|&&set| set != NO_SET);
            if set.is_some() || self.strays == 0 {
                return set.map(|&set| Hit {
                    set,
                    subset: array_id(kv),
                });
            }
        }
        match self.packed.near_home(key) {
            Some(e) if exact => Some(e.hit),
            _ => self.find_far(key, kvs, exact, same),
        }
    }

    /// [`Table::find`] past the two places a probe reads first, with keys to confirm, or for
    /// a subset not there (a request that falls back): out of line, so that the usual lookup
    /// saves one register around its probe, not six (212.6 -> 199.1 instructions a 4 keys x 3
    /// values lookup).
    #[cold]
    #[inline(never)]
    fn find_far<I>(
        &self,
        key: u64,
        kvs: I,
        exact: bool,
        same: impl Fn(u32, I) -> bool,
    ) -> Option<Hit>
    where
        I: Iterator<Item = u32> + Clone,
    {
        let matches = |e: &Entry| exact || same(e.hit.subset, kvs.clone());
        self.packed.find(key, matches).map(|e| e.hit)
    }

    /// Adds the subset of value ids `kvs` (interned, none unknown), not there yet, over `set`;
    /// returns its index: [`array_id`] if the array takes it, else `record()`, a record made
    /// for it.
    pub fn insert(&mut self, kvs: &[u32], set: SetRef, record: impl FnOnce() -> u32) -> u32 {
        if let [kv] = kvs {
            let at = *kv as usize;
            if at < self.single.len().max(2 * self.singles + ALWAYS) {
                // The walk makes a key's subsets in value id order: usually the next place.
                if self.single.len() == at {
                    self.single.push(set);
                } else {
                    if self.single.len() < at {
                        self.single.resize(at + 1, NO_SET);
                    }
                    debug_assert!(self.single[at] == NO_SET);
                    self.single[at] = set;
                }
                self.singles += 1;
                return array_id(*kv);
            }
            self.strays += 1;
        }
        let subset = record();
        let entry = Entry {
            key: packed_key(kvs),
            hit: Hit { set, subset },
        };
        match &mut self.deferred {
            Some(entries) => entries.push(entry),
            None => self.packed.insert(entry),
        }
        subset
    }

    /// The set of subset `subset`, with value ids `kvs` (ignored for an [`array_id`]), to
    /// change it.
    pub fn set_mut(&mut self, kvs: &[u32], subset: u32) -> Option<&mut SetRef> {
        self.assert_settled();
        if let Some(kv) = array_kv(subset) {
            return self
                .single
                .get_mut(kv as usize)
                .filter(|set| **set != NO_SET);
        }
        let entry = self
            .packed
            .find_mut(packed_key(kvs), |e| e.hit.subset == subset);
        entry.map(|e| &mut e.hit.set)
    }

    /// Takes out subset `subset`, with value ids `kvs` (ignored for an [`array_id`]); false
    /// if the table did not hold it.
    pub fn remove(&mut self, kvs: &[u32], subset: u32) -> bool {
        self.assert_settled();
        if let Some(kv) = array_kv(subset) {
            let Some(set) = self
                .single
                .get_mut(kv as usize)
                .filter(|set| **set != NO_SET)
            else {
                return false;
            };
            *set = NO_SET;
            self.singles -= 1;
            return true;
        }
        let held = self
            .packed
            .remove(packed_key(kvs), |e| e.hit.subset == subset);
        if held.is_some() {
            self.strays -= usize::from(kvs.len() == 1);
        }
        held.is_some()
    }

    /// Gives back the array's slack once built.
    pub fn shrink_to_fit(&mut self) {
        self.single.shrink_to_fit();
        self.packed.shrink_to_fit();
    }

    /// The packed keys held, for tests that make them collide.
    #[cfg(test)]
    pub fn packed_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.packed.iter().map(|e| e.key)
    }

    /// One-key subsets in the array and in the hash table, for tests.
    #[cfg(test)]
    pub fn one_key_counts(&self) -> (usize, usize) {
        (self.singles, self.strays)
    }

    /// Heap bytes held, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.packed.capacity() * size_of::<Entry>() + self.single.capacity() * size_of::<SetRef>()
    }
}

/// The packed key of a subset's value ids.
fn packed_key(kvs: &[u32]) -> u64 {
    key::pack(kvs.iter().copied(), kvs.len())
}
