//! Building the index from a host table: interning, one pass to the inverted index, then a
//! depth-first walk of the selectors' key trie that intersects as it goes.

use alloc::{borrow::Cow, boxed::Box, collections::BTreeMap, string::String, vec, vec::Vec};
use core::hash::BuildHasher;
use core::ops::ControlFlow;

use foldhash::fast::FixedState;
use hashbrown::HashTable;

use super::addresses::Addresses;
use super::intern::Interner;
use super::pickset::{Child, Members, PickSet, SetRef};
use super::records::Records;
use super::slot::Slot;
use super::subsets::Subsets;
use super::table::Table;
use super::{Metadata, Options, Selector, SubsetLb, SubsetStats, keys_hash};
use crate::hosttable::list_items;
use crate::hosttable::{
    Dictionary, HostView, MAX_HOSTS, check_list_subsets, host_fits_but_labels, label_fits,
    scan_addresses, validate_config, weight_fits,
};
use crate::origin::Scanned;
use crate::{Host, SubsetConfig};

mod chain;
#[cfg(test)]
mod tests;

use chain::{Chains, Plan};

/// A host list becomes a bitset over all slots when it has at least one slot in `DENSE` (then
/// the bitset is no larger than the list): bitsets intersect a word (64 slots) at a time, while
/// short lists (a key unique per host) intersect faster by filtering.
const DENSE: usize = 32;

/// What the build checks of each host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Checks {
    /// Every rule of [`HostTable::validate`](crate::HostTable::validate).
    All,
    /// What the index relies on: weights (unique addresses are checked either way).
    IndexOnly,
}

/// The index of a table, or `Err` if the table breaks a rule of [`HostTable::validate`] that
/// `checks` covers (the caller asks it which one: errors are rare, and this pass stays lean).
///
/// [`HostTable::validate`]: crate::HostTable::validate
pub(super) fn build<H: HostView>(
    version: u64,
    hosts: &[H],
    config: &SubsetConfig,
    checks: Checks,
) -> Result<SubsetLb, ()> {
    let (text, labels) = hosts.iter().fold((0, 0), |(t, l), h| {
        (t + h.address().len(), l + h.label_count())
    });
    let mut lb = SubsetLb::started(version, config, hosts.len(), text, labels)?;
    lb.interner.expect_hosts(hosts.len());
    // Labels (and an archive's label order) are checked as `record` interns them, not in a
    // walk of their own: visiting an archived host's labels was a fifth of a build from bytes.
    let scanned = match checks {
        Checks::All => scan_addresses(hosts.iter().map(H::address)),
        Checks::IndexOnly => Scanned::default(),
    };
    let (lists, mut counts) = (lb.options.list_as_any, Vec::new());
    for host in hosts {
        let valid = match checks {
            Checks::All => host_fits_but_labels(host, scanned.plain),
            Checks::IndexOnly => weight_fits(host.weight()),
        };
        if !valid {
            return Err(());
        }
        let s = lb.push_slot_only(host.weight(), host.healthy());
        if !lb.record(s, host) && checks == Checks::All || lists && !lb.lists_fit(s, &mut counts) {
            return Err(());
        }
    }
    lb.finish(uniform(hosts), scanned.order(), None)
}

/// The index of the columns of a table's bytes, or `Err` if the table breaks a rule of
/// [`HostTable::validate`]. Each key and pair is checked and interned once; the hosts are
/// checked, given slots and recorded column by column (a pass over their weights, one over
/// their labels...), not host by host.
///
/// [`HostTable::validate`]: crate::HostTable::validate
pub(super) fn build_columns(
    dictionary: Dictionary<'_>,
    config: &SubsetConfig,
) -> Result<SubsetLb, ()> {
    let n = dictionary.len();
    let (text, labels) = (dictionary.address_bytes(), dictionary.label_count());
    let mut lb = SubsetLb::started(dictionary.version(), config, n, text, labels)?;
    let pairs = Pairs::new(&mut lb, &dictionary);
    // A pair that does not fit is a host's label, or the labels are refused (`label_ids`).
    let Some(scanned) = dictionary.hosts_fit_but_labels().filter(|_| pairs.fit) else {
        return Err(());
    };
    lb.push_slots(dictionary.slots());
    // Addresses in one copy, not one per host.
    let text = lb.records.push_text(dictionary.all_addresses());
    let counts = if lb.options.list_as_any {
        let columns = dictionary.check_labels().map_err(drop)?;
        let mut counts = Vec::new();
        for (s, host) in columns.hosts().enumerate() {
            let at = text + host.address_at;
            let kvs = lb.records.start_at(s as u32, at, host.address().len());
            pairs.extend(kvs, host.labels);
            lb.records.seal(s as u32, true);
            if !lb.lists_fit(s as u32, &mut counts) {
                return Err(());
            }
        }
        None
    } else {
        // One id per pair: a label's id is its pair's.
        let (ends, label_ends) = (dictionary.address_ends(), dictionary.label_ends());
        let count = lb.interner.kv_count();
        let mut prefill = Prefill::new(count, n, dictionary.label_count());
        let counts = match &mut prefill {
            Some(bits) => {
                let set = |host: usize, kv: u32| bits.set(host, kv);
                let ids = |kvs: &mut Vec<u32>| dictionary.label_ids(&pairs.kvs, count, kvs, set);
                lb.records.push_all(text, ends, label_ends, ids)
            }
            None => {
                let none = |_, _| {};
                let ids = |kvs: &mut Vec<u32>| dictionary.label_ids(&pairs.kvs, count, kvs, none);
                lb.records.push_all(text, ends, label_ends, ids)
            }
        };
        let counts = counts.map_err(drop)?;
        Some(Counted { counts, prefill })
    };
    lb.finish(dictionary.uniform(), scanned.order(), counts)
}

/// What a build from bytes learnt of the ids while it read the labels.
struct Counted {
    /// Each id's count at `[id + 1]`, as
    /// [`Dictionary::label_ids`](crate::hosttable::Dictionary::label_ids) gives them.
    counts: Vec<u32>,
    prefill: Option<Prefill>,
}

/// A bitset over the hosts per id, its bits set as the labels are read: an id of a few values
/// a key is dense (see [`DENSE`]), and then the index needs no pass of its own over the
/// records' ids and spans to set its bits (4 MB reread at 100k hosts of 4 keys x 3 values).
/// Made only when it is small, at most the size of the labels' ids.
struct Prefill {
    words: usize,
    bits: Vec<u64>,
}

impl Prefill {
    fn new(ids: usize, hosts: usize, labels: usize) -> Option<Prefill> {
        let words = hosts.div_ceil(64);
        // Halved, not doubled: `n * 2` overflows a 32-bit `usize` (Wasm) at 2^31.
        let small = ids.checked_mul(words).is_some_and(|n| n <= labels / 2);
        (small && hosts >= 64).then(|| Prefill {
            words,
            bits: vec![0; ids * words],
        })
    }

    /// Sets host `host`'s bit in the bitset of `kv`.
    #[inline]
    fn set(&mut self, host: usize, kv: u32) {
        self.bits[kv as usize * self.words + host / 64] |= 1 << (host % 64);
    }
}

/// The key=value ids of a table's pairs, by position: one per pair, or with `list_as_any`
/// one per item of its value.
struct Pairs {
    /// With `list_as_any`, pair `p`'s ids are `kvs[starts[p]..starts[p + 1]]`; else empty, and
    /// pair `p`'s id is `kvs[p]`.
    starts: Vec<u32>,
    kvs: Vec<u32>,
    /// Whether every pair passes [`label_fits`].
    fit: bool,
}

impl Pairs {
    fn new(lb: &mut SubsetLb, columns: &Dictionary<'_>) -> Pairs {
        let (interner, list_as_any) = (&mut lb.interner, lb.options.list_as_any);
        let keys: Vec<(u32, &str)> = columns
            .keys()
            .map(|k| (interner.intern_key(k), k))
            .collect();
        // Room made at once: grown by doubling, these and the interner's ids were copied
        // about their final size over (~4% of a build of 100k distinct values).
        let count = columns.pair_count();
        let mut pairs = Pairs {
            starts: Vec::new(),
            kvs: Vec::with_capacity(count),
            fit: true,
        };
        interner.expect_hosts(count.min(columns.len()));
        interner.reserve_kvs(count);
        if list_as_any {
            pairs.intern_items(interner, columns, &keys);
        } else {
            pairs.intern_runs(interner, columns, &keys);
        }
        pairs
    }

    /// Interns the pairs a key's run at a time ([`Columns::key_runs`]): as `encode` writes
    /// them, each key's values lie together and ascend, and [`Interner::intern_run`] interns
    /// those of a key with many without a probe each. Any order works, though: a key whose
    /// pairs lie apart, or values that repeat, take the usual probe.
    fn intern_runs(
        &mut self,
        interner: &mut Interner,
        columns: &Dictionary<'_>,
        keys: &[(u32, &str)],
    ) {
        let mut values = columns.values();
        for (key, count) in columns.key_runs() {
            let (id, text) = keys[key];
            let fit = &mut self.fit;
            let run = values.by_ref().take(count);
            let run = run.inspect(|value| *fit &= label_fits(text, value));
            interner.intern_run(id, run, count, &mut self.kvs);
        }
    }

    /// Interns each item of each pair's value, as `list_as_any` wants.
    fn intern_items(
        &mut self,
        interner: &mut Interner,
        columns: &Dictionary<'_>,
        keys: &[(u32, &str)],
    ) {
        self.starts.reserve_exact(columns.pair_count() + 1);
        self.starts.push(0);
        for (key, value) in columns.pairs() {
            let (id, text) = keys[key];
            self.fit &= label_fits(text, value);
            let items = list_items(value).map(|item| interner.intern_kv(id, item));
            self.kvs.extend(items);
            self.starts.push(self.kvs.len() as u32);
        }
    }

    /// Pushes the key=value ids of the pairs at positions `labels` onto `kvs`.
    fn extend(&self, kvs: &mut Vec<u32>, labels: &[rkyv::Archived<u32>]) {
        for p in labels {
            let p = p.to_native() as usize;
            let (a, b) = (self.starts[p] as usize, self.starts[p + 1] as usize);
            kvs.extend_from_slice(&self.kvs[a..b]);
        }
    }
}

impl SubsetLb {
    /// An empty load balancer with the configuration interned and room for `hosts` hosts of
    /// `text` address bytes and about `labels` labels; `Err` for too many hosts or an invalid
    /// configuration.
    fn started(
        version: u64,
        config: &SubsetConfig,
        hosts: usize,
        text: usize,
        labels: usize,
    ) -> Result<SubsetLb, ()> {
        if hosts > MAX_HOSTS || validate_config(config).is_err() {
            return Err(());
        }
        let mut lb = SubsetLb::configured(version, config);
        // Room for the first changes as well (the daemon's deltas change up to ~3% of the
        // hosts): grown from exactly full, the records' buffers were copied whole at the first
        // host added, 3.5 ms at 100k hosts.
        let room = |n: usize| n + n / 32 + 16;
        lb.slots.reserve_exact(room(hosts));
        lb.records.reserve(room(hosts), room(text), room(labels));
        Ok(lb)
    }

    /// The index of the hosts recorded: addresses claimed, subsets made by the walk of the
    /// selectors' trie, the default subset; `Err` if two hosts share an address. `uniform` is
    /// the weight of every host when all are healthy and weigh the same; `ascending`, whether
    /// the addresses ascend strictly in slot order, if known; `counted`, the ids' counts (and
    /// maybe their bits), if the caller has them.
    fn finish(
        mut self,
        uniform: Option<u32>,
        ascending: Option<bool>,
        counted: Option<Counted>,
    ) -> Result<SubsetLb, ()> {
        if !self.records.fits() {
            return Err(());
        }
        // A pass of its own over the records, once they are all made (see `Addresses::claim`).
        let slots = self.slots.len() as u32;
        let Some(addresses) = Addresses::claim(&self.records, slots, ascending) else {
            return Err(());
        };
        self.addresses = addresses;
        let trie = Trie::new(&self.selectors);
        let lone = self.lone_keys(&trie);
        let mut index = Index::new(&self, counted, &lone);
        self.place_direct(core::mem::take(&mut index.direct), &lone);
        self.reserve_subsets(&index);
        let plan = Plan::new(&self.selectors, self.options.list_as_any);
        let mut walk = Walk {
            chains: Chains::new(plan),
            lb: &mut self,
            index: &index,
            trie: &trie,
            path: Vec::new(),
            dedup: HashTable::new(),
            uniform,
        };
        for &root in &trie.roots {
            walk.node(root, None, Made::default());
        }
        self.subset_table.settle();
        self.build_default(&index);
        // The buffers grew by doubling; a table is built once and kept.
        self.sets.shrink_to_fit();
        self.chains.shrink_to_fit();
        self.interner.shrink_to_fit();
        self.subset_table.shrink_to_fit();
        self.subsets.shrink_to_fit();
        Ok(self)
    }
}

impl SubsetLb {
    /// An empty load balancer with the configuration interned.
    fn configured(version: u64, config: &SubsetConfig) -> SubsetLb {
        let mut lb = SubsetLb {
            version,
            serial: super::request_keys::serial(),
            options: Options {
                fallback_policy: config.fallback_policy,
                panic_mode_any: config.panic_mode_any,
                list_as_any: config.list_as_any,
                allow_redundant_keys: config.allow_redundant_keys,
                child: Child {
                    policy: config.child_policy,
                    panic_threshold: config.panic_threshold,
                },
            },
            hasher: FixedState::default(),
            interner: Interner::default(),
            selectors: Vec::new(),
            selector_table: HashTable::new(),
            subsets: Subsets::default(),
            subset_table: Table::default(),
            sets: Vec::new(),
            chains: Vec::new(),
            chained: 0,
            free_sets: Vec::new(),
            any: PickSet::all(),
            default: None,
            metadata_fallbacks: Vec::new(),
            slots: Vec::new(),
            records: Records::default(),
            free_slots: Vec::new(),
            addresses: Addresses::default(),
            stats: SubsetStats::default(),
        };
        for selector in &config.selectors {
            lb.push_selector(selector);
        }
        let request_keys = lb.selectors.iter().flat_map(|s| s.keys.iter().copied());
        lb.interner.expect_request_keys(request_keys);
        let stride = lb.selectors.iter().map(|s| s.keys.len()).max();
        lb.subsets = Subsets::new(stride.unwrap_or(0));
        if !config.default_subset.is_empty() {
            let mut kvs = lb.intern_pairs(&config.default_subset);
            kvs.sort_unstable();
            lb.default = Some((kvs.into(), PickSet::default()));
        }
        for fallback in &config.metadata_fallbacks {
            let mut md = Metadata::default();
            for (k, v) in fallback {
                let key = lb.interner.intern_key(k);
                md.set_ids(key, lb.interner.intern_kv(key, v));
            }
            lb.metadata_fallbacks.push(md);
        }
        lb
    }

    fn intern_pairs(&mut self, pairs: &BTreeMap<String, String>) -> Vec<u32> {
        let interner = &mut self.interner;
        pairs
            .iter()
            .map(|(k, v)| {
                let key = interner.intern_key(k);
                interner.intern_kv(key, v)
            })
            .collect()
    }

    fn push_selector(&mut self, selector: &crate::SubsetSelector) {
        let mut ids = |keys: &[String]| -> Box<[u32]> {
            let mut ids: Vec<u32> = keys.iter().map(|k| self.interner.intern_key(k)).collect();
            ids.sort_unstable();
            ids.into()
        };
        let keys = ids(&selector.keys);
        let keys_subset = ids(&selector.fallback_keys_subset);
        let index = self.selectors.len() as u8;
        let hash = keys_hash(keys.iter().copied());
        self.selectors.push(Selector {
            keys,
            fallback: selector.fallback_policy,
            keys_subset,
            single: selector.single_host_per_subset,
        });
        let selectors = &self.selectors;
        self.selector_table.insert_unique(hash, index, |&s| {
            keys_hash(selectors[usize::from(s)].keys.iter().copied())
        });
    }

    /// Records the host's address and key=value ids (in label order, interning new ones) for
    /// slot `s`. Returns whether every label fits the length rules (see
    /// [`label_fits`]) and, in an archive, comes after the one before (as in a `BTreeMap`), for
    /// the build to check them in this walk.
    fn record<H: HostView>(&mut self, s: u32, host: &H) -> bool {
        let (interner, list_as_any) = (&mut self.interner, self.options.list_as_any);
        let kvs = self.records.start(s, host.address());
        let (mut position, mut fit) = (0, true);
        // The previous key's id: its text is in the interner (a visit lends each key for one
        // call only, and copying it cost a `memcpy` per label).
        let mut previous: Option<u32> = None;
        host.visit_labels(|k, v| {
            let key = interner.intern_key_at(position, k);
            let ordered = H::ORDERED || previous.is_none_or(|p| interner.key_precedes(p, key));
            fit &= label_fits(k, v) & ordered;
            previous = Some(key);
            if list_as_any {
                kvs.extend(list_items(v).map(|item| interner.intern_kv(key, item)));
            } else {
                kvs.push(interner.intern_kv_at(position, key, v));
            }
            position += 1;
            ControlFlow::<()>::Continue(())
        });
        // Only a list repeats a value (`a,b,a`). Nothing else needs an order: sorting by key
        // id (ids in the selectors' order, labels in the archive's) was a sort per host, ~11
        // mispredicts in MOSN's scheme, and the scan for repeats ~20 instructions a host.
        self.records.seal(s, list_as_any);
        fit
    }

    /// Whether the host of slot `s` joins few enough subsets with `list_as_any` (see
    /// [`check_list_subsets`]), by its recorded ids: distinct, each listed item one. `counts`,
    /// one per key id, is scratch: all 0 before and after.
    fn lists_fit(&self, s: u32, counts: &mut Vec<u64>) -> bool {
        let kvs = self.records.kvs(s);
        counts.resize(counts.len().max(self.interner.key_count()), 0);
        let mut most = 0;
        for &kv in kvs {
            let count = &mut counts[self.interner.kv_key(kv) as usize];
            *count += 1;
            most = most.max(*count);
        }
        // A key of one item each: a selector's product is at most 1.
        let all = if most <= 1 { 1 } else { u64::MAX };
        let selectors = self.selectors.iter().map(|s| s.keys.iter());
        let fit = check_list_subsets(s as usize, selectors, |&k| counts[k as usize], all).is_ok();
        kvs.iter()
            .for_each(|&kv| counts[self.interner.kv_key(kv) as usize] = 0);
        fit
    }

    /// Stores a host in a new slot (or a free one) and counts it among all hosts; its subsets
    /// are the caller's business. Returns the slot.
    pub(super) fn push_slot(&mut self, host: &Host) -> u32 {
        let s = self.push_slot_only(host.weight, host.healthy);
        self.record(s, host);
        self.addresses.insert(&self.records, s);
        s
    }

    /// Slots for hosts of `(weight, healthy)`, in order, in a load balancer that has none yet
    /// (a build's), counted among all hosts.
    fn push_slots(&mut self, hosts: impl Iterator<Item = (u32, bool)>) {
        debug_assert!(self.slots.is_empty());
        let slots = hosts.map(|(weight, healthy)| Slot::new(weight, healthy));
        self.slots.extend(slots);
        self.any.count_all(&self.slots);
    }

    /// Takes a new slot (or a free one) for a host and counts it among all hosts, with neither
    /// record nor address; returns the slot.
    fn push_slot_only(&mut self, weight: u32, healthy: bool) -> u32 {
        let mut slot = Slot::new(weight, healthy);
        let s = match self.free_slots.pop() {
            Some(s) => {
                slot.generation = self.slots[s as usize].generation.wrapping_add(1);
                self.slots[s as usize] = slot;
                s
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        self.any.add(s, &self.slots);
        s
    }

    /// Per key id, the selector of a key that only a one-key selector has (no other selector,
    /// nor the default subset): its values of one host are [`Direct`].
    fn lone_keys(&self, trie: &Trie) -> Vec<Option<u8>> {
        let keys = self.interner.key_count();
        let mut nodes = vec![0u32; keys];
        trie.nodes.iter().for_each(|n| nodes[n.key as usize] += 1);
        let mut lone = vec![None; keys];
        for node in trie.roots.iter().map(|&r| &trie.nodes[r]) {
            if node.children.is_empty() && nodes[node.key as usize] == 1 {
                lone[node.key as usize] = node.ends;
            }
        }
        for &kv in self.default.iter().flat_map(|(kvs, _)| kvs.iter()) {
            lone[self.interner.kv_key(kv) as usize] = None;
        }
        lone
    }

    /// Puts the subsets of the index's [`Direct`] ids in the subset table: as its array, or
    /// one at a time where the array would pass its bound.
    fn place_direct(&mut self, direct: Direct, lone: &[Option<u8>]) {
        let Direct { ids, count, sets } = direct;
        match self.subset_table.adopt_array(sets, count) {
            Ok(()) => {
                self.stats.subsets_created += count as u64;
                self.stats.subsets_active += count as u64;
            }
            Err(sets) => {
                for kv in set_bits(&ids) {
                    let key = self.interner.kv_key(kv) as usize;
                    if let Some(selector) = lone[key] {
                        self.push_subset(selector, &[kv], sets[kv as usize]);
                    }
                }
            }
        }
    }

    /// Room for the subsets the walk will make, as far as the index tells: per selector, the
    /// product of its keys' value counts, but no more than the hosts (when values combine
    /// sparsely the tables grow as they go).
    fn reserve_subsets(&mut self, index: &Index) {
        let hosts = self.slots.len();
        let per_selector = |s: &Selector| {
            s.keys
                .iter()
                .try_fold(1usize, |n, &k| n.checked_mul(index.values(k).len()))
                .map_or(hosts, |n| n.min(hosts))
        };
        // Subsets of one key go to the table's array, without a record (most of them).
        let several = self.selectors.iter().filter(|s| s.keys.len() > 1);
        let packed = several.map(per_selector).sum::<usize>().min(hosts);
        self.subsets.reserve_exact(packed);
        self.subset_table.defer(packed);
        // The array by value id: room for every id at once when one-key subsets are many (a
        // key unique per host), rather than doubling to it.
        let one = self.selectors.iter().filter(|s| s.keys.len() == 1);
        if one.map(per_selector).sum::<usize>() > hosts / 2 {
            self.subset_table.reserve_array(self.interner.kv_count());
        }
    }

    fn build_default(&mut self, index: &Index) {
        let Some((kvs, _)) = &self.default else {
            return;
        };
        let mut cand: Option<Cand<'_>> = None;
        for &kv in kvs.iter() {
            cand = Some(index.intersect(cand.as_ref(), kv));
        }
        let members = Members::owned(cand.map_or_else(Vec::new, |c| c.to_vec()));
        let set = PickSet::new(members, false, &self.slots, &self.chains);
        if let Some((_, default)) = &mut self.default {
            *default = set;
        }
    }

    /// Adds a new subset over `set`; returns its index.
    pub(super) fn push_subset(&mut self, selector: u8, kvs: &[u32], set: SetRef) -> u32 {
        let subsets = &mut self.subsets;
        let i = self
            .subset_table
            .insert(kvs, set, || subsets.push(selector, kvs));
        self.stats.subsets_created += 1;
        self.stats.subsets_active += 1;
        i
    }

    /// Stores a new pick set; returns its index.
    pub(super) fn push_set(&mut self, set: PickSet) -> u32 {
        self.chained += u32::from(set.members.is_chained());
        match self.free_sets.pop() {
            Some(i) => {
                self.sets[i as usize] = set;
                i
            }
            None => {
                self.sets.push(set);
                (self.sets.len() - 1) as u32
            }
        }
    }
}

/// [`Index::bitset_at`] of a sparse list.
const NO_BITSET: u32 = u32::MAX;

/// [`Index::place`] in `bitset_at`, for a caller that holds other fields of the index: ids
/// past the places are sparse.
fn place_in(bitset_at: &[u32], kv: u32) -> u32 {
    bitset_at.get(kv as usize).copied().unwrap_or(NO_BITSET)
}

/// The inverted index: per key=value id, the slots carrying it, as an ascending list (one flat
/// array for all) when they are few, else as a bitset over all slots.
struct Index {
    hosts: usize,
    /// Per key=value id, where its list starts in `slots` (one more at the end); a dense id's
    /// list is empty.
    starts: Vec<u32>,
    slots: Vec<u32>,
    /// Per key=value id up to the last dense one, its place in `bitsets` ([`NO_BITSET`] for
    /// a sparse list); the ids past it are sparse (see [`Index::place`]). 4 bytes a value id,
    /// where an `Option<Box<[u64]>>` each was 16 (1.6 MB written for a key unique per host at
    /// 100k hosts, none of them dense), and none for a table of no dense id, where a place
    /// each was 400 KB written for nothing (3% of such a build).
    bitset_at: Vec<u32>,
    /// The dense ids' bitsets, each of `words` words, one after the other.
    bitsets: Vec<u64>,
    words: usize,
    /// Per key id, its value ids carried by some host, but the [`Direct`] ones.
    values: Vec<Vec<u32>>,
    direct: Direct,
}

/// Ids of one host each, of keys that only a one-key selector has (a key unique per host):
/// each one's subset is its host, set in an array for the subset table as the index is filled,
/// without a list or a step of the walk: a build of 100k such values from bytes 9.5% faster
/// (68.5M instructions down to 60.7M).
#[derive(Default)]
struct Direct {
    /// Bit `kv`: `kv` is direct.
    ids: Vec<u64>,
    count: usize,
    /// Per id, its subset's set (see [`Table::empty_array`]).
    sets: Vec<SetRef>,
}

impl Direct {
    /// Marks `kv`, one of `ids` ids, direct.
    fn mark(&mut self, kv: u32, ids: usize) {
        if self.ids.is_empty() {
            self.ids = vec![0; ids.div_ceil(64)];
            self.sets = Table::empty_array(ids);
        }
        self.ids[kv as usize / 64] |= 1 << (kv % 64);
        self.count += 1;
    }

    #[inline]
    fn has(&self, kv: u32) -> bool {
        let word = self.ids.get(kv as usize / 64).copied().unwrap_or(0);
        word >> (kv % 64) & 1 == 1
    }

    /// Slot `s` carries direct id `kv`.
    #[inline]
    fn set(&mut self, kv: u32, s: u32) {
        self.sets[kv as usize] = SetRef::one(s);
    }
}

impl Index {
    /// The index of `lb`'s records; `counted`, what the caller knows of the ids; `lone`, per
    /// key id, whether its ids of one host are [`Direct`].
    fn new(lb: &SubsetLb, counted: Option<Counted>, lone: &[Option<u8>]) -> Index {
        // Each id's count, at the place its list's end will take.
        let (starts, prefill) = match counted {
            Some(c) => (c.counts, c.prefill),
            None => {
                let mut starts = vec![0u32; lb.interner.kv_count() + 1];
                for &kv in lb.records.all_kvs() {
                    starts[kv as usize + 1] += 1;
                }
                (starts, None)
            }
        };
        debug_assert_eq!(starts.len(), lb.interner.kv_count() + 1);
        let (mut index, dense) = Index::laid_out(lb, starts, lone);
        if let Some(prefill) = prefill {
            debug_assert_eq!(prefill.words, index.words);
            index.adopt(prefill.bits, dense);
            return index;
        }
        index.bitsets = vec![0; dense * index.words];
        // Dense ids are set in their bitsets straight from the records. Listing them first
        // and making each bitset from its list wrote and read back 4 bytes a label (1.6 MB for
        // the 4 keys x 3 values scheme at 100k hosts, past a core's L2 here): two thirds of
        // the index's time.
        let all_dense = dense == index.starts.len() - 1;
        match (index.bitsets.is_empty(), all_dense) {
            (true, _) => index.fill_lists(lb),
            (false, true) => index.fill_bitsets(lb),
            (false, false) => index.fill(lb),
        }
        index
    }

    /// Sets each host's slot in the lists and bitsets of its ids.
    #[inline(never)]
    fn fill(&mut self, lb: &SubsetLb) {
        let (bitset_at, words) = (&self.bitset_at, self.words);
        let fill = &mut self.starts;
        for (s, kvs) in lb.records.built_kvs() {
            for &kv in kvs {
                match place_in(bitset_at, kv) {
                    NO_BITSET if self.direct.has(kv) => self.direct.set(kv, s),
                    NO_BITSET => {
                        self.slots[fill[kv as usize] as usize] = s;
                        fill[kv as usize] += 1;
                    }
                    at => self.bitsets[at as usize * words + s as usize / 64] |= 1 << (s % 64),
                }
            }
        }
        self.filled();
    }

    /// [`Index::fill`] when every id is dense (a few values a key, as in the 4 keys x 3 values
    /// and MOSN's schemes): a label is an OR into a word found by an add, without a test or a
    /// multiply (14 instructions a label down to 10).
    #[inline(never)]
    fn fill_bitsets(&mut self, lb: &SubsetLb) {
        let words = self.words;
        let firsts: Vec<usize> = self
            .bitset_at
            .iter()
            .map(|&at| at as usize * words)
            .collect();
        for (s, kvs) in lb.records.built_kvs() {
            let (word, bit) = (s as usize / 64, 1u64 << (s % 64));
            for &kv in kvs {
                self.bitsets[firsts[kv as usize] + word] |= bit;
            }
        }
    }

    /// [`Index::fill`] when no id is dense (a key unique per host), without a test a label.
    #[inline(never)]
    fn fill_lists(&mut self, lb: &SubsetLb) {
        let fill = &mut self.starts;
        for (s, kvs) in lb.records.built_kvs() {
            for &kv in kvs {
                if self.direct.has(kv) {
                    self.direct.set(kv, s);
                    continue;
                }
                self.slots[fill[kv as usize] as usize] = s;
                fill[kv as usize] += 1;
            }
        }
        self.filled();
    }

    /// Ends a fill that moved each id's start (`starts[kv]`) to its end, one place a slot:
    /// the ends moved back to theirs, one place on (`starts[kv + 1]`). In place of a copy of
    /// the starts to fill from, 400 KB allocated and written at 100k values.
    fn filled(&mut self) {
        let ids = self.starts.len() - 1;
        self.starts.copy_within(..ids, 1);
        self.starts[0] = 0;
    }

    /// An index with room for the slots of each id, `counts[kv + 1]` of them (`counts[0]` is
    /// 0), as a list (`bitset_at` says which), and each key's values listed; no slot in it
    /// yet, and no bitset: how many ids are dense is returned beside it.
    fn laid_out(lb: &SubsetLb, mut counts: Vec<u32>, lone: &[Option<u8>]) -> (Index, usize) {
        let hosts = lb.slots.len();
        let (mut bitset_at, mut values) = (Vec::new(), Vec::<Vec<u32>>::new());
        let (ids, mut direct) = (counts.len() - 1, Direct::default());
        // The counts become where each list ends; a dense or direct id's list is empty.
        let (mut listed, mut dense) = (0, 0);
        for (kv, end) in (0u32..).zip(&mut counts[1..]) {
            if *end > 0 {
                let key = lb.interner.kv_key(kv) as usize;
                if *end == 1 && lone.get(key).is_some_and(Option::is_some) {
                    direct.mark(kv, ids);
                    *end = listed;
                    continue;
                }
                if values.len() <= key {
                    values.resize_with(key + 1, Vec::new);
                }
                values[key].push(kv);
            }
            if *end >= 64 && *end as usize * DENSE >= hosts {
                // Places up to the last dense id only (see `Index::bitset_at`).
                bitset_at.resize(kv as usize, NO_BITSET);
                bitset_at.push(dense);
                dense += 1;
            } else {
                listed += *end;
            }
            *end = listed;
        }
        let index = Index {
            hosts,
            starts: counts,
            slots: vec![0; listed as usize],
            bitset_at,
            bitsets: Vec::new(),
            words: hosts.div_ceil(64),
            values,
            direct,
        };
        (index, dense as usize)
    }

    /// The bitsets and lists from a bitset per id (see [`Prefill`]), `dense` of them dense:
    /// a dense id's bitset moves down to its place (never above its own, so a bitset is read
    /// before another is written over it), and a sparse id's slots are listed from its bits.
    fn adopt(&mut self, mut bits: Vec<u64>, dense: usize) {
        let words = self.words;
        for kv in 0..self.starts.len() - 1 {
            let at = self.place(kv as u32);
            let from = kv * words..(kv + 1) * words;
            if at != NO_BITSET {
                bits.copy_within(from, at as usize * words);
                continue;
            }
            if self.direct.has(kv as u32) {
                let s = set_bits(&bits[from]).next().unwrap_or_default();
                self.direct.set(kv as u32, s);
                continue;
            }
            let start = self.starts[kv] as usize;
            let list = &mut self.slots[start..self.starts[kv + 1] as usize];
            for (place, s) in list.iter_mut().zip(set_bits(&bits[from])) {
                *place = s;
            }
        }
        bits.truncate(dense * words);
        bits.shrink_to_fit();
        self.bitsets = bits;
    }

    /// The slots indexed: `0..hosts`.
    fn hosts(&self) -> usize {
        self.hosts
    }

    /// The slots carrying `kv`, if they are few: a dense id's list is empty.
    fn list(&self, kv: u32) -> &[u32] {
        let (a, b) = (self.starts[kv as usize], self.starts[kv as usize + 1]);
        &self.slots[a as usize..b as usize]
    }

    /// The place of `kv`'s bitset in `bitsets`, [`NO_BITSET`] if it has none.
    fn place(&self, kv: u32) -> u32 {
        place_in(&self.bitset_at, kv)
    }

    /// The bitset of the slots carrying `kv`, if they are many.
    fn bitset(&self, kv: u32) -> Option<&[u64]> {
        let at = self.place(kv);
        let at = (at != NO_BITSET).then_some(at as usize * self.words)?;
        Some(&self.bitsets[at..at + self.words])
    }

    /// Calls `f` with each slot carrying `kv`, in ascending order.
    fn each_slot(&self, kv: u32, mut f: impl FnMut(u32)) {
        match self.bitset(kv) {
            Some(bits) => set_bits(bits).for_each(f),
            None => self.list(kv).iter().for_each(|&s| f(s)),
        }
    }

    fn values(&self, key: u32) -> &[u32] {
        self.values.get(key as usize).map_or(&[], |v| &v[..])
    }

    /// `cand` (all hosts if `None`) intersected with the hosts carrying `kv`.
    fn intersect<'a>(&'a self, cand: Option<&Cand<'a>>, kv: u32) -> Cand<'a> {
        let bits = self.bitset(kv);
        let list = self.list(kv);
        // A value of one host (a key unique per host, below another key) is that host or
        // none, borrowed: no list of its own, so no allocation a host.
        if let (Some(cand), &[s]) = (cand, list) {
            return Cand::List(Cow::Borrowed(if cand.has(s) { list } else { &[] }));
        }
        match (cand, bits) {
            (None, Some(b)) => Cand::Bits(Cow::Borrowed(b)),
            (None, None) => Cand::List(Cow::Borrowed(list)),
            (Some(Cand::Bits(c)), Some(b)) => {
                Cand::Bits(c.iter().zip(b).map(|(x, y)| x & y).collect())
            }
            (Some(Cand::Bits(c)), None) => Cand::List(filter(list, c)),
            (Some(Cand::List(c)), Some(b)) => Cand::List(filter(c, b)),
            (Some(Cand::List(c)), None) => Cand::List(Cow::Owned(merge(c, list))),
        }
    }
}

/// The positions of the bits set in `bits`, ascending.
fn set_bits(bits: &[u64]) -> impl Iterator<Item = u32> + '_ {
    (0u32..).zip(bits).flat_map(|(i, &word)| {
        let mut w = word;
        core::iter::from_fn(move || {
            let bit = (w != 0).then(|| i * 64 + w.trailing_zeros())?;
            w &= w - 1;
            Some(bit)
        })
    })
}

fn has(bits: &[u64], s: u32) -> bool {
    bits[s as usize / 64] & (1 << (s % 64)) != 0
}

/// The slots of `list` in `bits`.
fn filter<'a>(list: &[u32], bits: &[u64]) -> Cow<'a, [u32]> {
    list.iter().copied().filter(|&s| has(bits, s)).collect()
}

/// Intersection of two ascending lists.
fn merge(a: &[u32], b: &[u32]) -> Vec<u32> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            core::cmp::Ordering::Less => i += 1,
            core::cmp::Ordering::Greater => j += 1,
            core::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// A set of slots during the walk: a bitset over all slots, or an ascending list.
enum Cand<'a> {
    Bits(Cow<'a, [u64]>),
    List(Cow<'a, [u32]>),
}

impl Cand<'_> {
    fn len(&self) -> usize {
        match self {
            Cand::Bits(b) => b.iter().map(|w| w.count_ones() as usize).sum(),
            Cand::List(l) => l.len(),
        }
    }

    /// The lowest slot of a set that is not empty.
    fn first(&self) -> u32 {
        let first = match self {
            Cand::Bits(b) => b
                .iter()
                .enumerate()
                .find(|(_, w)| **w != 0)
                .map(|(i, w)| (i * 64) as u32 + w.trailing_zeros()),
            Cand::List(l) => l.first().copied(),
        };
        first.unwrap_or_default()
    }

    /// The highest slot of a set that is not empty.
    fn last(&self) -> u32 {
        let last = match self {
            Cand::Bits(b) => b
                .iter()
                .enumerate()
                .rfind(|(_, w)| **w != 0)
                .map(|(i, w)| (i * 64) as u32 + 63 - w.leading_zeros()),
            Cand::List(l) => l.last().copied(),
        };
        last.unwrap_or_default()
    }

    fn has(&self, s: u32) -> bool {
        match self {
            Cand::Bits(b) => has(b, s),
            Cand::List(l) => l.binary_search(&s).is_ok(),
        }
    }

    fn to_vec(&self) -> Vec<u32> {
        match self {
            Cand::Bits(b) => {
                let count = b.iter().map(|w| w.count_ones() as usize).sum();
                let mut out = Vec::with_capacity(count);
                out.extend(set_bits(b));
                out
            }
            Cand::List(l) => l.to_vec(),
        }
    }

    /// Calls `f` with each slot, ascending.
    fn each(&self, f: impl FnMut(u32)) {
        match self {
            Cand::Bits(b) => set_bits(b).for_each(f),
            Cand::List(l) => l.iter().copied().for_each(f),
        }
    }
}

/// The selectors' sorted key lists as a trie: selectors with a common key prefix share nodes,
/// and so the intersections of that prefix.
struct Trie {
    nodes: Vec<Node>,
    roots: Vec<usize>,
}

struct Node {
    key: u32,
    children: Vec<usize>,
    /// The selector whose last key this is.
    ends: Option<u8>,
}

impl Trie {
    fn new(selectors: &[Selector]) -> Trie {
        let mut trie = Trie {
            nodes: Vec::new(),
            roots: Vec::new(),
        };
        for (i, selector) in selectors.iter().enumerate() {
            let mut level: Option<usize> = None;
            for &key in selector.keys.iter() {
                level = Some(trie.child(level, key));
            }
            if let Some(last) = level {
                trie.nodes[last].ends = Some(i as u8);
            }
        }
        trie
    }

    /// The child of `parent` (a root if `None`) for `key`, made if new.
    fn child(&mut self, parent: Option<usize>, key: u32) -> usize {
        let siblings = match parent {
            Some(p) => &self.nodes[p].children,
            None => &self.roots,
        };
        if let Some(&n) = siblings.iter().find(|&&n| self.nodes[n].key == key) {
            return n;
        }
        let n = self.nodes.len();
        self.nodes.push(Node {
            key,
            children: Vec::new(),
            ends: None,
        });
        match parent {
            Some(p) => self.nodes[p].children.push(n),
            None => self.roots.push(n),
        }
        n
    }
}

/// The depth-first walk making the subsets.
struct Walk<'w> {
    lb: &'w mut SubsetLb,
    chains: Chains,
    index: &'w Index,
    trie: &'w Trie,
    /// Value ids from the root to the current node.
    path: Vec<u32>,
    /// Sets made so far, with the hash of their kind, size, lowest and highest slot, so that
    /// identical subsets share one.
    dedup: HashTable<(u64, u32)>,
    /// The weight of every host, if all are healthy and weigh the same.
    uniform: Option<u32>,
}

/// A node's candidates: how many, and the sets made of exactly them so far (not single host,
/// single host).
#[derive(Debug, Clone, Copy, Default)]
struct Made {
    len: usize,
    sets: [Option<SetRef>; 2],
}

impl<'w> Walk<'w> {
    fn node(&mut self, n: usize, cand: Option<&Cand<'w>>, made: Made) {
        let node = &self.trie.nodes[n];
        // A selector of one key with nothing below it: each value's subset is its list, and
        // a value of one host (a key unique per host) is that host's subset, made here
        // without the general step (~150 instructions a value).
        let leaf = match (cand, node.ends) {
            (None, Some(selector)) if node.children.is_empty() => Some(selector),
            _ => None,
        };
        let all = self.index.values(node.key);
        let among;
        let values = match cand {
            Some(cand) if made.len < all.len() => {
                among = self.values_among(cand, node.key);
                &among[..]
            }
            _ => all,
        };
        for &kv in values {
            if let (Some(selector), &[s]) = (leaf, self.index.list(kv)) {
                self.lb.push_subset(selector, &[kv], SetRef::one(s));
                continue;
            }
            let next = self.index.intersect(cand, kv);
            let len = next.len();
            if len == 0 {
                continue;
            }
            // As many as the parent's candidates, so the same ones (a key with one value on
            // every host, as MOSN's scheme has three): the sets made of those serve again,
            // without extracting or comparing members.
            let mut here = match cand.is_some() && len == made.len {
                true => made,
                false => Made {
                    len,
                    sets: [None; 2],
                },
            };
            self.path.push(kv);
            if let Some(selector) = node.ends {
                self.emit(selector, &next, &mut here);
            }
            for &child in &node.children {
                self.node(child, Some(&next), here);
            }
            self.path.pop();
        }
    }

    /// The values of `key` that the hosts of `cand` carry, ascending as [`Index::values`] lists
    /// them: below the root, a node with fewer candidates than its key has values visits
    /// those alone. Intersecting the candidates with every value of the key made a selector
    /// of two keys unique per host (`pod`, `ip`) cost hosts² intersections: 10¹⁰ at 100k.
    fn values_among(&self, cand: &Cand<'_>, key: u32) -> Vec<u32> {
        let (records, interner) = (&self.lb.records, &self.lb.interner);
        let mut among = Vec::new();
        cand.each(|s| {
            let kvs = records.kvs(s).iter().copied();
            among.extend(kvs.filter(|&kv| interner.kv_key(kv) == key));
        });
        among.sort_unstable();
        among.dedup();
        among
    }

    fn emit(&mut self, selector: u8, cand: &Cand<'_>, made: &mut Made) {
        let single = self.lb.selectors[usize::from(selector)].single;
        if single {
            self.lb.stats.single_host_collisions += made.len as u64 - 1;
        }
        let set = match made.sets[usize::from(single)] {
            Some(set) => {
                if let Some(s) = set.as_set() {
                    self.lb.sets[s as usize].refs += 1;
                }
                set
            }
            None if made.len == 1 => SetRef::one(cand.first()),
            None => SetRef::set(self.shared_set(selector, cand, made.len, single)),
        };
        made.sets[usize::from(single)] = Some(set);
        let path = core::mem::take(&mut self.path);
        self.lb.push_subset(selector, &path, set);
        self.path = path;
    }

    /// The `len` hosts of `cand`, a subset of `selector` (its values on the path): a range of
    /// its chain, or else a list of their own.
    fn members(&mut self, selector: u8, cand: &Cand<'_>, len: usize) -> Members {
        let lb = &mut *self.lb;
        let of = &lb.selectors[usize::from(selector)];
        match (self.chains).range(of, selector, &self.path, len, self.index, &mut lb.chains) {
            Some(start) => Members::shared(start, len as u32),
            None => Members::owned(cand.to_vec()),
        }
    }

    /// The set of an identical subset made before, or a new one of the `len` slots of
    /// `cand`. Looked for before the members are made: they may need a chain sorted, and a
    /// chain whose sets all exist already (the constant labels of MOSN's scheme) need not be.
    fn shared_set(&mut self, selector: u8, cand: &Cand<'_>, len: usize, single: bool) -> u32 {
        let first = cand.first();
        let hash = self.lb.hasher.hash_one((single, len, first, cand.last()));
        let (sets, chains, all) = (&self.lb.sets, &self.lb.chains[..], self.index.hosts());
        // Members are distinct, so as many all in `cand` are `cand` (and as many as the
        // table's hosts are all of them).
        let same = |&(h, s): &(u64, u32)| {
            let set = &sets[s as usize];
            h == hash
                && set.single == single
                && set.members.len() == len
                && (len == all || set.members.iter(chains).all(|m| cand.has(m)))
        };
        if let Some(&(_, s)) = self.dedup.find(hash, same) {
            self.lb.sets[s as usize].refs += 1;
            return s;
        }
        let members = self.members(selector, cand, len);
        let s = self.new_set(members, single);
        self.dedup.insert_unique(hash, (hash, s), |&(h, _)| h);
        s
    }

    fn new_set(&mut self, members: Members, single: bool) -> u32 {
        let mut set = match self.uniform {
            Some(weight) => PickSet::uniform(members, single, weight),
            None => PickSet::new(members, single, &self.lb.slots, &self.lb.chains),
        };
        set.refs = 1;
        let s = self.lb.push_set(set);
        self.lb.elect(s);
        s
    }
}

/// The weight of every host, if all are healthy and weigh the same.
fn uniform<H: HostView>(hosts: &[H]) -> Option<u32> {
    let weight = hosts.first().map_or(1, |h| h.weight());
    hosts
        .iter()
        .all(|h| h.healthy() && h.weight() == weight)
        .then_some(weight)
}
