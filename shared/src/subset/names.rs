//! Label keys and key=value pairs as dense ids: the index and request metadata compare ids,
//! never strings. Ids are never reused while a load balancer lives (updates only add), so
//! metadata and resolved request keys stay valid across updates.

use alloc::{boxed::Box, vec::Vec};

use foldhash::fast::FixedState;
use hashbrown::HashMap;

/// Maps keyed by label text: the text comes from the host table, which the operator writes,
/// so a fixed hasher is no flooding risk; requests only look up.
pub(super) type TextMap<V> = HashMap<Box<str>, V, FixedState>;

#[derive(Debug, Default)]
pub(super) struct Names {
    keys: TextMap<u32>,
    key_text: Vec<Box<str>>,
    /// Per key id: value text to key=value id.
    values: Vec<TextMap<u32>>,
    /// Per key=value id: its key id, and its position among its key's values.
    kv_key: Vec<u32>,
    kv_index: Vec<u32>,
    /// Per key id: its key=value ids, by position.
    key_values: Vec<Vec<u32>>,
}

impl Names {
    pub(super) fn key(&self, key: &str) -> Option<u32> {
        self.keys.get(key).copied()
    }

    pub(super) fn intern_key(&mut self, key: &str) -> u32 {
        if let Some(&id) = self.keys.get(key) {
            return id;
        }
        let id = self.key_text.len() as u32;
        self.keys.insert(key.into(), id);
        self.key_text.push(key.into());
        self.values.push(TextMap::default());
        self.key_values.push(Vec::new());
        id
    }

    /// The id of `key`=`value`, if some host, selector or fallback named it.
    pub(super) fn kv(&self, key: u32, value: &str) -> Option<u32> {
        self.values.get(key as usize)?.get(value).copied()
    }

    pub(super) fn intern_kv(&mut self, key: u32, value: &str) -> u32 {
        if let Some(id) = self.kv(key, value) {
            return id;
        }
        let id = self.kv_key.len() as u32;
        self.values[key as usize].insert(value.into(), id);
        self.kv_key.push(key);
        let values = &mut self.key_values[key as usize];
        self.kv_index.push(values.len() as u32);
        values.push(id);
        id
    }

    pub(super) fn kv_key(&self, kv: u32) -> u32 {
        self.kv_key[kv as usize]
    }

    pub(super) fn key_text(&self, key: u32) -> &str {
        &self.key_text[key as usize]
    }

    /// The key=value ids of `key`, by position.
    pub(super) fn values_of(&self, key: u32) -> &[u32] {
        &self.key_values[key as usize]
    }

    /// The position of key=value `kv` among its key's values.
    pub(super) fn kv_index(&self, kv: u32) -> u32 {
        self.kv_index[kv as usize]
    }

    pub(super) fn key_count(&self) -> usize {
        self.key_text.len()
    }
}
