//! Building the index of a table: one pass over the hosts interns their labels and fills a
//! bitmap of hosts per key=value (the postings, kept only while building); then each
//! selector's subsets are the non-empty intersections of one value bitmap per key, found
//! depth-first over the selector's keys. Where a key has more values than the hosts left to
//! split (a key nearly unique per host), the hosts are grouped by their values instead of
//! intersecting every value's bitmap.

use alloc::{boxed::Box, vec::Vec};

use roaring::RoaringBitmap;

use super::metadata::Metadata;
use super::names::{Names, TextMap};
use super::pick::HostSet;
use super::subsets::Subsets;
use super::{IdMap, Options, Selector, Slot, SubsetError, SubsetLb, SubsetStats, request_keys};
use crate::hosttable::{list_items, shown};
use crate::{HostTable, HostTableError, MAX_WEIGHT, SelectorFallback, SubsetConfig};

pub(super) fn build(table: &HostTable) -> Result<SubsetLb, SubsetError> {
    let config = &table.subset;
    let mut lb = SubsetLb {
        version: table.version,
        serial: request_keys::serial(),
        options: options(config),
        names: Names::default(),
        selectors: Vec::new(),
        selector_of: IdMap::default(),
        subsets: Subsets::default(),
        any: HostSet::default(),
        default: None,
        metadata_fallbacks: Vec::new(),
        slots: Vec::with_capacity(table.hosts.len()),
        by_address: TextMap::default(),
        free_slots: Vec::new(),
        weighted_hosts: 0,
        stats: SubsetStats::default(),
    };
    lb.intern_config(config);
    let mut postings = Vec::new();
    for (index, host) in table.hosts.iter().enumerate() {
        // What the index relies on, checked even in a table validated before: weights it
        // divides by, addresses it finds hosts by, the subsets lists make.
        if let Some(&first) = lb.by_address.get(host.address.as_str()) {
            let address = shown(&host.address);
            let first = first as usize;
            return Err(HostTableError::DuplicateAddress {
                first,
                index,
                address,
            }
            .into());
        }
        if host.weight == 0 {
            return Err(HostTableError::ZeroWeight { index }.into());
        }
        if host.weight > MAX_WEIGHT {
            let weight = host.weight;
            return Err(HostTableError::WeightTooLarge { index, weight }.into());
        }
        lb.lists_allow(index, host)?;
        let slot = lb.slots.len() as u32;
        let kvs = lb.intern_labels(host.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        postings.resize_with(lb.names.kv_count(), RoaringBitmap::new);
        for &kv in &kvs {
            // Slots ascend: each one appends.
            postings[kv as usize].insert(slot);
        }
        lb.by_address.insert(host.address.as_str().into(), slot);
        lb.weighted_hosts += usize::from(host.weight != 1);
        lb.slots.push(Slot {
            address: host.address.as_str().into(),
            kvs,
            weight: host.weight,
            healthy: host.healthy,
            alive: true,
            generation: 0,
            active: 0,
        });
    }
    let all = RoaringBitmap::from_sorted_iter(0..lb.slots.len() as u32).unwrap_or_default();
    lb.any = HostSet::new(all.clone(), &lb.slots, false);
    for s in 0..lb.selectors.len() {
        let keys = lb.selectors[s].keys.clone();
        // Selectors repeating another's keys add no subsets.
        if lb.selector_of.get(&keys) != Some(&(s as u8)) {
            continue;
        }
        let mut kvs = Vec::with_capacity(keys.len());
        lb.split(&postings, s, &keys, &all, &mut kvs);
    }
    if let Some((kvs, _)) = &lb.default {
        let mut members = all.clone();
        for &kv in kvs.iter() {
            match postings.get(kv as usize) {
                Some(hosts) => members &= hosts,
                None => members.clear(),
            }
        }
        let kvs = kvs.clone();
        lb.default = Some((kvs, HostSet::new(members, &lb.slots, false)));
    }
    Ok(lb)
}

fn options(config: &SubsetConfig) -> Options {
    Options {
        fallback_policy: config.fallback_policy,
        panic_mode_any: config.panic_mode_any,
        list_as_any: config.list_as_any,
        allow_redundant_keys: config.allow_redundant_keys,
        policy: config.child_policy,
        panic_threshold: config.panic_threshold,
    }
}

impl SubsetLb {
    /// Interns the keys and values the configuration names: selectors, the default subset and
    /// the metadata fallbacks, so that metadata naming them is known before any host has them.
    fn intern_config(&mut self, config: &SubsetConfig) {
        for selector in &config.selectors {
            let keys = self.intern_keys(&selector.keys);
            let keys_subset = match selector.fallback_policy {
                SelectorFallback::KeysSubset => self.intern_keys(&selector.fallback_keys_subset),
                _ => Box::default(),
            };
            // The first of selectors with the same keys decides, as in Envoy's trie.
            let index = self.selectors.len() as u8;
            self.selector_of.entry(keys.clone()).or_insert(index);
            self.selectors.push(Selector {
                keys,
                fallback: selector.fallback_policy,
                keys_subset,
                single: selector.single_host_per_subset,
                on_unhealthy: selector.fallback_on_unhealthy,
            });
        }
        if !config.default_subset.is_empty() {
            let pairs = config.default_subset.iter();
            let mut kvs: Vec<(u32, u32)> = pairs.map(|(k, v)| self.intern_pair(k, v)).collect();
            kvs.sort_unstable();
            let kvs = kvs.into_iter().map(|(_, kv)| kv).collect();
            self.default = Some((kvs, HostSet::default()));
        }
        for fallback in &config.metadata_fallbacks {
            let mut md = Metadata::default();
            for (k, v) in fallback {
                let (k, kv) = self.intern_pair(k, v);
                md.put_ids(k, kv);
            }
            self.metadata_fallbacks.push(md);
        }
    }

    fn intern_keys(&mut self, keys: &[alloc::string::String]) -> Box<[u32]> {
        let mut ids: Vec<u32> = keys.iter().map(|k| self.names.intern_key(k)).collect();
        ids.sort_unstable();
        ids.dedup();
        ids.into_boxed_slice()
    }

    fn intern_pair(&mut self, key: &str, value: &str) -> (u32, u32) {
        let k = self.names.intern_key(key);
        (k, self.names.intern_kv(k, value))
    }

    /// Interns a host's labels: their key=value ids, one per list item with `list_as_any`.
    pub(super) fn intern_labels<'a>(
        &mut self,
        labels: impl Iterator<Item = (&'a str, &'a str)>,
    ) -> Box<[u32]> {
        let mut kvs = Vec::new();
        for (key, value) in labels {
            let k = self.names.intern_key(key);
            match self.options.list_as_any {
                true => {
                    for item in list_items(value) {
                        kvs.push(self.names.intern_kv(k, item));
                    }
                }
                false => kvs.push(self.names.intern_kv(k, value)),
            }
        }
        kvs.sort_unstable();
        kvs.dedup();
        kvs.into_boxed_slice()
    }

    /// Adds the subsets of selector `s` below `kvs` (values of the keys before `keys`) among
    /// `candidates`, which carry every pair of `kvs`.
    fn split(
        &mut self,
        postings: &[RoaringBitmap],
        s: usize,
        keys: &[u32],
        candidates: &RoaringBitmap,
        kvs: &mut Vec<u32>,
    ) {
        let Some((&key, rest)) = keys.split_first() else {
            let single = self.selectors[s].single;
            if single {
                self.stats.single_host_collisions += candidates.len().saturating_sub(1);
            }
            self.subsets
                .insert(kvs, candidates.clone(), &self.slots, single);
            self.stats.subsets_created += 1;
            self.stats.subsets_active += 1;
            return;
        };
        for (kv, members) in self.by_value(postings, key, candidates) {
            kvs.push(kv);
            self.split(postings, s, rest, &members, kvs);
            kvs.pop();
        }
    }

    /// The hosts of `candidates` by their value of `key`, each value with at least one host.
    fn by_value(
        &self,
        postings: &[RoaringBitmap],
        key: u32,
        candidates: &RoaringBitmap,
    ) -> Vec<(u32, RoaringBitmap)> {
        if self.names.value_count(key) as u64 <= candidates.len() {
            let values = self.names.values_of(key);
            let hosts = |kv: u32| postings.get(kv as usize).map(|p| candidates & p);
            let split = values.map(|kv| (kv, hosts(kv).unwrap_or_default()));
            return split.filter(|(_, members)| !members.is_empty()).collect();
        }
        // Fewer hosts than values: group the hosts, not the values.
        let mut groups: IdMap<u32, RoaringBitmap> = IdMap::default();
        for slot in candidates {
            let kvs = self.slots[slot as usize].kvs.iter();
            for &kv in kvs.filter(|&&kv| self.names.kv_key(kv) == key) {
                groups.entry(kv).or_default().insert(slot);
            }
        }
        groups.into_iter().collect()
    }
}
