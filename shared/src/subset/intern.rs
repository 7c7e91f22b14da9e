//! String interning: label keys and key=value pairs become dense ids, looked up by `&str`
//! without allocating (requests set metadata from raw header strings).

use alloc::{boxed::Box, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

/// Interned label keys and key=value pairs.
#[derive(Debug, Default)]
pub(super) struct Interner {
    state: FixedState,
    keys: Vec<Box<str>>,
    key_table: HashTable<u32>,
    /// Per key=value id: its key and its value.
    kvs: Vec<(u32, Box<str>)>,
    kv_table: HashTable<u32>,
    /// The same ids by key and value strings: a request's pair in one probe.
    pair_table: HashTable<u32>,
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
        let (state, keys) = (&self.state, &self.keys);
        self.key_table
            .insert_unique(hash, id, |&id| state.hash_one(&*keys[id as usize]));
        id
    }

    /// The id of `key`=`value`, if interned.
    pub(super) fn kv(&self, key: u32, value: &str) -> Option<u32> {
        let kvs = &self.kvs;
        self.kv_table
            .find(self.kv_hash(key, value), |&id| {
                let (k, v) = &kvs[id as usize];
                *k == key && &**v == value
            })
            .copied()
    }

    /// The id of `key`=`value` given as strings, if interned.
    pub(super) fn pair(&self, key: &str, value: &str) -> Option<u32> {
        let (keys, kvs) = (&self.keys, &self.kvs);
        let hash = self.state.hash_one((key, value));
        self.pair_table
            .find(hash, |&id| {
                let (k, v) = &kvs[id as usize];
                **v == *value && *keys[*k as usize] == *key
            })
            .copied()
    }

    /// The id of `key`=`value`, interning it if new.
    pub(super) fn intern_kv(&mut self, key: u32, value: &str) -> u32 {
        if let Some(id) = self.kv(key, value) {
            return id;
        }
        let id = self.kvs.len() as u32;
        let hash = self.kv_hash(key, value);
        self.kvs.push((key, value.into()));
        let (state, kvs, keys) = (&self.state, &self.kvs, &self.keys);
        self.kv_table.insert_unique(hash, id, |&id| {
            let (k, v) = &kvs[id as usize];
            state.hash_one((*k, &**v))
        });
        let pair = |id: &u32| {
            let (k, v) = &kvs[*id as usize];
            state.hash_one((&*keys[*k as usize], &**v))
        };
        self.pair_table.insert_unique(pair(&id), id, pair);
        id
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
        strings
            + self.keys.capacity() * size_of::<Box<str>>()
            + self.kvs.capacity() * size_of::<(u32, Box<str>)>()
            + (self.key_table.capacity() + self.kv_table.capacity() + self.pair_table.capacity())
                * 5
    }
}
