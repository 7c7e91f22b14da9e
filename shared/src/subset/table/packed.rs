//! The hash table of subsets by packed key ([`key::pack`](super::key::pack)): open
//! addressing with linear probing over one flat array, at most half full, keyed by the packed
//! word itself.
//!
//! A lookup is a multiply, a shift and, usually, one 16-byte entry compared. Natively that is
//! as many instructions as hashbrown's SSE2 probe (tag byte, group load, bit-mask walk, then
//! the entry): 265 per 4 keys x 3 values lookup, by cachegrind. In Wasm, where hashbrown
//! emulates its group with 64-bit words, pre-interned lookups got 3-7% faster against MOSN's
//! trie in the same runs. A packed key is never 0 (its top bits hold its length, at least 1),
//! so 0 marks a free place and no control bytes are needed. Removal shifts the entries after
//! it back (no tombstones), so probes stay as short as the load allows however many updates
//! come.

use alloc::{boxed::Box, vec};

use super::super::stretches::{group, worth_grouping};
use super::Hit;

/// Fewest places a table has: small enough to be nothing, large enough that the probe
/// sequence of a handful of subsets stays short.
const MIN_PLACES: usize = 8;

#[derive(Debug, Clone, Copy)]
pub(super) struct Entry {
    /// [`key::pack`](super::key::pack) of the subset's value ids; 0 for a free place.
    pub key: u64,
    pub hit: Hit,
}

const FREE: Entry = Entry {
    key: 0,
    hit: Hit::NONE,
};

/// Entries by packed key; several may share a key when keys are not exact (see
/// [`key::is_exact`](super::key::is_exact)).
#[derive(Debug)]
pub(super) struct Packed {
    /// A power of two of places, at most half used.
    places: Box<[Entry]>,
    /// `64 - log2(places.len())`: a key's home is the top bits of its hash.
    shift: u32,
    len: usize,
}

impl Default for Packed {
    fn default() -> Packed {
        Packed::with_places(MIN_PLACES)
    }
}

impl Packed {
    fn with_places(places: usize) -> Packed {
        debug_assert!(places.is_power_of_two());
        Packed {
            places: vec![FREE; places].into_boxed_slice(),
            shift: 64 - places.trailing_zeros(),
            len: 0,
        }
    }

    fn mask(&self) -> usize {
        self.places.len() - 1
    }

    /// Where probing for `key` starts: Fibonacci hashing, whose top bits depend on every bit
    /// of the key (a subset's ids sit in separate lanes of it).
    #[inline]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    /// The first entry with `key` that `matches`.
    #[inline]
    pub fn find(&self, key: u64, matches: impl Fn(&Entry) -> bool) -> Option<&Entry> {
        let at = self.position(key, matches)?;
        Some(&self.places[at])
    }

    /// The entry with `key` at its home or the place after, if any: where nearly every key
    /// of a table at most half full sits (94% of a lookup's in the 4 keys x 3 values scheme).
    #[inline]
    pub fn near_home(&self, key: u64) -> Option<&Entry> {
        let home = self.home(key);
        // At half load a quarter of the keys sit past their home, most of them next to it: a
        // choice between the two without a branch spares those lookups a mispredict.
        let next = (home + 1) & self.mask();
        let first = core::hint::select_unpredictable(self.places[home].key == key, home, next);
        let entry = &self.places[first];
        (entry.key == key).then_some(entry)
    }

    /// [`Packed::find`], to change the entry's hit.
    pub fn find_mut(&mut self, key: u64, matches: impl Fn(&Entry) -> bool) -> Option<&mut Entry> {
        let at = self.position(key, matches)?;
        Some(&mut self.places[at])
    }

    #[inline]
    fn position(&self, key: u64, matches: impl Fn(&Entry) -> bool) -> Option<usize> {
        debug_assert_ne!(key, 0, "0 marks a free place");
        let mask = self.mask();
        let mut at = self.home(key);
        loop {
            let entry = &self.places[at];
            if entry.key == key && matches(entry) {
                return Some(at);
            }
            if entry.key == 0 {
                return None;
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds an entry (its subset not held yet; its key may be).
    pub fn insert(&mut self, entry: Entry) {
        debug_assert_ne!(entry.key, 0, "packed keys are never 0");
        self.reserve(1);
        self.place(entry);
        self.len += 1;
    }

    /// Adds entries (their subsets not held yet), in a large table [`group`]ed by home first.
    /// Added one at a time as the walk made them, the 100k subsets of two keys unique per host
    /// probed 4 MiB of places at random, a cache miss each: their build from bytes went from
    /// 53.7 to 34.8 ms (medians of six interleaved runs of `subset_build pairs 100000`).
    pub fn extend(&mut self, entries: &mut [Entry]) {
        self.reserve(entries.len());
        self.len += entries.len();
        let places = self.places.len();
        if worth_grouping::<Entry>(places) {
            group(entries, places, |entry| self.home(entry.key));
        }
        entries.iter().for_each(|&entry| self.place(entry));
    }

    /// Puts `entry` in the first free place of its probe sequence.
    fn place(&mut self, entry: Entry) {
        let mask = self.mask();
        let mut at = self.home(entry.key);
        while self.places[at].key != 0 {
            at = (at + 1) & mask;
        }
        self.places[at] = entry;
    }

    /// Takes out the first entry with `key` that `matches`, if any.
    pub fn remove(&mut self, key: u64, matches: impl Fn(&Entry) -> bool) -> Option<Entry> {
        let mut hole = self.position(key, matches)?;
        let removed = self.places[hole];
        let mask = self.mask();
        // Moves back each entry after the hole whose home is not between the hole and it
        // (cyclically): its probe sequence passes the hole, so it would no longer be found
        // across a free place.
        let mut at = hole;
        loop {
            at = (at + 1) & mask;
            let entry = self.places[at];
            if entry.key == 0 {
                break;
            }
            let home = self.home(entry.key);
            if at.wrapping_sub(home) & mask >= at.wrapping_sub(hole) & mask {
                self.places[hole] = entry;
                hole = at;
            }
        }
        self.places[hole] = FREE;
        self.len -= 1;
        Some(removed)
    }

    /// Room for `more` entries without growing.
    pub fn reserve(&mut self, more: usize) {
        let want = self.len.saturating_add(more);
        if want <= self.places.len() / 2 {
            return;
        }
        self.resize(places_for(want));
    }

    /// The fewest places that hold what is there.
    pub fn shrink_to_fit(&mut self) {
        let fit = places_for(self.len);
        if fit < self.places.len() {
            self.resize(fit);
        }
    }

    fn resize(&mut self, places: usize) {
        let old = core::mem::replace(self, Packed::with_places(places));
        self.len = old.len;
        for &entry in old.places.iter().filter(|e| e.key != 0) {
            self.place(entry);
        }
    }

    /// The entries held, for tests.
    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.places.iter().filter(|e| e.key != 0)
    }

    pub fn capacity(&self) -> usize {
        self.places.len()
    }
}

/// Places for `n` entries at most half full. Never fewer for more entries: past the address
/// space it asks for the largest power of two, whose allocation fails as a `Vec`'s would
/// (subsets are bounded by hosts times selectors, far below that).
fn places_for(n: usize) -> usize {
    n.checked_mul(2)
        .and_then(usize::checked_next_power_of_two)
        .unwrap_or(1 << (usize::BITS - 1))
        .max(MIN_PLACES)
}

#[cfg(test)]
mod tests;
