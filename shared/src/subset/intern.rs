//! String interning: label keys and key=value pairs become dense ids, looked up by `&str`
//! without allocating (requests set metadata from raw header strings).
//!
//! Tables have few keys and, for most keys, few values (zones, versions): those are found by
//! comparing [`Fingerprint`]s, a few integers inline, which beats hashing them (a general
//! string hash costs more than the comparisons it saves) and calling `memcmp` per candidate.
//! The candidates sit in fixed [`Lanes`], all tested without a branch: a request's values are
//! unpredictable, and an early exit from the scan cost a mispredicted branch per pair (about
//! half of a lookup from raw strings).
//! A key with many values (one unique per host) switches to a hash table of its own, of value
//! ids ([`Values`]): a candidate is confirmed by the value's fingerprint, kept per id (one
//! load), and for a long value its text. Values up to 15 bytes keep no text at all: their fingerprint is the
//! string. A key unique per host holds 100k values in ~2 MiB that way (fingerprints, keys, the
//! table); with the text, a span and the fingerprint in each table entry it held 5.2 MiB.
//! The strings kept live in one buffer (no allocation per interned string). Building interns
//! the labels of every host in key order, so the key at each label position of the previous
//! host is tried first.

use alloc::{string::String, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use super::fingerprint::Fingerprint;
use super::metadata::UNKNOWN_VALUE;

mod values;

use crate::hosttable::before;
use values::Values;

/// Most values a key keeps in its list; beyond, its values go to the hash table.
const SMALL: usize = 8;

/// Most keys looked up by scanning; beyond, by the hash table.
const FEW_KEYS: usize = SMALL;

/// Up to [`SMALL`] fingerprints and their ids, in fixed lanes (unused ones hold
/// [`Fingerprint::NONE`], which matches nothing); a lookup tests every used lane, without an
/// early exit.
#[derive(Debug, Clone)]
struct Lanes {
    fps: [Fingerprint; SMALL],
    /// Id plus one per lane (0 when unused): the scan's result starts at 0, for no match.
    ids: [u32; SMALL],
    len: u8,
    /// The values went to this table of `Interner::values` (a key with many): the lanes are
    /// unused.
    spilled: Option<u32>,
}

impl Default for Lanes {
    fn default() -> Lanes {
        Lanes {
            fps: [Fingerprint::NONE; SMALL],
            ids: [0; SMALL],
            len: 0,
            spilled: None,
        }
    }
}

impl Lanes {
    /// The id of a whole fingerprint (at most one lane has it).
    #[inline]
    fn find(&self, fp: &Fingerprint) -> Option<u32> {
        self.hit(fp).checked_sub(1)
    }

    /// [`Lanes::find`] with no match as [`UNKNOWN_VALUE`]: a request's pair, with no
    /// `Option` to take apart (which cost ~15 instructions a pair).
    #[inline]
    fn find_or_unknown(&self, fp: &Fingerprint) -> u32 {
        // No match, 0, wraps to `u32::MAX`.
        const _: () = assert!(UNKNOWN_VALUE == 0u32.wrapping_sub(1));
        self.hit(fp).wrapping_sub(1)
    }

    /// The id plus one of the lane holding `fp`, or 0.
    #[inline]
    fn hit(&self, fp: &Fingerprint) -> u32 {
        let used = usize::from(self.len);
        let mut hit = 0;
        // Up to `len`, not every lane: the count is the same for each lookup of a key, so its
        // loop branch is predicted, and keys with one value or few test only those.
        for (stored, &id) in self.fps[..used].iter().zip(&self.ids[..used]) {
            hit = core::hint::select_unpredictable(stored.same(fp), id, hit);
        }
        hit
    }

    /// The used lanes.
    fn iter(&self) -> impl Iterator<Item = (&Fingerprint, u32)> {
        let used = usize::from(self.len);
        self.fps[..used]
            .iter()
            .zip(self.ids[..used].iter().map(|id| id - 1))
    }

    /// Adds an id; false if the lanes are full or spilled.
    fn push(&mut self, fp: Fingerprint, id: u32) -> bool {
        let at = usize::from(self.len);
        if self.spilled.is_some() || at == SMALL {
            return false;
        }
        self.fps[at] = fp;
        self.ids[at] = id + 1;
        self.len += 1;
        true
    }
}

/// Where an interned string lies in the text buffer.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    len: u32,
}

/// The text of a value its fingerprint does not identify (longer than 15 bytes).
#[derive(Debug, Clone, Copy)]
struct LongValue {
    id: u32,
    span: Span,
}

/// The hash of a key=value id, for [`Ids::long`].
fn id_hash(id: u32) -> u64 {
    u64::from(id).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Stores `item` as the last seen at label `position` of a host: in place, or as the next
/// position; a position past the next (a host longer than any before it by more than one,
/// which a host's labels in order never are) is not remembered.
#[inline]
fn remember<T>(recent: &mut Vec<T>, position: usize, item: T) {
    if position < recent.len() {
        recent[position] = item;
    } else if position == recent.len() {
        recent.push(item);
    }
}

/// A key=value interned at a label position, with its value's fingerprint.
#[derive(Debug, Clone, Copy)]
struct Recent {
    key: u32,
    fp: Fingerprint,
    id: u32,
}

/// Interned label keys and key=value pairs.
#[derive(Debug, Default)]
pub(super) struct Interner {
    /// The key=value ids' fingerprints, keys and long texts, apart from `values`.
    ids: Ids,
    keys: Vec<(Fingerprint, Span)>,
    /// The first [`FEW_KEYS`] keys, by id.
    few_keys: Lanes,
    key_table: HashTable<u32>,
    /// Per key id: its key=value ids while it has at most [`SMALL`] values, else spilled.
    small: Vec<Lanes>,
    /// Per key with many values (see [`Lanes::spilled`]): its key=value ids, by value.
    values: Vec<Values>,
    /// Key id seen at each label position of the last host interned.
    recent: Vec<u32>,
    /// The key=value seen at each label position of the last host interned by
    /// [`Interner::intern_kv_at`].
    recent_kvs: Vec<Recent>,
    /// The keys requests set (the selectors'), the first [`SMALL`] in the order of their
    /// texts, each at its position: a request setting its keys in that order (as hosts list
    /// their labels) finds each where it looks first (see [`Interner::pair_at`]).
    in_text_order: Lanes,
    /// Per key id below 64, bit `b`: whether [`Interner::key_precedes`] compared it with key
    /// `b` yet, and the answer.
    order_known: Vec<u64>,
    order_less: Vec<u64>,
    /// Values a key may get in the build under way (one per host of the table, a bound):
    /// room made for them in the table of `values` of the first key to spill, so that a key
    /// unique per host does not grow its table by doubling (its rehashes were ~7% of such a build); 0 outside a
    /// build.
    expected: usize,
}

/// What confirming and hashing a key=value id reads, apart from the tables of values: a
/// table is probed and grows while these are borrowed. Taking the table out of the interner
/// for each probe instead, and putting it back, cost 9% of a build of 100k hosts with a key
/// unique per host (its stores were among the probe's hottest instructions).
#[derive(Debug, Default)]
struct Ids {
    state: FixedState,
    /// Every interned key and long value, back to back.
    text: String,
    /// Per key=value id: its value's fingerprint.
    kv_fps: Vec<Fingerprint>,
    /// Per key=value id: its key.
    kv_keys: Vec<u32>,
    /// The text of the long values, by key=value id.
    long: HashTable<LongValue>,
}

impl Ids {
    fn str(&self, span: Span) -> &str {
        &self.text[span.start..span.start + span.len as usize]
    }

    fn push_str(&mut self, s: &str) -> Span {
        let span = Span {
            start: self.text.len(),
            len: s.len() as u32,
        };
        self.text.push_str(s);
        span
    }

    /// Gives `key`=`value` the next id, with its fingerprint, key and (if long) text.
    /// Inlined into the loop of a run of values: called, its saving and restoring of
    /// registers was ~18 instructions a value, a fortieth of a build of 100k unique values.
    #[inline]
    fn push(&mut self, key: u32, fp: Fingerprint, value: &str) -> u32 {
        let id = self.kv_fps.len() as u32;
        self.kv_fps.push(fp);
        self.kv_keys.push(key);
        if !fp.is_whole() {
            self.push_long(id, value);
        }
        id
    }

    /// Keeps the text of long value `id`.
    #[inline(never)]
    fn push_long(&mut self, id: u32, value: &str) {
        let span = self.push_str(value);
        let long = LongValue { id, span };
        self.long
            .insert_unique(id_hash(id), long, |l| id_hash(l.id));
    }

    /// Room for `n` more ids.
    fn reserve(&mut self, n: usize) {
        self.kv_fps.reserve(n);
        self.kv_keys.reserve(n);
    }

    fn shrink_to_fit(&mut self) {
        self.text.shrink_to_fit();
        self.kv_fps.shrink_to_fit();
        self.kv_keys.shrink_to_fit();
        self.long.shrink_to(self.long.len(), |l| id_hash(l.id));
    }

    fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.kv_fps.capacity() * size_of::<Fingerprint>()
            + self.kv_keys.capacity() * size_of::<u32>()
            + self.long.allocation_size()
    }

    fn hash(&self, seed: u32, fp: &Fingerprint, s: &str) -> u64 {
        match fp.is_whole() {
            true => fp.hash(u64::from(seed)),
            false => self.state.hash_one((seed, s)),
        }
    }

    /// Whether key=value id `id` has the value of fingerprint `fp` and text `value` (the
    /// fingerprint decides for a short one).
    fn is_value(&self, id: u32, fp: &Fingerprint, value: &str) -> bool {
        self.kv_fps[id as usize].same(fp) && (fp.is_whole() || self.long_text(id) == value)
    }

    /// The text of long value `id` (empty for a short one, whose fingerprint identifies it).
    fn long_text(&self, id: u32) -> &str {
        let found = self.long.find(id_hash(id), |l| l.id == id);
        found.map_or("", |l| self.str(l.span))
    }

    /// The hash a lookup of value id `id` computes.
    fn value_hash(&self, id: u32) -> u64 {
        let key = self.kv_keys[id as usize];
        self.hash(key, &self.kv_fps[id as usize], self.long_text(id))
    }
}

impl Interner {
    fn str(&self, span: Span) -> &str {
        self.ids.str(span)
    }

    fn hash(&self, seed: u32, fp: &Fingerprint, s: &str) -> u64 {
        self.ids.hash(seed, fp, s)
    }

    #[inline]
    fn key_fp(&self, fp: &Fingerprint, key: &str) -> Option<u32> {
        match self.keys.len() <= FEW_KEYS && fp.is_whole() {
            true => self.few_keys.find(fp),
            false => self.key_slow(fp, key),
        }
    }

    /// [`Interner::key_fp`] of a long key, or among many keys.
    #[inline(never)]
    fn key_slow(&self, fp: &Fingerprint, key: &str) -> Option<u32> {
        let same = |(stored, span): &(Fingerprint, Span)| {
            *stored == *fp && (fp.is_whole() || self.str(*span) == key)
        };
        if self.keys.len() <= FEW_KEYS {
            return self.keys.iter().position(same).map(|id| id as u32);
        }
        let hash = self.hash(u32::MAX, fp, key);
        let found = self
            .key_table
            .find(hash, |&id| same(&self.keys[id as usize]));
        found.copied()
    }

    /// The id of `key`, if interned.
    pub(super) fn key(&self, key: &str) -> Option<u32> {
        self.key_fp(&Fingerprint::of(key), key)
    }

    /// The id of `key`, interning it if new.
    pub(super) fn intern_key(&mut self, key: &str) -> u32 {
        let fp = Fingerprint::of(key);
        if let Some(id) = self.key_fp(&fp, key) {
            return id;
        }
        let id = self.keys.len() as u32;
        let span = self.ids.push_str(key);
        self.keys.push((fp, span));
        if id < u64::BITS {
            self.order_known.push(0);
            self.order_less.push(0);
        }
        self.few_keys.push(fp, id);
        self.small.push(Lanes::default());
        let (ids, keys) = (&self.ids, &self.keys);
        let hash = ids.hash(u32::MAX, &fp, key);
        self.key_table.insert_unique(hash, id, |&id| {
            let (fp, span) = &keys[id as usize];
            ids.hash(u32::MAX, fp, ids.str(*span))
        });
        id
    }

    /// How many keys are interned (ids are `0..key_count`, and only ever added).
    pub(super) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// The text of key `key`.
    pub(super) fn key_text(&self, key: u32) -> &str {
        self.str(self.keys[key as usize].1)
    }

    /// Whether key `a`'s text sorts strictly before key `b`'s. Remembered for pairs of the
    /// first 64 key ids: a build from an archive checks the order of every host's labels, and
    /// a string comparison per label (a `memcmp` call) was 6% of a build of 100k hosts from
    /// the daemon's bytes.
    #[inline]
    pub(super) fn key_precedes(&mut self, a: u32, b: u32) -> bool {
        let (Some(known), Some(bit)) = (self.order_known.get_mut(a as usize), 1u64.checked_shl(b))
        else {
            return self.key_text(a) < self.key_text(b);
        };
        if *known & bit == 0 {
            *known |= bit;
            if self.key_text(a) < self.key_text(b) {
                self.order_less[a as usize] |= bit;
            }
        }
        self.order_less[a as usize] & bit != 0
    }

    /// The id of `key`, the `position`-th label key of a host, interning it if new. Inlined
    /// into the build's walk of the labels, once per label: the usual case, the key at that
    /// position on the previous host, is a few instructions, fewer than a call's (a plain
    /// `#[inline]` was not taken).
    #[inline(always)]
    pub(super) fn intern_key_at(&mut self, position: usize, key: &str) -> u32 {
        if let Some(&id) = self.recent.get(position) {
            let (stored, span) = &self.keys[id as usize];
            let fp = Fingerprint::of(key);
            if stored.same(&fp) && (fp.is_whole() || self.str(*span) == key) {
                return id;
            }
        }
        self.intern_key_elsewhere(position, key)
    }

    /// [`Interner::intern_key_at`] of a key not at its position on the previous host.
    #[inline(never)]
    fn intern_key_elsewhere(&mut self, position: usize, key: &str) -> u32 {
        let id = self.intern_key(key);
        remember(&mut self.recent, position, id);
        id
    }

    /// The id of `key`=`value`, if interned.
    #[inline]
    pub(super) fn kv(&self, key: u32, value: &str) -> Option<u32> {
        self.kv_fp(key, &Fingerprint::of(value), value)
    }

    #[inline]
    fn kv_fp(&self, key: u32, fp: &Fingerprint, value: &str) -> Option<u32> {
        let id = self.value_id_fp(key, fp, value);
        (id != UNKNOWN_VALUE).then_some(id)
    }

    /// [`Interner::kv_fp`] with no id as [`UNKNOWN_VALUE`] (no interned id is that).
    #[inline]
    fn value_id_fp(&self, key: u32, fp: &Fingerprint, value: &str) -> u32 {
        match self.small.get(key as usize) {
            Some(small) if small.spilled.is_none() && fp.is_whole() => small.find_or_unknown(fp),
            _ => self.kv_slow(key, fp, value).unwrap_or(UNKNOWN_VALUE),
        }
    }

    /// [`Interner::kv_fp`] of a long value, or of a key with many values.
    #[inline(never)]
    fn kv_slow(&self, key: u32, fp: &Fingerprint, value: &str) -> Option<u32> {
        let small = self.small.get(key as usize)?;
        let same = |&id: &u32| self.ids.is_value(id, fp, value);
        let Some(table) = small.spilled else {
            return small.iter().map(|(_, id)| id).find(same);
        };
        let hash = self.hash(key, fp, value);
        self.values[table as usize].find(hash, |id| same(&id))
    }

    /// Requests set `keys` (interned): the first [`SMALL`] in the order of their texts are
    /// where [`Interner::pair_at`] looks first. Only those of the selectors, not every label
    /// key (hosts may carry keys no request sets): kept as they come, a list of every key
    /// grew by an insertion per new key, quadratic in a table of many distinct keys.
    pub(super) fn expect_request_keys(&mut self, keys: impl Iterator<Item = u32>) {
        let mut keys: Vec<u32> = keys.collect();
        keys.sort_unstable_by(|&a, &b| self.key_text(a).cmp(self.key_text(b)));
        keys.dedup();
        self.in_text_order = Lanes::default();
        for &k in keys.iter().take(SMALL) {
            self.in_text_order.push(self.keys[k as usize].0, k);
        }
    }

    /// The key id and key=value id of the `position`-th pair a request sets, given as strings:
    /// `None` if the key is unknown, `Some((key, UNKNOWN_VALUE))` if no host has the value. Requests set
    /// their keys in one order, usually that of the hosts' labels (of the key texts): the key
    /// at `position` in that order is tried first, one comparison instead of a scan. Key ids
    /// follow the selectors (the build's walk is faster with a key of many values first), so
    /// they are not that order: trying id `position`, MOSN's scheme missed 3 keys of 4.
    #[inline]
    pub(super) fn pair_at(&self, position: usize, key: &str, value: &str) -> Option<(u32, u32)> {
        let fp = Fingerprint::of(key);
        let k = match self.in_text_order.fps.get(position) {
            Some(stored) if stored.same(&fp) && fp.is_whole() => {
                self.in_text_order.ids[position] - 1
            }
            _ => self.key_fp(&fp, key)?,
        };
        Some((k, self.value_id(k, value)))
    }

    /// The id of `key`=`value`, or [`UNKNOWN_VALUE`] if no host has it (a request's pair).
    #[inline]
    pub(super) fn value_id(&self, key: u32, value: &str) -> u32 {
        self.value_id_fp(key, &Fingerprint::of(value), value)
    }

    /// The id of `key`=`value`, interning it if new. Inlined, as
    /// [`Interner::intern_key_at`] is: most labels of a build are values seen before.
    #[inline]
    pub(super) fn intern_kv(&mut self, key: u32, value: &str) -> u32 {
        let fp = Fingerprint::of(value);
        match self.spilled(key) {
            Some(table) => self.intern_spilled(table, key, fp, value),
            None => self.intern_in_lanes(key, fp, value),
        }
    }

    /// The table of `key`'s values, if they went to one (see [`Lanes::spilled`]).
    #[inline]
    fn spilled(&self, key: u32) -> Option<u32> {
        self.small.get(key as usize).and_then(|s| s.spilled)
    }

    /// [`Interner::intern_kv`] of a key whose values are in its lanes (or none yet).
    #[inline]
    fn intern_in_lanes(&mut self, key: u32, fp: Fingerprint, value: &str) -> u32 {
        match self.kv_fp(key, &fp, value) {
            Some(id) => id,
            None => self.insert_new_kv(key, fp, value),
        }
    }

    /// [`Interner::intern_kv`] of the label at `position` of a host: the pair at that position
    /// on the host before, if it is the same (a label most hosts share: three of the four of
    /// MOSN's scheme), is found by one test of its fingerprint, without a look in the key's
    /// lanes (interning was about a third of the instructions of a build of that scheme from an
    /// owned table). Pairs of a key with many values are not remembered: they seldom repeat
    /// from one host to the next.
    #[inline(always)]
    pub(super) fn intern_kv_at(&mut self, position: usize, key: u32, value: &str) -> u32 {
        let fp = Fingerprint::of(value);
        if let Some(recent) = self.recent_kvs.get(position)
            && recent.key == key
            && recent.fp.same(&fp)
            && fp.is_whole()
        {
            return recent.id;
        }
        if let Some(table) = self.spilled(key) {
            return self.intern_spilled(table, key, fp, value);
        }
        let id = self.intern_in_lanes(key, fp, value);
        remember(&mut self.recent_kvs, position, Recent { key, fp, id });
        id
    }

    /// [`Interner::intern_kv`] of a key whose values went to `table`: the value's hash made
    /// once, for the probe that looks for it and the one that enters it.
    #[inline(never)]
    fn intern_spilled(&mut self, table: u32, key: u32, fp: Fingerprint, value: &str) -> u32 {
        let (ids, values) = (&self.ids, &mut self.values[table as usize]);
        let hash = ids.hash(key, &fp, value);
        let id = ids.kv_fps.len() as u32;
        if let Some(found) = values.find(hash, |id| ids.is_value(id, &fp, value)) {
            return found;
        }
        values.insert_unique(hash, id, |id| ids.value_hash(id));
        self.ids.push(key, fp, value)
    }

    /// Interns a run of `values` of `key`, `count` of them, pushing their ids onto `kvs`.
    /// More than the lanes hold, for a key with no values yet, go to a table of their own
    /// filled at once for as long as they ascend strictly (a table's pairs as `encode` writes
    /// them), which makes them distinct: no probe per value for a match that cannot be there
    /// (each read the fingerprint of every id whose tag matched, at random in 1.6 MB for 100k
    /// values). From the first value out of order on, each is probed for as usual. Checked
    /// here, on values just read, rather than in a pass of its own over the table's bytes
    /// beforehand (~4% of a build of 100k values).
    pub(super) fn intern_run<'v>(
        &mut self,
        key: u32,
        mut values: impl Iterator<Item = &'v str>,
        count: usize,
        kvs: &mut Vec<u32>,
    ) {
        let small = &self.small[key as usize];
        if count <= SMALL || small.len > 0 || small.spilled.is_some() {
            kvs.extend(values.map(|value| self.intern_kv(key, value)));
            return;
        }
        let first = self.ids.kv_fps.len() as u32;
        let mut table = Values::with_capacity(count);
        let mut entries = table.start_fill(first, count, |id| self.ids.value_hash(id));
        let mut last: &[u8] = &[];
        let mut unordered = None;
        for value in values.by_ref() {
            if !entries.is_empty() && !before(last, value.as_bytes()) {
                unordered = Some(value);
                break;
            }
            last = value.as_bytes();
            let fp = Fingerprint::of(value);
            let hash = self.ids.hash(key, &fp, value);
            let id = self.ids.push(key, fp, value);
            entries.push(table.entry(hash, id));
            kvs.push(id);
        }
        table.finish_fill(entries);
        self.small[key as usize].spilled = Some(self.values.len() as u32);
        self.values.push(table);
        let rest = unordered.into_iter().chain(values);
        kvs.extend(rest.map(|value| self.intern_kv(key, value)));
    }

    /// Interns a key=value that [`Interner::kv_fp`] did not find, of a key whose values are
    /// in its lanes: moved to a table of their own when the lanes are full.
    #[inline(never)]
    fn insert_new_kv(&mut self, key: u32, fp: Fingerprint, value: &str) -> u32 {
        // A spilled key's values go through `intern_spilled`: spilling again would drop its
        // table.
        debug_assert!(self.small[key as usize].spilled.is_none());
        let id = self.ids.push(key, fp, value);
        if !self.small[key as usize].push(fp, id) {
            let table = self.spill(key);
            self.insert_value(table, id);
        }
        id
    }

    /// Moves the values of `key` from its lanes to a table of their own; returns its index.
    fn spill(&mut self, key: u32) -> u32 {
        let moved = core::mem::take(&mut self.small[key as usize]);
        let table = self.values.len() as u32;
        self.small[key as usize].spilled = Some(table);
        // The build's room goes to the first key to spill (a key unique per host spills
        // within its first hosts): a table each would hold the host count per key at once.
        self.values
            .push(Values::with_capacity(core::mem::take(&mut self.expected)));
        moved
            .iter()
            .for_each(|(_, id)| self.insert_value(table, id));
        table
    }

    fn insert_value(&mut self, table: u32, id: u32) {
        let (ids, values) = (&self.ids, &mut self.values[table as usize]);
        values.insert_unique(ids.value_hash(id), id, |id| ids.value_hash(id));
    }

    /// Room for `n` more key=value ids.
    pub(super) fn reserve_kvs(&mut self, n: usize) {
        self.ids.reserve(n);
    }

    /// A build is about to intern the labels of `hosts` hosts.
    pub(super) fn expect_hosts(&mut self, hosts: usize) {
        self.expected = hosts;
    }

    /// Ends a build: gives back the slack of the buffers grown by interning, and the room
    /// made for values that did not come (a key with a few more values than the lanes hold).
    pub(super) fn shrink_to_fit(&mut self) {
        self.expected = 0;
        self.ids.shrink_to_fit();
        let ids = &self.ids;
        for values in &mut self.values {
            values.shrink_to_fit(|id| ids.value_hash(id));
        }
    }

    /// The key of a key=value id.
    pub(super) fn kv_key(&self, kv: u32) -> u32 {
        self.ids.kv_keys[kv as usize]
    }

    /// Number of key=value ids.
    pub(super) fn kv_count(&self) -> usize {
        self.ids.kv_fps.len()
    }

    /// Heap bytes held, for the memory figures.
    pub(super) fn heap_bytes(&self) -> usize {
        let values: usize = self.values.iter().map(Values::heap_bytes).sum();
        self.ids.heap_bytes()
            + self.keys.capacity() * size_of::<(Fingerprint, Span)>()
            + self.small.capacity() * size_of::<Lanes>()
            + self.key_table.allocation_size()
            + self.values.capacity() * size_of::<Values>()
            + values
            + self.recent.capacity() * 4
            + self.recent_kvs.capacity() * size_of::<Recent>()
            + (self.order_known.capacity() + self.order_less.capacity()) * 8
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::collections::HashMap;
    use std::format;
    use std::string::String;
    use std::vec::Vec;

    use proptest::prelude::*;

    use super::*;

    /// Strings that share fingerprints (longer than 15 bytes, same ends) or are near misses.
    fn word() -> impl Strategy<Value = String> {
        let short = prop::sample::select(&["", "a", "b", "ab", "zone", "zone1", "v1.0.0"][..]);
        let long = (0..4u8).prop_map(|i| format!("0123456789-abcdef-{i}-0123456789"));
        prop_oneof![short.prop_map(String::from), long, "[a-c]{0,17}"]
    }

    proptest! {
        /// Lookups give the ids interning gave, across the scanned and hashed paths: keys past
        /// [`FEW_KEYS`], values past [`SMALL`], long strings sharing their fingerprints.
        #[test]
        fn lookups_agree_with_a_map(
            pairs in prop::collection::vec((word(), word()), 0..60),
            probes in prop::collection::vec((word(), word()), 0..40),
        ) {
            let mut interner = Interner::default();
            let (mut keys, mut kvs) = (HashMap::new(), HashMap::new());
            for (k, v) in &pairs {
                let key = interner.intern_key(k);
                prop_assert_eq!(*keys.entry(k.clone()).or_insert(key), key);
                let kv = interner.intern_kv(key, v);
                prop_assert_eq!(*kvs.entry((k.clone(), v.clone())).or_insert(kv), kv);
                prop_assert_eq!(interner.kv_key(kv), key);
            }
            // Requests set some of the keys: those are looked for first at their positions.
            let request_keys = keys.values().copied().filter(|id| id % 3 != 1);
            interner.expect_request_keys(request_keys);
            for (k, v) in pairs.iter().chain(&probes) {
                let expected = keys
                    .get(k)
                    .map(|&key| (key, kvs.get(&(k.clone(), v.clone())).copied().unwrap_or(UNKNOWN_VALUE)));
                for position in 0..FEW_KEYS + 2 {
                    let found = interner.pair_at(position, k, v);
                    prop_assert_eq!(found, expected, "{:?}={:?} at {}", k, v, position);
                }
            }
        }
    }

    proptest! {
        /// Interning by label position, which remembers each position's last pair, gives the
        /// ids interning anywhere gives: hosts of a few labels from a small alphabet, so that
        /// positions repeat their pairs, change them, and see long values that share their
        /// fingerprints, and keys past [`SMALL`] values.
        #[test]
        fn interning_at_positions_agrees_with_a_map(
            hosts in prop::collection::vec(
                prop::collection::vec((0..3u8, word()), 0..4), 0..40),
        ) {
            let mut interner = Interner::default();
            let mut kvs = HashMap::new();
            for labels in &hosts {
                for (position, (k, v)) in labels.iter().enumerate() {
                    let key = interner.intern_key(&format!("k{k}"));
                    let kv = interner.intern_kv_at(position, key, v);
                    prop_assert_eq!(*kvs.entry((key, v.clone())).or_insert(kv), kv);
                    prop_assert_eq!(interner.kv_key(kv), key);
                    prop_assert_eq!(interner.kv(key, v), Some(kv));
                }
            }
        }
    }

    /// The remembered order of key pairs is the order of their texts, asked once or again,
    /// past the 64 ids remembered too.
    #[test]
    fn key_order_is_the_order_of_the_texts() {
        let mut interner = Interner::default();
        let names: Vec<String> = (0..70u32)
            .map(|i| format!("k{}", i.wrapping_mul(37) % 101))
            .collect();
        let ids: Vec<u32> = names.iter().map(|n| interner.intern_key(n)).collect();
        for _ in 0..2 {
            for (a, na) in ids.iter().zip(&names) {
                for (b, nb) in ids.iter().zip(&names) {
                    assert_eq!(interner.key_precedes(*a, *b), na < nb, "{na} {nb}");
                }
            }
        }
    }

    /// The keys tried first at each position of a request are the request keys in the order
    /// of their texts, whatever order interned them; other keys are still found.
    #[test]
    fn requests_in_text_order_find_keys_at_their_positions() {
        let mut interner = Interner::default();
        let names = [
            "zone",
            "mosn_aig",
            "mosn_version",
            "mosn_env",
            "a",
            "b",
            "c",
            "d",
            "0",
        ];
        let ids: Vec<u32> = names.iter().map(|n| interner.intern_key(n)).collect();
        // A label key no request sets, sorting first.
        let other = interner.intern_key("+");
        interner.expect_request_keys(ids.iter().chain(&ids).copied());
        let mut sorted: Vec<(&str, u32)> = names.iter().copied().zip(ids).collect();
        sorted.sort_unstable();
        let hinted: Vec<u32> = interner.in_text_order.iter().map(|(_, id)| id).collect();
        let expected: Vec<u32> = sorted.iter().take(SMALL).map(|&(_, id)| id).collect();
        assert_eq!(hinted, expected);
        for (position, &(name, id)) in sorted.iter().enumerate() {
            assert_eq!(
                interner.pair_at(position, name, "v"),
                Some((id, UNKNOWN_VALUE))
            );
            assert_eq!(
                interner.pair_at(position, "+", "v"),
                Some((other, UNKNOWN_VALUE))
            );
        }
    }

    /// Values interned as distinct runs get ids in order and are found as values interned
    /// one at a time are: a run that ascends throughout, and one that stops ascending partway
    /// (from there it is probed for value by value). A key that has values already (the
    /// configuration's) takes its run one value at a time, so a value it had keeps its id.
    #[test]
    fn distinct_runs_are_found_as_single_values() {
        let mut interner = Interner::default();
        let (few, many, known) = (
            interner.intern_key("few"),
            interner.intern_key("many"),
            interner.intern_key("known"),
        );
        let configured = interner.intern_kv(known, "v3");
        let values: Vec<String> = (0..3 * SMALL)
            .map(|i| match i % 3 {
                0 => format!("host-{i}"),
                _ => format!("01234567-{i:03}-abcdefg"),
            })
            .collect();
        // Ascending, apart from a value out of place halfway: the table is filled at once up
        // to it.
        let mut values = values;
        values.sort_unstable();
        values.swap(SMALL, SMALL + 3);
        let mut kvs = Vec::new();
        let few_values = values[..SMALL].iter().map(String::as_str);
        interner.intern_run(few, few_values, SMALL, &mut kvs);
        interner.intern_run(
            many,
            values.iter().map(String::as_str),
            values.len(),
            &mut kvs,
        );
        let known_values: Vec<String> = (1..=2 * SMALL).map(|i| format!("v{i}")).collect();
        let run = known_values.iter().map(String::as_str);
        interner.intern_run(known, run, known_values.len(), &mut kvs);
        assert_eq!(interner.small[few as usize].spilled, None);
        assert!(interner.small[many as usize].spilled.is_some());
        // Ids in order, from the first id after the configuration's.
        let n = SMALL + values.len();
        assert!(
            kvs[..n]
                .iter()
                .copied()
                .eq(configured + 1..=configured + n as u32)
        );
        let looked_up = values[..SMALL]
            .iter()
            .map(|v| interner.kv(few, v))
            .chain(values.iter().map(|v| interner.kv(many, v)))
            .chain(known_values.iter().map(|v| interner.kv(known, v)));
        assert!(looked_up.eq(kvs.iter().map(|&kv| Some(kv))));
        assert_eq!(interner.kv(known, "v3"), Some(configured));
        assert_eq!(interner.kv(many, "host-1"), None);
        // Values of the spilled run are still interned one at a time after it.
        assert_eq!(interner.intern_kv(many, &values[4]), kvs[SMALL + 4]);
        // A run that ascends throughout: every value found, by the table filled at once.
        let whole = interner.intern_key("whole");
        let mut sorted = values.clone();
        sorted.sort_unstable();
        let (mut ids, next) = (Vec::new(), interner.kv_count() as u32);
        interner.intern_run(
            whole,
            sorted.iter().map(String::as_str),
            sorted.len(),
            &mut ids,
        );
        assert!(ids.iter().copied().eq(next..next + sorted.len() as u32));
        assert!(
            sorted
                .iter()
                .map(|v| interner.kv(whole, v))
                .eq(ids.iter().map(|&id| Some(id)))
        );
        assert_eq!(interner.kv(whole, "host-new"), None);
        let new = interner.intern_kv(many, "host-new");
        assert_eq!(interner.kv(many, "host-new"), Some(new));
    }

    #[test]
    fn many_keys_and_values_spill_to_the_tables() {
        let mut interner = Interner::default();
        let keys: Vec<u32> = (0..3 * FEW_KEYS)
            .map(|i| interner.intern_key(&format!("key{i}")))
            .collect();
        // Long values of one fingerprint (same first 8 and last 7 bytes) beside short ones.
        let value = |j: usize| match j % 2 {
            0 => format!("value-{j}"),
            _ => format!("01234567-{j:03}-abcdefg"),
        };
        for (i, &key) in keys.iter().enumerate() {
            for j in 0..i {
                interner.intern_kv(key, &value(j));
            }
        }
        for (i, &key) in keys.iter().enumerate() {
            let name = format!("key{i}");
            assert_eq!(interner.key_fp(&Fingerprint::of(&name), &name), Some(key));
            assert_eq!(interner.small[key as usize].spilled.is_some(), i > SMALL);
            for j in 0..i {
                let kv = interner.kv(key, &value(j)).unwrap();
                assert_eq!(interner.kv_key(kv), key);
                assert_eq!(interner.intern_kv(key, &value(j)), kv);
            }
            assert_eq!(interner.kv(key, &value(i)), None);
            assert_eq!(interner.kv(key, &value(i + 1)), None);
        }
        assert_eq!(interner.key_fp(&Fingerprint::of("key"), "key"), None);
    }
}
