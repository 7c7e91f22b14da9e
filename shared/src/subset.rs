//! Subset load balancing: Envoy's subset load balancer (every option of `LbSubsetConfig` but
//! locality weighting) on MOSN's inverted index, built in microseconds and updated host by host.
//!
//! # The index
//!
//! Label keys and key=value pairs are interned to dense ids (strings found by fingerprint, in
//! one buffer). [`SubsetLb::build`] makes one pass over the hosts, which validates each, keeps
//! its address and ids in shared buffers (no allocation per host) and interns its labels;
//! then it collects, per key=value, the ascending list of host slots that carry it (one flat
//! array); lists with at least one slot in 32 also become bitsets over all slots.
//! The selectors' sorted key lists form a trie, walked depth-first: a node intersects the set
//! of its parent with each value of its key, so selectors sharing a key prefix share those
//! intersections, and only value combinations present on some host are visited; a node whose
//! candidates are its parent's (a key constant across them) reuses the parent's sets. Bitsets
//! intersect 64 slots per word; a pair that is (nearly) unique per host stays a short list and
//! is intersected by filtering, a hash pass where a bitmap per host would lose.
//!
//! Why not `roaring`: below 65,536 hosts every roaring container of a key=value is an array
//! container (a bitmap container needs 4,096 members per 65,536 slots), whose intersections
//! are branchy merges: with roaring 0.11 the 4 keys x 3 values build at 8,000 hosts took
//! 16 ms, 31% of it in `ArrayStore & ArrayStore`. Plain bitsets over the table are no larger
//! for dense pairs and intersect by word. Profiles of the current build (4 keys x 3 values)
//! show it dominated by reading the host table (validation, label strings) and extracting the
//! member arrays, not by intersections, so roaring was not tried again.
//!
//! The worker's tables come as the daemon's rkyv bytes: [`SubsetLb::decode`] checks the
//! archive (bytecheck) and builds from the archived hosts in place, by the same code as from a
//! [`HostTable`] (one view over owned and archived hosts), so a table change never
//! deserializes 100k hosts into a `BTreeMap` and nine `String`s each (at 100k hosts that took
//! twice as long as the build itself).
//!
//! Each subset keeps its members as a plain array of slots (identical subsets share one), so a
//! pick is an array index; the bitsets are dropped once built. Selectors whose key sets nest
//! (`{a} ⊂ {a, b}`) share one order of the hosts, sorted by their values, in which every subset
//! of those selectors is a range (a "chain", `build::chain`): the 15 selectors of 4 keys need
//! 6 such orders, not 15 arrays as long. Hosts added later go to a set's own array. A subset
//! of one host keeps no array, only that host's slot (a key unique per host makes a subset per
//! host). Subsets of several keys are found by one hash probe on their value ids (which imply
//! the keys) packed into one word ([`key`]), subsets of one key by their value id in an array
//! ([`table`]); either carries the subset's set or host. A set without tombstones or
//! unhealthy members picks without reading a slot; requests carry their pairs as ids in a
//! fixed-size [`Metadata`], so [`SubsetLb::select`] allocates nothing.
//!
//! # Updates
//!
//! [`SubsetLb::add_host`], [`SubsetLb::remove_host`], [`SubsetLb::set_healthy`] and
//! [`SubsetLb::set_weight`] touch only the subsets of that host, found by the same table
//! lookups. A subset whose last host goes is dropped (Envoy kept empty subsets for years,
//! envoy#3790); a removed host stays as a tombstone in its subsets' arrays until tombstones
//! are half of an array.
//!
//! # Lookup, as Envoy's `chooseHostIteration`
//!
//! 1. With `allow_redundant_keys`, the request's pairs are cut to the keys of the first
//!    selector (in configuration order) whose keys it all has.
//! 2. A subset of a selector whose keys are exactly the request's, with the request's values:
//!    pick in it ([`Fallback::None`]), even if the pick finds no host.
//! 3. Else the fallback of the selector whose keys are exactly the request's, if it defines
//!    one: any host, the default subset, none, or `KEYS_SUBSET`: step 1 again with the
//!    request cut to the selector's `fallback_keys_subset`.
//! 4. Else the top-level `fallback_policy`; if that finds no host and `panic_mode_any` is on,
//!    any host ([`Fallback::PanicAny`]).
//!
//! If that finds no host, each of the configured `metadata_fallbacks` in turn is merged over
//! the request's pairs and looked up the same way. Inside a set the child policy picks among
//! the healthy hosts, or among all when fewer than `panic_threshold` percent are healthy
//! ([`Selection::panic`]).
//!
//! ```
//! use edgewise::{Fallback, Host, HostTable, SubsetLb, SubsetSelector};
//!
//! let mut table = HostTable::default();
//! table.hosts.push(Host::new("http://10.0.0.1").with_label("zone", "a"));
//! table.hosts.push(Host::new("http://10.0.0.2").with_label("zone", "b"));
//! table.subset.selectors.push(SubsetSelector::new(["zone"]));
//! let mut lb = SubsetLb::build(&table).unwrap();
//!
//! let mut md = lb.metadata();
//! lb.set(&mut md, "zone", "b");
//! let chosen = lb.select(&md, 42).unwrap();
//! assert_eq!(lb.address(chosen.host), Some("http://10.0.0.2"));
//! assert_eq!(chosen.fallback, Fallback::None);
//! // The connection failed: no other host in zone b.
//! assert_eq!(lb.select_retry(&md, 43, chosen.host), None);
//! lb.release(chosen.host);
//! ```

mod addresses;
mod apply;
mod build;
mod error;
mod fingerprint;
mod intern;
mod key;
mod lookup;
mod metadata;
mod pickset;
mod prefetch;
mod records;
mod request_keys;
mod slot;
mod stretches;
mod subsets;
mod table;
mod update;

#[cfg(test)]
pub(crate) mod tests;

use alloc::{boxed::Box, vec::Vec};

use foldhash::fast::FixedState;
use hashbrown::HashTable;

pub use apply::Applied;
pub use error::SubsetError;
pub use metadata::{METADATA_CAPACITY, Metadata};
pub use request_keys::RequestKeys;

use crate::hosttable::{self, HostView};
use crate::{FallbackPolicy, HostTable, SelectorFallback, SubsetConfig};
use addresses::Addresses;
use intern::Interner;
use pickset::{Child, PickSet, Rng};
use records::Records;
use slot::Slot;
use subsets::Subsets;
use table::{Hit, Table};

/// A host of a [`SubsetLb`]: its slot and the slot's generation, so that an id kept across
/// updates never names a newer host that reused the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostId {
    slot: u32,
    generation: u32,
}

/// How the host of a [`Selection`] was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fallback {
    /// In the subset the request's metadata names.
    None,
    /// In a subset found after a selector's `KEYS_SUBSET` fallback dropped keys.
    KeysSubset,
    /// Among all hosts, by a selector's or the top-level fallback policy.
    AnyEndpoint,
    /// In the default subset, by a selector's or the top-level fallback policy.
    DefaultSubset,
    /// Among all hosts because the fallback found none and `panic_mode_any` is on.
    PanicAny,
}

/// The outcome of [`SubsetLb::select`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Selection {
    /// The host picked.
    pub host: HostId,
    /// How its set was found.
    pub fallback: Fallback,
    /// Which entry of `metadata_fallbacks` found it, if the request's own metadata did not.
    pub metadata_fallback: Option<u8>,
    /// The set had fewer healthy hosts than the panic threshold: the host may be unhealthy.
    pub panic: bool,
}

/// Counters of a [`SubsetLb`], named after Envoy's `lb_subsets_*` stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SubsetStats {
    /// Subsets with at least one host.
    pub subsets_active: u64,
    /// Subsets created, at build and by updates.
    pub subsets_created: u64,
    /// Subsets dropped because their last host went.
    pub subsets_removed: u64,
    /// Calls of `select` and `select_retry`.
    pub selections: u64,
    /// Lookups that found the request's subset (Envoy's `lb_subsets_selected`): a selection
    /// whose subset has no host to pick tries its metadata fallbacks, each a lookup of its own.
    pub subset_hits: u64,
    /// Hosts picked by the top-level fallback policy.
    pub fallbacks: u64,
    /// Hosts picked by `panic_mode_any`.
    pub panics: u64,
    /// Picks made in a set below the healthy panic threshold.
    pub health_panics: u64,
    /// Selections that found no host.
    pub no_host: u64,
    /// Hosts left out of a `single_host_per_subset` subset another host holds, one per host
    /// and subset: a gauge, as Envoy's `lb_subsets_single_host_per_subset_duplicate`.
    pub single_host_collisions: u64,
}

/// A subset selector, interned.
#[derive(Debug)]
struct Selector {
    /// Key ids, ascending.
    keys: Box<[u32]>,
    fallback: SelectorFallback,
    keys_subset: Box<[u32]>,
    single: bool,
}

/// Options copied out of the configuration.
#[derive(Debug, Clone, Copy)]
struct Options {
    fallback_policy: FallbackPolicy,
    panic_mode_any: bool,
    list_as_any: bool,
    allow_redundant_keys: bool,
    child: Child,
}

/// The subset load balancer: the index, the child load balancers' state and the counters.
#[derive(Debug)]
pub struct SubsetLb {
    version: u64,
    /// This load balancer's, for [`RequestKeys`] resolved against it.
    serial: u64,
    options: Options,
    hasher: FixedState,
    interner: Interner,
    selectors: Vec<Selector>,
    /// Selector index by its key ids.
    selector_table: HashTable<u8>,
    subsets: Subsets,
    /// Subsets (and their sets or hosts) by their value ids.
    subset_table: Table,
    sets: Vec<PickSet>,
    /// The chains' hosts, whose ranges are the sets' first members (see `build::chain`).
    chains: Vec<u32>,
    /// Sets with members in `chains`: when none is left, updates free the chains.
    chained: u32,
    free_sets: Vec<u32>,
    any: PickSet,
    /// The default subset's value ids (sorted) and hosts; `None` when it is every host.
    default: Option<(Box<[u32]>, PickSet)>,
    metadata_fallbacks: Vec<Metadata>,
    slots: Vec<Slot>,
    /// Address and labels per slot.
    records: Records,
    free_slots: Vec<u32>,
    /// Slot by address.
    addresses: Addresses,
    stats: SubsetStats,
}

impl SubsetLb {
    /// Validates `table` (refusing it as [`HostTable::validate`] does) and builds its index.
    /// The checks run inside the build's own pass over the hosts, so a table already
    /// validated costs little to check again.
    pub fn build(table: &HostTable) -> Result<SubsetLb, SubsetError> {
        SubsetLb::from_table(table, build::Checks::All)
    }

    /// [`SubsetLb::build`] for a table that already passed [`HostTable::validate`] (as
    /// [`HostTable::decode`] returns them): the checks of each host's address and labels are
    /// not made again. What the index relies on (the host count, unique addresses, weights,
    /// the configuration, and with `list_as_any` the subsets a host's lists put it in:
    /// [`MAX_LIST_SUBSETS`](crate::MAX_LIST_SUBSETS)) is still checked, so a table that
    /// skipped validation still gets a sound index, only with whatever addresses and labels
    /// it has.
    pub fn build_validated(table: &HostTable) -> Result<SubsetLb, SubsetError> {
        SubsetLb::from_table(table, build::Checks::IndexOnly)
    }

    fn from_table(table: &HostTable, checks: build::Checks) -> Result<SubsetLb, SubsetError> {
        build::build(table.version, &table.hosts, &table.subset, checks)
            .map_err(|()| refusal(&table.hosts, &table.subset))
    }

    /// [`SubsetLb::build`] from the bytes of [`HostTable::encode`] (the daemon's
    /// `GET /v1/hosts`), read in place: the archive is checked (bytecheck), then its columns,
    /// then the hosts are validated and indexed straight from it (each distinct label once),
    /// never deserialized into a [`HostTable`]. The table is refused as [`HostTable::decode`]
    /// would refuse it.
    pub fn decode(bytes: &[u8]) -> Result<SubsetLb, SubsetError> {
        let aligned = hosttable::table_archive(bytes)?;
        let dictionary = hosttable::Dictionary::new(aligned.access()?)?;
        // Refused as `HostTable::decode` refuses it: for its labels before its configuration.
        let config = hosttable::deserialize_config(dictionary.config())
            .map_err(|e| dictionary.check_labels().err().unwrap_or(e))?;
        build::build_columns(dictionary, &config).map_err(|()| {
            // Named by the owned table's validation, so that both decoders say the same.
            let named = (dictionary.check_labels())
                .and_then(|columns| columns.to_table())
                .and_then(|t| t.validate());
            named.err().map_or(SubsetError::TooLarge, SubsetError::from)
        })
    }

    /// The version of the table it was built from.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Empty request metadata, to fill with [`SubsetLb::set`].
    pub fn metadata(&self) -> Metadata {
        Metadata::default()
    }

    /// Sets `key` to `value` in `md` (replacing an earlier value of `key`), by lookup only: a
    /// key nothing knows, or a pair beyond [`METADATA_CAPACITY`], is recorded as foreign and
    /// makes `md` match no subset (a pair beyond the capacity even with `allow_redundant_keys`,
    /// which drops unknown keys: the pair lost may have been a selector's key); a value no host
    /// has matches no subset either. Fastest with
    /// the keys set in the order of their texts (as hosts list their labels): each is then
    /// found at its position, with one comparison. Keys known before the requests (a proxy's
    /// configuration) are found once instead: [`SubsetLb::set_key`]. A request's pairs all at
    /// once: [`SubsetLb::set_all`].
    pub fn set(&self, md: &mut Metadata, key: &str, value: &str) {
        md.put_str(&self.interner, key, value);
        md.pack();
    }

    /// Sets each of a request's `(key, value)` pairs in `md`, as [`SubsetLb::set`] sets one,
    /// in one call: a call a pair saved and restored registers each time, 754 instructions a
    /// 4 keys x 3 values lookup from raw strings against 719.
    pub fn set_all<'a>(
        &self,
        md: &mut Metadata,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (key, value) in pairs {
            md.put_str(&self.interner, key, value);
        }
        md.pack();
    }

    /// Picks a host for a request with metadata `md`; `entropy` drives the random choices
    /// (pass a fresh random number per request). Allocates nothing. The host counts one more
    /// request in flight (least-request) until [`SubsetLb::release`]d.
    pub fn select(&mut self, md: &Metadata, entropy: u64) -> Option<Selection> {
        self.choose(md, entropy, None)
    }

    /// Picks again for a request whose connection to `exclude` failed: the same lookup with
    /// `exclude` left out of every set it picks from, so another host of the same subset (or,
    /// where the lookup falls back, of the fallback's set), or `None` if there is none. Release
    /// both hosts when the request ends. A host removed since (`exclude` stale) excludes
    /// nothing: its slot may hold another host by now.
    pub fn select_retry(
        &mut self,
        md: &Metadata,
        entropy: u64,
        exclude: HostId,
    ) -> Option<Selection> {
        let exclude = self.slot(exclude).is_some().then_some(exclude.slot);
        self.choose(md, entropy, exclude)
    }

    fn choose(&mut self, md: &Metadata, entropy: u64, exclude: Option<u32>) -> Option<Selection> {
        self.stats.selections += 1;
        let mut rng = Rng(entropy);
        let chosen = match exclude {
            None => match self.clean_hit(md, &mut rng) {
                // Counted in flight where the fast path read the slot.
                lookup::Fast::Picked(chosen) => return Some(chosen),
                lookup::Fast::Found(set) => self.with_fallbacks(md, &mut rng, None, Some(set)),
                lookup::Fast::Miss => self.with_fallbacks(md, &mut rng, None, None),
            },
            Some(_) => self.with_fallbacks(md, &mut rng, exclude, None),
        };
        self.counted(chosen)
    }

    /// Counts the general path's outcome: no host, or one more request in flight.
    fn counted(&mut self, chosen: Option<Selection>) -> Option<Selection> {
        match &chosen {
            None => self.stats.no_host += 1,
            Some(s) => {
                self.stats.health_panics += u64::from(s.panic);
                let slot = &mut self.slots[s.host.slot as usize];
                slot.active = slot.active.saturating_add(1);
            }
        }
        chosen
    }

    /// The request for `id` finished (least-request accounting). Ids of removed hosts are
    /// ignored.
    pub fn release(&mut self, id: HostId) {
        if let Some(slot) = self.slot_mut(id) {
            slot.active = slot.active.saturating_sub(1);
        }
    }

    /// The address of host `id`, or `None` if it was removed.
    pub fn address(&self, id: HostId) -> Option<&str> {
        self.slot(id)?;
        Some(self.records.address(id.slot))
    }

    /// The weight of host `id`, or `None` if it was removed.
    pub fn weight(&self, id: HostId) -> Option<u32> {
        self.slot(id).map(Slot::weight)
    }

    /// Whether host `id` is healthy, or `None` if it was removed.
    pub fn is_healthy(&self, id: HostId) -> Option<bool> {
        self.slot(id).map(Slot::healthy)
    }

    /// Requests in flight to host `id` (selected, not yet released), counted up to 65535 (a
    /// host's count stays there while more are in flight: least request then sees it as
    /// loaded as can be).
    pub fn in_flight(&self, id: HostId) -> Option<u32> {
        self.slot(id).map(|s| u32::from(s.active))
    }

    /// The id of the host with `address`.
    pub fn host_id(&self, address: &str) -> Option<HostId> {
        let slot = self.find_address(address)?;
        Some(self.id(slot))
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.any.live as usize
    }

    /// Whether there are no hosts.
    pub fn is_empty(&self) -> bool {
        self.any.live == 0
    }

    /// The counters.
    pub fn stats(&self) -> SubsetStats {
        self.stats
    }

    /// Heap bytes held by the index (interned strings, hash tables, subsets and their member
    /// arrays), without the host records (addresses, labels, per-host counters: see
    /// [`SubsetLb::host_heap_bytes`]); an estimate from capacities, for the benchmarks' memory
    /// figures.
    pub fn index_heap_bytes(&self) -> usize {
        let sets: usize = self.sets.iter().map(PickSet::heap_bytes).sum();
        self.interner.heap_bytes()
            + sets
            + self.sets.capacity() * size_of::<PickSet>()
            + self.chains.capacity() * size_of::<u32>()
            + self.subsets.heap_bytes()
            + self.subset_table.heap_bytes()
            + self.default.as_ref().map_or(0, |(_, set)| set.heap_bytes())
    }

    /// The table's hit for the subset with value ids `kvs`.
    #[inline]
    fn subset_entry(&self, kvs: impl Iterator<Item = u32> + Clone, len: usize) -> Option<Hit> {
        self.subset_entry_keyed(key::pack(kvs.clone(), len), kvs, len)
    }

    /// [`SubsetLb::subset_entry`] with the ids' [`key::pack`] made already.
    #[inline]
    fn subset_entry_keyed(
        &self,
        key: u64,
        kvs: impl Iterator<Item = u32> + Clone,
        len: usize,
    ) -> Option<Hit> {
        let exact = key::is_exact(len, self.interner.kv_count());
        let subsets = &self.subsets;
        self.subset_table.find(key, kvs, len, exact, |subset, kvs| {
            subsets.get(subset).is_some() && subsets.kvs(subset).iter().copied().eq(kvs)
        })
    }

    /// Heap bytes held per host: records (addresses, labels), slots and the address table; an
    /// estimate from capacities, for the benchmarks' memory figures.
    pub fn host_heap_bytes(&self) -> usize {
        self.records.heap_bytes()
            + self.slots.capacity() * size_of::<Slot>()
            + self.addresses.heap_bytes()
            + self.free_slots.capacity() * size_of::<u32>()
    }

    fn id(&self, slot: u32) -> HostId {
        HostId {
            slot,
            generation: self.slots[slot as usize].generation,
        }
    }

    fn slot(&self, id: HostId) -> Option<&Slot> {
        let slot = self.slots.get(id.slot as usize)?;
        (slot.alive() && slot.generation == id.generation).then_some(slot)
    }

    fn slot_mut(&mut self, id: HostId) -> Option<&mut Slot> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        (slot.alive() && slot.generation == id.generation).then_some(slot)
    }

    fn find_address(&self, address: &str) -> Option<u32> {
        self.addresses.find(&self.records, address)
    }
}

/// Why the build refused a table: errors are rare, so the build's own pass stays lean and
/// validation names the rule.
fn refusal<H: HostView>(hosts: &[H], config: &SubsetConfig) -> SubsetError {
    match hosttable::validate_parts(hosts, config) {
        Err(e) => e.into(),
        // The build refuses only what validation refuses, and tables past what its records
        // address.
        Ok(()) => SubsetError::TooLarge,
    }
}

/// Hash of a selector's key ids, or of a request's keys.
fn keys_hash(keys: impl Iterator<Item = u32>) -> u64 {
    ids_hash(keys)
}

/// A multiply-fold hash of dense ids: the ids are our own (no attacker picks them), so a
/// general string hasher's setup and finalisation would be wasted on every lookup. The last
/// fold spreads the product's high bits, which hashbrown's tags use, down to the low bits it
/// indexes by.
fn ids_hash(ids: impl Iterator<Item = u32>) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let h = ids.fold(0u64, |h, id| {
        (h ^ u64::from(id)).wrapping_mul(K).rotate_left(23)
    });
    (h ^ (h >> 29)).wrapping_mul(K)
}
