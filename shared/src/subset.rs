//! Subset load balancing: Envoy's subset load balancer (every option of `LbSubsetConfig` but
//! locality weighting), on an inverted index of roaring bitmaps, updated host by host.
//!
//! # The index
//!
//! Label keys and key=value pairs are interned to dense ids ([`names`]). Each key=value keeps
//! the bitmap of the host slots carrying it; a selector's subsets are the non-empty
//! intersections of one value bitmap per key ([`index`]). Each subset, the default subset and
//! the set of all hosts keep their members and healthy members as bitmaps ([`pick`]), so a
//! pick is a rank select. Subsets are found by their key=value ids, which imply the keys.
//! Requests carry their pairs as ids in a fixed-size [`Metadata`]: [`SubsetLb::select`]
//! allocates nothing.
//!
//! # Updates
//!
//! [`SubsetLb::add_host`], [`SubsetLb::remove_host`], [`SubsetLb::set_healthy`] and
//! [`SubsetLb::set_weight`] touch only the subsets of that host. A subset whose last host goes
//! is dropped (Envoy kept empty subsets for years, envoy#3790). [`SubsetLb::apply`] applies a
//! [`HostDelta`](crate::HostDelta) through them, all or nothing.
//!
//! # Lookup, as Envoy's `chooseHostIteration`
//!
//! 1. With `allow_redundant_keys`, the request's pairs are cut to the keys of the first
//!    selector (in configuration order) whose keys it all has.
//! 2. A subset of a selector whose keys are exactly the request's, with the request's values:
//!    pick in it ([`Fallback::None`]), even if the pick finds no host; unless the selector
//!    sets `fallback_on_unhealthy` and the subset has no healthy host (not in Envoy,
//!    envoy#25654): then as if no subset matched.
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

mod apply;
mod error;
mod index;
mod lookup;
mod metadata;
mod names;
mod pick;
mod request_keys;
mod subsets;
mod update;

#[cfg(test)]
pub(crate) mod tests;

use alloc::{boxed::Box, vec::Vec};
use core::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::{HashMap, HashTable};

pub use apply::Applied;
pub use error::SubsetError;
pub use metadata::{METADATA_CAPACITY, Metadata};
pub use request_keys::RequestKeys;

use crate::hosttable::wire;
use crate::{FallbackPolicy, HostTable, LbPolicy, SelectorFallback};
use names::Names;
use pick::HostSet;
use subsets::Subsets;

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
    /// `fallback_keys_subset` as key ids, ascending.
    keys_subset: Box<[u32]>,
    single: bool,
    on_unhealthy: bool,
}

#[derive(Debug, Clone, Copy)]
struct Options {
    fallback_policy: FallbackPolicy,
    panic_mode_any: bool,
    list_as_any: bool,
    allow_redundant_keys: bool,
    policy: LbPolicy,
    panic_threshold: u8,
}

/// One host's place in the index; a removed host's slot is reused with the next generation.
#[derive(Debug, Clone)]
struct Slot {
    address: Box<str>,
    /// Key=value ids of the host's labels (one per list item with `list_as_any`).
    kvs: Box<[u32]>,
    weight: u32,
    healthy: bool,
    alive: bool,
    generation: u32,
    /// Requests in flight: picks not yet released.
    active: u32,
}

/// Maps keyed by ids the index made: a fixed hasher is no flooding risk.
type IdMap<K, V> = HashMap<K, V, FixedState>;

/// A subset load balancer over a host table. See the [module docs](self).
#[derive(Debug)]
pub struct SubsetLb {
    version: u64,
    /// Tells [`RequestKeys`] resolved against another load balancer apart.
    serial: u64,
    options: Options,
    names: Names,
    selectors: Vec<Selector>,
    /// Whether a selector sets `fallback_on_unhealthy`: else lookups need not find theirs.
    on_unhealthy: bool,
    /// Selector by its key ids.
    selector_of: IdMap<Box<[u32]>, u8>,
    /// Subsets by their key=value ids in key order.
    subsets: Subsets,
    any: HostSet,
    /// The default subset's key=value ids and set; `None` when it is every host.
    default: Option<(Box<[u32]>, HostSet)>,
    metadata_fallbacks: Vec<Metadata>,
    slots: Vec<Slot>,
    /// Slots by their host's address (hashed; the text is the slot's).
    addresses: HashTable<u32>,
    hasher: FixedState,
    free_slots: Vec<u32>,
    /// Live hosts whose weight is not 1: while none, picks ignore weights.
    weighted_hosts: usize,
    stats: SubsetStats,
}

impl SubsetLb {
    /// Builds the index of `table`, checked as [`HostTable::validate`] checks it.
    pub fn build(table: &HostTable) -> Result<SubsetLb, SubsetError> {
        table.validate()?;
        SubsetLb::build_validated(table)
    }

    /// Builds the index of a table [`HostTable::validate`] accepted.
    pub fn build_validated(table: &HostTable) -> Result<SubsetLb, SubsetError> {
        // One build path: from the table's encoding, as the daemon serves it.
        let bytes = crate::hosttable::encode_unchecked(table)?;
        wire::read(&bytes, |table| index::build(table, false))?
    }

    /// Builds the index of the daemon's table bytes ([`HostTable::encode`]), read in place and
    /// checked as [`HostTable::decode`] checks them.
    pub fn decode(bytes: &[u8]) -> Result<SubsetLb, SubsetError> {
        wire::read(bytes, |table| index::build(table, true))?
    }

    /// The table version the index holds.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Empty metadata for a request to this load balancer.
    pub fn metadata(&self) -> Metadata {
        Metadata::default()
    }

    /// Sets `key` to `value` in `md`, replacing an earlier value of `key`.
    pub fn set(&self, md: &mut Metadata, key: &str, value: &str) {
        md.put_str(&self.names, key, value);
    }

    /// Sets every pair of `pairs` in `md`.
    pub fn set_all<'a>(
        &self,
        md: &mut Metadata,
        pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        for (key, value) in pairs {
            md.put_str(&self.names, key, value);
        }
    }

    /// Picks a host for a request with metadata `md`; `entropy` seeds the random choices.
    /// The host counts one more request in flight until [`SubsetLb::release`].
    pub fn select(&mut self, md: &Metadata, entropy: u64) -> Option<Selection> {
        self.choose(md, entropy, None)
    }

    /// [`SubsetLb::select`] for a retry: any host but `exclude`, which could not be reached.
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
        let chosen = self.with_fallbacks(md, &mut pick::Rng(entropy), exclude);
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

    /// Ends a request to `id` picked by [`SubsetLb::select`].
    pub fn release(&mut self, id: HostId) {
        if let Some(slot) = self.slot_mut(id) {
            slot.active = slot.active.saturating_sub(1);
        }
    }

    /// The host's address, if it is still in the index.
    pub fn address(&self, id: HostId) -> Option<&str> {
        self.slot(id).map(|s| &*s.address)
    }

    pub fn weight(&self, id: HostId) -> Option<u32> {
        self.slot(id).map(|s| s.weight)
    }

    pub fn is_healthy(&self, id: HostId) -> Option<bool> {
        self.slot(id).map(|s| s.healthy)
    }

    /// Requests in flight to the host.
    pub fn in_flight(&self, id: HostId) -> Option<u32> {
        self.slot(id).map(|s| s.active)
    }

    /// The host with `address`.
    pub fn host_id(&self, address: &str) -> Option<HostId> {
        self.find(address).map(|s| self.id(s))
    }

    /// Number of hosts.
    pub fn len(&self) -> usize {
        self.any.len() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn stats(&self) -> SubsetStats {
        self.stats
    }

    /// Heap bytes of the index: the subsets and the set of all hosts, not the hosts' records
    /// or the names.
    pub fn index_heap_bytes(&self) -> usize {
        self.subsets.heap_bytes() + self.any.heap_bytes()
    }

    /// The slot of the host with `address`.
    fn find(&self, address: &str) -> Option<u32> {
        self.find_hashed(self.hasher.hash_one(address), address)
    }

    /// [`SubsetLb::find`] of an address whose hash is known.
    fn find_hashed(&self, hash: u64, address: &str) -> Option<u32> {
        let slots = &self.slots;
        let found = self
            .addresses
            .find(hash, |&s| *slots[s as usize].address == *address);
        found.copied()
    }

    /// Makes the host of `slot` findable by its address.
    fn index_address(&mut self, slot: u32) {
        let hash = self.hasher.hash_one(&*self.slots[slot as usize].address);
        self.index_address_hashed(hash, slot);
    }

    /// [`SubsetLb::index_address`] with the address's hash.
    fn index_address_hashed(&mut self, hash: u64, slot: u32) {
        let (hasher, slots) = (&self.hasher, &self.slots);
        let rehash = |s: &u32| hasher.hash_one(&*slots[*s as usize].address);
        self.addresses.insert_unique(hash, slot, rehash);
    }

    /// Stops finding the host of `slot` by its address.
    fn unindex_address(&mut self, slot: u32) {
        let hash = self.hasher.hash_one(&*self.slots[slot as usize].address);
        if let Ok(entry) = self.addresses.find_entry(hash, |&s| s == slot) {
            entry.remove();
        }
    }

    fn id(&self, slot: u32) -> HostId {
        HostId {
            slot,
            generation: self.slots[slot as usize].generation,
        }
    }

    fn slot(&self, id: HostId) -> Option<&Slot> {
        let slot = self.slots.get(id.slot as usize)?;
        (slot.alive && slot.generation == id.generation).then_some(slot)
    }

    fn slot_mut(&mut self, id: HostId) -> Option<&mut Slot> {
        let slot = self.slots.get_mut(id.slot as usize)?;
        (slot.alive && slot.generation == id.generation).then_some(slot)
    }
}
