//! The value ids of a key with many values (one unique per host), by hash: open addressing
//! with linear probing over one array of `u32`, each place an id and a tag of its hash.
//!
//! hashbrown's `HashTable<u32>` held them before, in more bytes (a control byte and an id per
//! bucket, at most 7/8 full, against an id and its tag per place at most 13/16 full: 640 KB
//! against 512 KB for 100k ids). Filling it with 100k ids took ~0.7 ms of a 5.5 ms build
//! from bytes, an insert at a time, each waiting on its probe; [`Values::finish_fill`] probes
//! for all of them a step at a time, without a branch. A lookup reads one line of places where
//! hashbrown read its control bytes and then its bucket: lookups of a unique value from raw
//! strings at 100k hosts went from 42 to 34 ns.

use alloc::{boxed::Box, vec, vec::Vec};

use super::super::stretches::{group, worth_grouping};

#[cfg(test)]
mod tests;

/// A place that holds no id.
const FREE: u32 = 0;

/// Fewest places a table has.
const MIN_PLACES: usize = 16;

/// The bits of a place that hold its id plus one at first: ids to 2^24 - 2 (16M, more than
/// a table's pairs but for the very largest), with 8 bits of tag above them. A larger id
/// takes the whole place, without a tag, from then on.
const FIRST_IDS: u32 = (1 << 24) - 1;

/// Rounds of [`Values::finish_fill`] before the ids left take their places one by one.
/// Filling a table to 100k ids of 131,072 places (a model with random homes), 70% find their
/// home free, the next rounds place 36%, 27% and 22% of those left, and 11% are left after
/// four, in clusters where each round places fewer. Two or eight rounds built as fast.
const FILL_ROUNDS: usize = 4;

/// Ids by hash; each id is added once (the caller knows its value is not there yet).
#[derive(Debug)]
pub(super) struct Values {
    /// A power of two of places, at most 13/16 used: [`FREE`], or the id plus one in the bits
    /// of `ids` and the hash's low bits above them (a tag that rules most other ids out
    /// without reading their values).
    places: Box<[u32]>,
    /// `64 - log2(places.len())`: an id's home is the top bits of its hash.
    shift: u32,
    /// The mask of the bits that hold an id plus one.
    ids: u32,
    len: usize,
}

impl Values {
    /// A table with room for `n` ids.
    pub fn with_capacity(n: usize) -> Values {
        Values::with_places(places_for(n), FIRST_IDS)
    }

    fn with_places(places: usize, ids: u32) -> Values {
        debug_assert!(places.is_power_of_two());
        Values {
            places: vec![FREE; places].into_boxed_slice(),
            shift: 64 - places.trailing_zeros(),
            ids,
            len: 0,
        }
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.places.len() * size_of::<u32>()
    }

    fn home(&self, hash: u64) -> usize {
        (hash >> self.shift) as usize
    }

    fn tag(&self, hash: u64) -> u32 {
        hash as u32 & !self.ids
    }

    /// The id of hash `hash` that `same` confirms, if any.
    #[inline]
    pub fn find(&self, hash: u64, same: impl Fn(u32) -> bool) -> Option<u32> {
        let (mask, tag) = (self.places.len() - 1, self.tag(hash));
        let mut at = self.home(hash);
        loop {
            let place = self.places[at];
            if place == FREE {
                return None;
            }
            if place & !self.ids == tag && same((place & self.ids) - 1) {
                return Some((place & self.ids) - 1);
            }
            at = (at + 1) & mask;
        }
    }

    /// Adds `id` of hash `hash`, not in the table yet; `hash_of` gives the hash of any id in
    /// the table, for it to grow.
    #[inline]
    pub fn insert_unique(&mut self, hash: u64, id: u32, hash_of: impl Fn(u32) -> u64) {
        self.make_room(1, id as usize + 1, hash_of);
        self.place(hash, id);
        self.len += 1;
    }

    /// Starts a fill: room for up to `n` ids from `first` on, none in the table yet (a run of
    /// distinct values), and a buffer for the caller to push each one's [`Values::entry`]
    /// onto as it hashes it, then give to [`Values::finish_fill`] (fewer than `n` will do; a
    /// pass of its own over the hashes was ~0.1 ms of a build of 100k values). `hash_of` as
    /// for [`Values::insert_unique`].
    pub fn start_fill(&mut self, first: u32, n: usize, hash_of: impl Fn(u32) -> u64) -> Vec<u64> {
        self.make_room(n, first as usize + n, hash_of);
        Vec::with_capacity(n)
    }

    /// Adds the ids of `entries` (see [`Values::start_fill`]), probing a step at a time for
    /// all of them: each round tries the next place of every id still without one, taking it
    /// if free, without a branch. One by one, the test of each place was a branch mispredicted
    /// as often as the table was full, and each mispredict dropped the loads of the places
    /// after it: 100k ids took 0.7 ms, mostly waiting on those loads again.
    pub fn finish_fill(&mut self, mut entries: Vec<u64>) {
        let n = entries.len();
        let places = self.places.len();
        // Grouped by home in a large table, a round walks the places front to back. Builds of
        // a key unique per host at 100k hosts (512 KiB of places), run in turns with the
        // binary before: 8.98-10.0 ms became 7.89 (medians of ten pairs) in a quiet
        // half-hour; in a noisy hour, no difference. 1% more instructions.
        if worth_grouping::<u32>(places) {
            group(&mut entries, places, |&entry| home_of(entry));
        }
        let mut waiting = n;
        for step in 0..FILL_ROUNDS {
            waiting = self.fill_round(&mut entries[..waiting], step);
        }
        for &entry in &entries[..waiting] {
            self.place_entry(entry);
        }
        self.len += n;
    }

    /// Gives each entry of `left` (see [`Values::entry`]) the place `step` after its home if
    /// free; returns how many did not get one, now first in `left`.
    fn fill_round(&mut self, left: &mut [u64], step: usize) -> usize {
        let mask = self.places.len() - 1;
        let mut waiting = 0;
        for k in 0..left.len() {
            let entry = left[k];
            let place = &mut self.places[(home_of(entry) + step) & mask];
            let free = *place == FREE;
            *place = core::hint::select_unpredictable(free, entry as u32, *place);
            left[waiting] = entry;
            waiting += usize::from(!free);
        }
        waiting
    }

    /// Room for `n` more ids, the largest of them `past_last - 1`: more places past 13/16 full,
    /// and every id in the whole place once an id plus one reaches the tagged bits' mask.
    fn make_room(&mut self, n: usize, past_last: usize, hash_of: impl Fn(u32) -> u64) {
        let wide = past_last >= self.ids as usize;
        if wide || (self.len + n) * 16 > self.places.len() * 13 {
            let ids = if wide { u32::MAX } else { self.ids };
            let places = places_for(self.len + n).max(self.places.len());
            self.rebuild(places, ids, hash_of);
        }
    }

    /// Gives back what places the ids held do not need.
    pub fn shrink_to_fit(&mut self, hash_of: impl Fn(u32) -> u64) {
        let places = places_for(self.len);
        if places < self.places.len() {
            self.rebuild(places, self.ids, hash_of);
        }
    }

    /// `id` of hash `hash` as a fill takes it: its home, then its place's bits.
    #[inline]
    pub fn entry(&self, hash: u64, id: u32) -> u64 {
        (self.home(hash) as u64) << 32 | u64::from(self.tag(hash) | (id + 1))
    }

    /// Puts `id` in the first free place from its home.
    fn place(&mut self, hash: u64, id: u32) {
        self.place_entry(self.entry(hash, id));
    }

    /// Puts an entry of [`Values::entry`] in the first free place from its home.
    fn place_entry(&mut self, entry: u64) {
        let mask = self.places.len() - 1;
        let mut at = home_of(entry);
        while self.places[at] != FREE {
            at = (at + 1) & mask;
        }
        self.places[at] = entry as u32;
    }

    /// The same ids in a table of `places` places whose ids take the bits of `ids`.
    #[cold]
    fn rebuild(&mut self, places: usize, ids: u32, hash_of: impl Fn(u32) -> u64) {
        let old = core::mem::replace(self, Values::with_places(places, ids));
        for &place in old.places.iter().filter(|&&p| p != FREE) {
            let id = (place & old.ids) - 1;
            self.place(hash_of(id), id);
        }
        self.len = old.len;
    }

    /// The ids held, for tests.
    #[cfg(test)]
    fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        let held = self.places.iter().filter(|&&p| p != FREE);
        held.map(|&p| (p & self.ids) - 1)
    }
}

/// Places for `n` ids: a power of two at most 13/16 used.
fn places_for(n: usize) -> usize {
    (n * 16).div_ceil(13).next_power_of_two().max(MIN_PLACES)
}

/// The home place of an entry of [`Values::entry`] (its high half; the low half is what its
/// place will hold).
fn home_of(entry: u64) -> usize {
    (entry >> 32) as usize
}
