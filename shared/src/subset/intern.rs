//! String interning: label keys and key=value pairs become dense ids, looked up by `&str`
//! without allocating (requests set metadata from raw header strings).
//!
//! Tables have few keys and, for most keys, few values (zones, versions): those are found by
//! comparing [`Fingerprint`]s, a few integers inline, which beats hashing them (a general
//! string hash costs more than the comparisons it saves) and calling `memcmp` per candidate.
//! A key with many values (one unique per host) switches to a hash table of its values. The
//! strings live in one buffer (no allocation per interned string). Building interns the
//! labels of every host in key order, so the key at each label position of the previous host
//! is tried first.

use alloc::{string::String, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use super::fingerprint::Fingerprint;

/// Most values a key keeps in its list; beyond, its values go to the hash table.
const SMALL: usize = 8;

/// Most keys looked up by scanning; beyond, by the hash table.
const FEW_KEYS: usize = 8;

/// Where an interned string lies in the text buffer.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    len: u32,
    /// For a key=value, its key id; unused for a key.
    key: u32,
}

/// Interned label keys and key=value pairs.
#[derive(Debug, Default)]
pub(super) struct Interner {
    state: FixedState,
    /// Every interned key and value, back to back.
    text: String,
    keys: Vec<(Fingerprint, Span)>,
    key_table: HashTable<u32>,
    /// Per key id: its key=value ids while it has at most [`SMALL`] values, else `None`.
    small: Vec<Option<Vec<(Fingerprint, u32)>>>,
    /// Per key=value id: its key and its value.
    kvs: Vec<Span>,
    /// Key=value ids of the keys with many values, by key id and value, each with the high
    /// half of its hash: growing the table rehashes from that, without reading the strings.
    kv_table: HashTable<(u32, u32)>,
    /// Key id seen at each label position of the last host interned.
    recent: Vec<u32>,
}

impl Interner {
    fn str(&self, span: Span) -> &str {
        &self.text[span.start..span.start + span.len as usize]
    }

    fn push_str(&mut self, s: &str, key: u32) -> Span {
        let span = Span {
            start: self.text.len(),
            len: s.len() as u32,
            key,
        };
        self.text.push_str(s);
        span
    }

    fn hash(&self, seed: u32, fp: &Fingerprint, s: &str) -> u64 {
        match fp.is_whole() {
            true => fp.hash(u64::from(seed)),
            false => self.state.hash_one((seed, s)),
        }
    }

    /// The id of `key`, if interned.
    pub(super) fn key(&self, key: &str) -> Option<u32> {
        self.key_fp(&Fingerprint::of(key), key)
    }

    fn key_fp(&self, fp: &Fingerprint, key: &str) -> Option<u32> {
        let same = |(stored, span): &(Fingerprint, Span)| {
            *stored == *fp && (fp.is_whole() || self.str(*span) == key)
        };
        if self.keys.len() <= FEW_KEYS {
            // A plain loop: this runs per request pair, and is short enough to inline.
            for (id, entry) in self.keys.iter().enumerate() {
                if same(entry) {
                    return Some(id as u32);
                }
            }
            return None;
        }
        let hash = self.hash(u32::MAX, fp, key);
        let found = self
            .key_table
            .find(hash, |&id| same(&self.keys[id as usize]));
        found.copied()
    }

    /// The id of `key`, interning it if new.
    pub(super) fn intern_key(&mut self, key: &str) -> u32 {
        let fp = Fingerprint::of(key);
        if let Some(id) = self.key_fp(&fp, key) {
            return id;
        }
        let id = self.keys.len() as u32;
        let span = self.push_str(key, 0);
        self.keys.push((fp, span));
        self.small.push(Some(Vec::new()));
        let hash = self.hash(u32::MAX, &fp, key);
        // Out of `self` while it grows: its rehash reads the keys.
        let mut table = core::mem::take(&mut self.key_table);
        let this = &*self;
        table.insert_unique(hash, id, |&id| {
            let (fp, span) = &this.keys[id as usize];
            this.hash(u32::MAX, fp, this.str(*span))
        });
        self.key_table = table;
        id
    }

    /// The id of `key`, the `position`-th label key of a host, interning it if new.
    pub(super) fn intern_key_at(&mut self, position: usize, key: &str) -> u32 {
        if let Some(&id) = self.recent.get(position) {
            let (stored, span) = &self.keys[id as usize];
            let fp = Fingerprint::of(key);
            if *stored == fp && (fp.is_whole() || self.str(*span) == key) {
                return id;
            }
        }
        let id = self.intern_key(key);
        if position < self.recent.len() {
            self.recent[position] = id;
        } else if position == self.recent.len() {
            self.recent.push(id);
        }
        id
    }

    /// The id of `key`=`value`, if interned.
    pub(super) fn kv(&self, key: u32, value: &str) -> Option<u32> {
        self.kv_fp(key, &Fingerprint::of(value), value)
    }

    fn kv_fp(&self, key: u32, fp: &Fingerprint, value: &str) -> Option<u32> {
        if let Some(Some(small)) = self.small.get(key as usize) {
            for &(stored, id) in small {
                if stored == *fp && (fp.is_whole() || self.str(self.kvs[id as usize]) == value) {
                    return Some(id);
                }
            }
            return None;
        }
        let h = half(self.hash(key, fp, value));
        self.kv_table
            .find(spread(h), |&(id, stored)| {
                let span = self.kvs[id as usize];
                stored == h && span.key == key && self.str(span) == value
            })
            .map(|&(id, _)| id)
    }

    /// The key id and key=value id of a request's pair given as strings: `None` if the key is
    /// unknown, `Some((key, None))` if no host has the value.
    pub(super) fn pair(&self, key: &str, value: &str) -> Option<(u32, Option<u32>)> {
        let k = self.key(key)?;
        Some((k, self.kv(k, value)))
    }

    /// The id of `key`=`value`, interning it if new.
    pub(super) fn intern_kv(&mut self, key: u32, value: &str) -> u32 {
        let fp = Fingerprint::of(value);
        if let Some(id) = self.kv_fp(key, &fp, value) {
            return id;
        }
        let id = self.kvs.len() as u32;
        let span = self.push_str(value, key);
        self.kvs.push(span);
        let slot = &mut self.small[key as usize];
        match slot {
            Some(small) if small.len() < SMALL => small.push((fp, id)),
            Some(small) => {
                let moved = core::mem::take(small);
                *slot = None;
                moved
                    .into_iter()
                    .map(|(_, id)| id)
                    .chain([id])
                    .for_each(|id| self.insert_kv(id));
            }
            None => self.insert_kv(id),
        }
        id
    }

    fn insert_kv(&mut self, id: u32) {
        let span = self.kvs[id as usize];
        let value = self.str(span);
        let h = half(self.hash(span.key, &Fingerprint::of(value), value));
        self.kv_table
            .insert_unique(spread(h), (id, h), |&(_, h)| spread(h));
    }

    /// The key of a key=value id.
    pub(super) fn kv_key(&self, kv: u32) -> u32 {
        self.kvs[kv as usize].key
    }

    /// Number of key=value ids.
    pub(super) fn kv_count(&self) -> usize {
        self.kvs.len()
    }

    /// Heap bytes held, for the memory figures.
    pub(super) fn heap_bytes(&self) -> usize {
        let small: usize = self
            .small
            .iter()
            .flatten()
            .map(|s| s.capacity() * size_of::<(Fingerprint, u32)>())
            .sum();
        self.text.capacity()
            + small
            + self.keys.capacity() * size_of::<(Fingerprint, Span)>()
            + self.small.capacity() * size_of::<Option<Vec<(Fingerprint, u32)>>>()
            + self.kvs.capacity() * size_of::<Span>()
            + self.key_table.capacity() * 5
            + self.kv_table.capacity() * 9
            + self.recent.capacity() * 4
    }
}

fn half(hash: u64) -> u32 {
    (hash >> 32) as u32
}

/// A table hash from a stored half: the multiply carries its bits up to the tag bits hashbrown
/// reads from the top.
fn spread(half: u32) -> u64 {
    u64::from(half).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}
