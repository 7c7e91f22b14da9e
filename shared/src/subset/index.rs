//! Building the index of a table's archive: one pass over the hosts checks them and maps their
//! labels to ids (each distinct label interned once, as the archive lists it once); then, per
//! selector, one pass over the hosts puts each in the group of its values, in host order, so
//! each group becomes its subset's bitmap as it stands. A selector whose value combinations
//! are few enough to count (the product of its keys' value counts) groups in an array indexed
//! by that combination; others, and hosts listing several values (`list_as_any`), in a map.

use alloc::{boxed::Box, vec::Vec};

use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use roaring::RoaringBitmap;

use super::metadata::Metadata;
use super::names::Names;
use super::pick::HostSet;
use super::subsets::Subsets;
use super::{IdMap, Options, Selector, Slot, SubsetError, SubsetLb, SubsetStats, request_keys};
use crate::hosttable::wire::Checked;
use crate::hosttable::{duplicate, list_items, validate_config, validate_count, validate_host};
use crate::{HostTableError, MAX_WEIGHT, SelectorFallback, SubsetConfig};

/// Builds the index of a table's archive; if `validate`, checks it on the way, in the order of
/// [`HostTable::validate`](crate::HostTable::validate) (one pass over the hosts, not two).
pub(super) fn build(table: Checked<'_>, validate: bool) -> Result<SubsetLb, SubsetError> {
    let (config, hosts) = (&table.config, table.hosts);
    if validate {
        validate_config(config)?;
        validate_count(hosts.len())?;
    }
    let mut lb = SubsetLb {
        version: table.version,
        serial: request_keys::serial(),
        options: options(config),
        names: Names::default(),
        selectors: Vec::new(),
        on_unhealthy: config.selectors.iter().any(|s| s.fallback_on_unhealthy),
        selector_of: IdMap::default(),
        subsets: Subsets::default(),
        any: HostSet::default(),
        default: None,
        metadata_fallbacks: Vec::new(),
        slots: Vec::with_capacity(hosts.len()),
        addresses: HashTable::with_capacity(hosts.len()),
        hasher: FixedState::default(),
        free_slots: Vec::new(),
        weighted_hosts: 0,
        stats: SubsetStats::default(),
    };
    lb.intern_config(config);
    // Each label's key=value ids, interned when a host first names it.
    let mut label_kvs: Vec<Option<Box<[u32]>>> = alloc::vec![None; table.labels.len()];
    let mut kvs = Vec::new();
    for (index, host) in hosts.iter().enumerate() {
        if validate {
            validate_host(index, &table.view(host))?;
        }
        // What the index relies on, checked even in a table validated before: weights it
        // divides by, addresses it finds hosts by, the subsets lists make.
        let (address, weight) = (host.address(), host.weight());
        let hash = lb.hasher.hash_one(address);
        if let Some(first) = lb.find_hashed(hash, address) {
            return Err(duplicate(first as usize, index, address).into());
        }
        if weight == 0 {
            return Err(HostTableError::ZeroWeight { index }.into());
        }
        if weight > MAX_WEIGHT {
            return Err(HostTableError::WeightTooLarge { index, weight }.into());
        }
        let label = |p: usize| (table.labels[p].key(), table.labels[p].value());
        lb.lists_allow(index, host.labels().map(label))?;
        kvs.clear();
        for p in host.labels() {
            let label = &table.labels[p];
            let ids = label_kvs[p].get_or_insert_with(|| {
                lb.intern_labels([(label.key(), label.value())].into_iter())
            });
            kvs.extend_from_slice(ids);
        }
        kvs.sort_unstable();
        kvs.dedup();
        let slot = lb.slots.len() as u32;
        lb.weighted_hosts += usize::from(weight != 1);
        lb.slots.push(Slot {
            address: address.into(),
            kvs: kvs.as_slice().into(),
            weight,
            healthy: host.healthy(),
            alive: true,
            generation: 0,
            active: 0,
        });
        lb.index_address_hashed(hash, slot);
    }
    let unhealthy = lb.slots.iter().enumerate().filter(|(_, s)| !s.healthy);
    let unhealthy: RoaringBitmap = unhealthy.map(|(slot, _)| slot as u32).collect();
    let mut all = RoaringBitmap::new();
    all.insert_range(0..lb.slots.len() as u32);
    let healthy = &all - &unhealthy;
    lb.any = HostSet::with_healthy(all, healthy, &lb.slots, false);
    let values = Values::of(&lb);
    for s in 0..lb.selectors.len() {
        // Selectors repeating another's keys add no subsets.
        if lb.selector_of.get(&lb.selectors[s].keys) == Some(&(s as u8)) {
            lb.group(s, &values, &unhealthy);
        }
    }
    if let Some((kvs, _)) = &lb.default {
        let carries = |slot: &Slot| kvs.iter().all(|kv| slot.kvs.binary_search(kv).is_ok());
        let members = (0..lb.slots.len() as u32).filter(|&s| carries(&lb.slots[s as usize]));
        let members = bitmap(&members.collect::<Vec<u32>>());
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

    /// Adds the subsets of selector `s`.
    fn group(&mut self, s: usize, values: &Values, unhealthy: &RoaringBitmap) {
        let keys = &self.selectors[s].keys;
        let radices: Vec<u64> = keys
            .iter()
            .map(|&k| self.names.values_of(k).len() as u64)
            .collect();
        let combinations = radices.iter().try_fold(1u64, |n, &r| n.checked_mul(r));
        let dense = combinations.filter(|&n| n <= 4 * self.slots.len() as u64 + 64);
        let groups: Vec<(Box<[u32]>, Vec<u32>)> = match dense {
            Some(n) if !self.options.list_as_any => {
                self.group_dense(values, keys, &radices, n as usize)
            }
            _ => self.group_sparse(s),
        };
        let single = self.selectors[s].single;
        for (kvs, members) in groups {
            self.add_subset(&kvs, &members, unhealthy, single);
        }
    }

    fn add_subset(
        &mut self,
        kvs: &[u32],
        members: &[u32],
        unhealthy: &RoaringBitmap,
        single: bool,
    ) {
        let members = bitmap(members);
        if single {
            self.stats.single_host_collisions += members.len().saturating_sub(1);
        }
        self.subsets
            .insert(kvs, members, unhealthy, &self.slots, single);
        self.stats.subsets_created += 1;
        self.stats.subsets_active += 1;
    }

    /// Groups by the combination's position among all `combinations` (mixed radix), in a
    /// counting sort: each group's hosts end up together, in slot order.
    fn group_dense(
        &self,
        values: &Values,
        keys: &[u32],
        radices: &[u64],
        combinations: usize,
    ) -> Vec<(Box<[u32]>, Vec<u32>)> {
        let columns: Vec<usize> = keys.iter().map(|&k| values.column[k as usize]).collect();
        // Each host's combination, `combinations` for a host missing a key.
        let at: Vec<u32> = values
            .rows()
            .map(|row| {
                let mut at = 0u64;
                for (&column, &radix) in columns.iter().zip(radices) {
                    match row[column] {
                        NONE => return combinations as u32,
                        index => at = at * radix + u64::from(index),
                    }
                }
                at as u32
            })
            .collect();
        let mut starts = alloc::vec![0u32; combinations + 2];
        at.iter().for_each(|&a| starts[a as usize + 1] += 1);
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut sorted = alloc::vec![0u32; at.len()];
        let mut next = starts.clone();
        for (slot, &a) in at.iter().enumerate() {
            sorted[next[a as usize] as usize] = slot as u32;
            next[a as usize] += 1;
        }
        let kvs_at = |mut at: u64| {
            let mut kvs = alloc::vec![0; keys.len()];
            for (i, (&key, &radix)) in keys.iter().zip(radices).enumerate().rev() {
                kvs[i] = self.names.values_of(key)[(at % radix) as usize];
                at /= radix;
            }
            kvs.into_boxed_slice()
        };
        (0..combinations)
            .filter(|&c| starts[c] < starts[c + 1])
            .map(|c| {
                let members = &sorted[starts[c] as usize..starts[c + 1] as usize];
                (kvs_at(c as u64), members.to_vec())
            })
            .collect()
    }

    /// Groups in a map by the combinations each host has (several with `list_as_any`).
    fn group_sparse(&self, s: usize) -> Vec<(Box<[u32]>, Vec<u32>)> {
        let mut groups: IdMap<Box<[u32]>, Vec<u32>> = IdMap::default();
        for (slot, host) in self.slots.iter().enumerate() {
            for (selector, kvs) in self.memberships(&host.kvs) {
                if selector == s {
                    groups.entry(kvs).or_default().push(slot as u32);
                }
            }
        }
        groups.into_iter().collect()
    }
}

/// The bitmap of `members` (ascending): inserted one by one when they are few, else loaded
/// from a bitmap of bytes, which roaring takes a container (2^16 slots) at a time.
fn bitmap(members: &[u32]) -> RoaringBitmap {
    let (Some(&last), false) = (members.last(), members.len() < 256) else {
        return RoaringBitmap::from_sorted_iter(members.iter().copied()).unwrap_or_default();
    };
    let mut bytes = alloc::vec![0u8; last as usize / 8 + 1];
    for &m in members {
        bytes[m as usize / 8] |= 1 << (m % 8);
    }
    RoaringBitmap::from_lsb0_bytes(0, &bytes)
}

/// A host without the key.
const NONE: u32 = u32::MAX;

/// Each host's value of each selector key, as its position among the key's values: what the
/// grouping reads, host by host, instead of searching each host's labels per selector.
struct Values {
    /// Per key id, its column (keys no selector has share a column nobody reads).
    column: Vec<usize>,
    width: usize,
    /// Per host, per column, the value's position, or [`NONE`].
    cells: Vec<u32>,
}

impl Values {
    fn of(lb: &SubsetLb) -> Values {
        let mut column = alloc::vec![0; lb.names.key_count()];
        let mut width = 1;
        for selector in &lb.selectors {
            for &key in selector.keys.iter() {
                if column[key as usize] == 0 {
                    column[key as usize] = width;
                    width += 1;
                }
            }
        }
        let mut cells = alloc::vec![NONE; lb.slots.len() * width];
        for (row, host) in cells.chunks_exact_mut(width).zip(&lb.slots) {
            for &kv in host.kvs.iter() {
                row[column[lb.names.kv_key(kv) as usize]] = lb.names.kv_index(kv);
            }
            row[0] = NONE;
        }
        Values {
            column,
            width,
            cells,
        }
    }

    fn rows(&self) -> impl Iterator<Item = &[u32]> {
        self.cells.chunks_exact(self.width)
    }
}
