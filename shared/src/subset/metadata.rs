//! A request's subset metadata: up to [`METADATA_CAPACITY`] interned key=value pairs, kept
//! sorted by key, in a fixed array (no allocation per request).

use super::names::Names;

/// Most key=value pairs one [`Metadata`] holds.
pub const METADATA_CAPACITY: usize = crate::hosttable::MAX_SELECTOR_KEYS;

/// Value id of a known key whose value no host has: it matches no subset.
pub(super) const UNKNOWN_VALUE: u32 = u32::MAX;

/// A key no selector, host or fallback knows was set. Lookups that ignore extra keys
/// (`allow_redundant_keys`) drop the mark with the key.
const UNKNOWN_KEY: u8 = 1;

/// A pair beyond the capacity was dropped. Kept even where extra keys are ignored: the pair
/// lost may have been one of the selector's keys (cut to the others, a request for
/// `version=v2` went to a zone's `v1` hosts).
const OVERFLOW: u8 = 2;

/// The metadata of one request, made by [`SubsetLb::metadata`](crate::SubsetLb::metadata) and
/// filled with [`SubsetLb::set`](crate::SubsetLb::set).
///
/// Pairs are interned against the load balancer that made it; use it with that one only (a
/// rebuilt load balancer interns anew).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metadata {
    len: u8,
    /// [`UNKNOWN_KEY`] and [`OVERFLOW`]: either makes the metadata match no subset. One byte,
    /// tested once per lookup.
    marks: u8,
    /// (key id, key=value id or [`UNKNOWN_VALUE`]), sorted by key id.
    pairs: [(u32, u32); METADATA_CAPACITY],
}

impl Metadata {
    /// Number of pairs held (foreign keys not counted).
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// Whether no pair was set.
    pub fn is_empty(&self) -> bool {
        self.len == 0 && !self.has_foreign_key()
    }

    /// Whether a key was set that matches nothing (unknown, or beyond the capacity).
    pub fn has_foreign_key(&self) -> bool {
        self.marks != 0
    }

    /// The key=value ids, in key order: a subset's key.
    pub(super) fn kvs(&self) -> ([u32; METADATA_CAPACITY], usize) {
        let mut kvs = [0; METADATA_CAPACITY];
        for (slot, &(_, kv)) in kvs.iter_mut().zip(self.pairs()) {
            *slot = kv;
        }
        (kvs, self.len())
    }

    pub(super) fn pairs(&self) -> &[(u32, u32)] {
        &self.pairs[..self.len()]
    }

    /// Sets `key` to `value` by name.
    pub(super) fn put_str(&mut self, names: &Names, key: &str, value: &str) {
        match names.key(key) {
            None => self.set_foreign(),
            Some(k) => self.put_ids(k, names.kv(k, value).unwrap_or(UNKNOWN_VALUE)),
        }
    }

    /// Records a key that matches nothing.
    pub(super) fn set_foreign(&mut self) {
        self.marks |= UNKNOWN_KEY;
    }

    /// Sets key `k` to `kv`, replacing an earlier value of `k`.
    #[inline]
    pub(super) fn put_ids(&mut self, k: u32, kv: u32) {
        let len = self.len();
        // Requests usually set their keys in one order: then each pair goes last, with one
        // test of the last key and of the room left.
        let after_last = len.checked_sub(1).is_none_or(|last| self.pairs[last].0 < k);
        if after_last && len < METADATA_CAPACITY {
            self.pairs[len] = (k, kv);
            self.len += 1;
            return;
        }
        self.put_among(k, kv);
    }

    /// [`Metadata::put_ids`] of a pair that does not go last: a key set before, one that
    /// sorts before another, or a pair past the capacity.
    #[inline(never)]
    fn put_among(&mut self, k: u32, kv: u32) {
        let len = self.len();
        let at = self.pairs[..len].partition_point(|&(key, _)| key < k);
        if at < len && self.pairs[at].0 == k {
            self.pairs[at].1 = kv;
            return;
        }
        if len == METADATA_CAPACITY {
            self.marks |= OVERFLOW;
            return;
        }
        // By hand: the pair or two a request sets out of key order move cheaper than a call
        // to `memmove`.
        // a request set out of key id order moves (and for nothing, on the usual append).
        for i in (at..len).rev() {
            self.pairs[i + 1] = self.pairs[i];
        }
        self.pairs[at] = (k, kv);
        self.len += 1;
    }

    /// The pairs whose keys are in `keys` (sorted), without the mark of unknown keys (but
    /// with that of a pair dropped).
    pub(super) fn only(&self, keys: &[u32]) -> Metadata {
        let mut out = Metadata {
            marks: self.marks & OVERFLOW,
            ..Metadata::default()
        };
        for &(k, kv) in self.pairs() {
            if keys.binary_search(&k).is_ok() {
                out.pairs[out.len()] = (k, kv);
                out.len += 1;
            }
        }
        out
    }

    /// Whether every key of `keys` (sorted) is set.
    pub(super) fn has_keys(&self, keys: &[u32]) -> bool {
        let pairs = self.pairs();
        keys.iter()
            .all(|k| pairs.binary_search_by_key(k, |&(key, _)| key).is_ok())
    }
}
