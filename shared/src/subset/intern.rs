//! String interning: label keys and key=value pairs become dense ids, looked up by `&str`
//! without allocating (requests set metadata from raw header strings).
//!
//! Tables have few keys and, for most keys, few values (zones, versions): those are found by
//! comparing a handful of short strings, which beats hashing them (a general string hash costs
//! more than the comparisons it saves). A key with many values (one unique per host) switches
//! to a hash table of its values. Building interns the labels of every host in key order, so
//! the key at each label position of the previous host is tried first.

use alloc::{boxed::Box, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// Most values a key keeps in its list; beyond, its values go to the hash table.
const SMALL: usize = 8;

/// Most keys looked up by scanning; beyond, by the hash table.
const FEW_KEYS: usize = 8;

/// Interned label keys and key=value pairs.
#[derive(Debug, Default)]
pub(super) struct Interner {
    state: FixedState,
    keys: Vec<Box<str>>,
    key_table: HashTable<u32>,
    /// Per key id: its key=value ids while it has at most [`SMALL`] values, else `None`.
    small: Vec<Option<Vec<u32>>>,
    /// Per key=value id: its key and its value.
    kvs: Vec<(u32, Box<str>)>,
    /// Key=value ids of the keys with many values, by key id and value.
    kv_table: HashTable<u32>,
    /// Key id seen at each label position of the last host interned.
    recent: Vec<u32>,
}

impl Interner {
    fn key_hash(&self, key: &str) -> u64 {
        self.state.hash_one(key)
    }

    fn kv_hash(&self, key: u32, value: &str) -> u64 {
        self.state.hash_one((key, value))
    }

    /// The id of `key`, if interned.
    pub(super) fn key(&self, key: &str) -> Option<u32> {
        let keys = &self.keys;
        if keys.len() <= FEW_KEYS {
            return keys.iter().position(|k| **k == *key).map(|i| i as u32);
        }
        self.key_table
            .find(self.key_hash(key), |&id| &*keys[id as usize] == key)
            .copied()
    }

    /// The id of `key`, interning it if new.
    pub(super) fn intern_key(&mut self, key: &str) -> u32 {
        if let Some(id) = self.key(key) {
            return id;
        }
        let id = self.keys.len() as u32;
        let hash = self.key_hash(key);
        self.keys.push(key.into());
        self.small.push(Some(Vec::new()));
        let (state, keys) = (&self.state, &self.keys);
        self.key_table
            .insert_unique(hash, id, |&id| state.hash_one(&*keys[id as usize]));
        id
    }

    /// The id of `key`, the `position`-th label key of a host, interning it if new.
    pub(super) fn intern_key_at(&mut self, position: usize, key: &str) -> u32 {
        if let Some(&id) = self.recent.get(position)
            && *self.keys[id as usize] == *key
        {
            return id;
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
        let kvs = &self.kvs;
        if let Some(Some(small)) = self.small.get(key as usize) {
            return small
                .iter()
                .copied()
                .find(|&id| *kvs[id as usize].1 == *value);
        }
        self.kv_table
            .find(self.kv_hash(key, value), |&id| {
                let (k, v) = &kvs[id as usize];
                *k == key && **v == *value
            })
            .copied()
    }

    /// The key id and key=value id of a request's pair given as strings: `None` if the key is
    /// unknown, `Some((key, None))` if no host has the value.
    pub(super) fn pair(&self, key: &str, value: &str) -> Option<(u32, Option<u32>)> {
        let k = self.key(key)?;
        Some((k, self.kv(k, value)))
    }

    /// The id of `key`=`value`, interning it if new.
    pub(super) fn intern_kv(&mut self, key: u32, value: &str) -> u32 {
        if let Some(id) = self.kv(key, value) {
            return id;
        }
        let id = self.kvs.len() as u32;
        self.kvs.push((key, value.into()));
        let slot = &mut self.small[key as usize];
        match slot {
            Some(small) if small.len() < SMALL => small.push(id),
            Some(small) => {
                let moved = core::mem::take(small);
                *slot = None;
                moved
                    .into_iter()
                    .chain([id])
                    .for_each(|id| self.insert_kv(id));
            }
            None => self.insert_kv(id),
        }
        id
    }

    fn insert_kv(&mut self, id: u32) {
        let (state, kvs) = (&self.state, &self.kvs);
        let hash = |id: &u32| {
            let (k, v) = &kvs[*id as usize];
            state.hash_one((*k, &**v))
        };
        self.kv_table.insert_unique(hash(&id), id, hash);
    }

    /// The key of a key=value id.
    pub(super) fn kv_key(&self, kv: u32) -> u32 {
        self.kvs[kv as usize].0
    }

    /// Number of key=value ids.
    pub(super) fn kv_count(&self) -> usize {
        self.kvs.len()
    }

    /// Heap bytes held, for the memory figures.
    pub(super) fn heap_bytes(&self) -> usize {
        let strings: usize = self.keys.iter().map(|k| k.len()).sum::<usize>()
            + self.kvs.iter().map(|(_, v)| v.len()).sum::<usize>();
        let small: usize = self.small.iter().flatten().map(|s| s.capacity() * 4).sum();
        strings
            + small
            + self.keys.capacity() * size_of::<Box<str>>()
            + self.small.capacity() * size_of::<Option<Vec<u32>>>()
            + self.kvs.capacity() * size_of::<(u32, Box<str>)>()
            + (self.key_table.capacity() + self.kv_table.capacity()) * 5
    }
}
