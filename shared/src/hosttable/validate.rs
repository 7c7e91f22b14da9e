//! The rules of [`HostTable::validate`](crate::HostTable::validate), and of archived tables:
//! there, maps must also be strictly ascending by key, as a `BTreeMap` is.

use alloc::{collections::BTreeMap, format, string::String, vec, vec::Vec};
use foldhash::fast::FixedState;
use hashbrown::HashMap;

use super::config::ArchivedSubsetConfig;
use super::error::shown;
use super::view::HostView;
use super::{HostTable, HostTableError, SelectorFallback, SubsetConfig, SubsetSelector};
use crate::{Error, Origin};

/// Most hosts a table may have.
pub const MAX_HOSTS: usize = 1 << 20;
/// Longest host address, in bytes.
pub const MAX_ADDRESS_LEN: usize = 2048;
/// Largest host weight: weights are relative, and a bounded ratio keeps weighted picks short.
pub const MAX_WEIGHT: u32 = 10_000;
/// Most labels per host.
pub const MAX_LABELS: usize = 32;
/// Longest label key, in bytes.
pub const MAX_KEY_LEN: usize = 128;
/// Longest label value, in bytes.
pub const MAX_VALUE_LEN: usize = 256;
/// Most subset selectors.
pub const MAX_SELECTORS: usize = 64;
/// Most keys per selector: a request's [`Metadata`](crate::Metadata) holds as many pairs.
pub const MAX_SELECTOR_KEYS: usize = 8;
/// Most metadata fallbacks.
pub const MAX_METADATA_FALLBACKS: usize = 8;
/// Most subsets a host may join with `list_as_any`, over all selectors: for each selector, the
/// product over its keys of the distinct items the host lists under each, summed. Without
/// lists a host joins at most one subset a selector (at most [`MAX_SELECTORS`]); lists under
/// several keys of a selector multiply (eight of 128 items, what a value of [`MAX_VALUE_LEN`]
/// bytes holds: 2^56 subsets for one host). 1,024 lets a list of 128 items serve eight
/// selectors, and keeps the index a table with lists makes within a small factor, per byte
/// of table, of one without.
pub const MAX_LIST_SUBSETS: usize = 1024;

pub(super) fn table(table: &HostTable) -> Result<(), HostTableError> {
    parts(&table.hosts, &table.subset)
}

/// Every rule of a table, given as its hosts (owned or archived) and its configuration: the
/// configuration, then host by host its own rules, that its address is new, and its lists.
/// A build from an archive checks in the same order ([`SubsetLb::decode`](crate::SubsetLb)),
/// so both name the same mistake.
pub(crate) fn parts<H: HostView>(hosts: &[H], config: &SubsetConfig) -> Result<(), HostTableError> {
    self::config(config)?;
    let lists = Lists::new(config);
    each_host(hosts, |index, host| lists.check(index, host))
}

/// At most [`MAX_HOSTS`] hosts.
pub(crate) fn count(hosts: usize) -> Result<(), HostTableError> {
    match hosts > MAX_HOSTS {
        true => Err(HostTableError::TooManyHosts(hosts)),
        false => Ok(()),
    }
}

pub(crate) fn duplicate(first: usize, index: usize, address: &str) -> HostTableError {
    HostTableError::DuplicateAddress {
        first,
        index,
        address: shown(address),
    }
}

/// With `list_as_any`, the selectors' keys, to check [`check_list_subsets`] host by host;
/// without, nothing.
#[derive(Default)]
struct Lists<'a> {
    /// Each key's position among all selectors' keys, for a host's labels to be counted in
    /// one visit.
    keys: BTreeMap<&'a str, usize>,
    selectors: Vec<Vec<usize>>,
}

impl<'a> Lists<'a> {
    fn new(config: &'a SubsetConfig) -> Lists<'a> {
        if !config.list_as_any {
            return Lists::default();
        }
        let mut keys: BTreeMap<&str, usize> = BTreeMap::new();
        let selectors = (config.selectors.iter())
            .map(|s| s.keys.iter().map(|k| position(&mut keys, k)).collect())
            .collect();
        Lists { keys, selectors }
    }

    fn check<H: HostView>(&self, index: usize, host: &H) -> Result<(), HostTableError> {
        if self.selectors.is_empty() {
            return Ok(());
        }
        let mut items = vec![0; self.keys.len()];
        let mut all = 1u64;
        for (k, v) in host.labels() {
            if let Some(&i) = self.keys.get(k) {
                items[i] = distinct_items(v);
                all = all.saturating_mul(items[i].max(1));
            }
        }
        let selectors = self.selectors.iter().map(|s| s.iter());
        check_list_subsets(index, selectors, |&i| items[i], all)
    }
}

/// `key`'s position in `keys`, added at the end if new.
fn position<'a>(keys: &mut BTreeMap<&'a str, usize>, key: &'a str) -> usize {
    let next = keys.len();
    *keys.entry(key).or_insert(next)
}

/// Checks that the host at `index` joins at most [`MAX_LIST_SUBSETS`] subsets with
/// `list_as_any` over `selectors` (each its keys), where it lists `items(key)` distinct items
/// under each key. `all` bounds any one selector's product: the product of every key's items
/// (each at least 1) that the host has and a selector may name. When the selectors times
/// `all` are few enough, as without long lists, they are not counted one by one.
pub(crate) fn check_list_subsets<K, S: Iterator<Item = K>>(
    index: usize,
    selectors: impl ExactSizeIterator<Item = S>,
    items: impl Fn(K) -> u64,
    all: u64,
) -> Result<(), HostTableError> {
    let max = MAX_LIST_SUBSETS as u64;
    if (selectors.len() as u64).saturating_mul(all) <= max {
        return Ok(());
    }
    // Up to 64 selectors of 128^8: saturating, not wrapping.
    let product = |keys: S| keys.map(&items).fold(1, u64::saturating_mul);
    let count = selectors.map(product).fold(0, u64::saturating_add);
    match count <= max {
        true => Ok(()),
        false => Err(HostTableError::TooManyListSubsets { index, count }),
    }
}

/// The items of a label value that `list_as_any` reads as a list: split at commas, spaces
/// around each item trimmed, empty items dropped (`"a, b,"` is `a` and `b`).
pub(crate) fn list_items(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
}

/// The distinct items `value` lists, as `list_as_any` reads it.
pub(crate) fn distinct_items(value: &str) -> u64 {
    if !value.contains(',') {
        return u64::from(list_items(value).next().is_some());
    }
    let mut items: Vec<&str> = list_items(value).collect();
    items.sort_unstable();
    items.dedup();
    items.len() as u64
}

/// Checks every host and that no address repeats.
pub(crate) fn hosts<H: HostView>(hosts: &[H]) -> Result<(), HostTableError> {
    each_host(hosts, |_, _| Ok(()))
}

/// The count of `hosts`, then host by host its own rules, that its address is new, and `more`.
fn each_host<H: HostView>(
    hosts: &[H],
    mut more: impl FnMut(usize, &H) -> Result<(), HostTableError>,
) -> Result<(), HostTableError> {
    count(hosts.len())?;
    let mut seen = HashMap::with_capacity_and_hasher(hosts.len(), FixedState::default());
    for (index, host) in hosts.iter().enumerate() {
        self::host(index, host)?;
        if let Some(first) = seen.insert(host.address(), index) {
            return Err(duplicate(first, index, host.address()));
        }
        more(index, host)?;
    }
    Ok(())
}

/// Checks one host on its own (the address's uniqueness is the table's business).
pub(crate) fn host<H: HostView>(index: usize, host: &H) -> Result<(), HostTableError> {
    address(index, host.address())?;
    let weight = host.weight();
    if weight == 0 {
        return Err(HostTableError::ZeroWeight { index });
    }
    if weight > MAX_WEIGHT {
        return Err(HostTableError::WeightTooLarge { index, weight });
    }
    let count = host.label_count();
    if count > MAX_LABELS {
        return Err(HostTableError::TooManyLabels { index, count });
    }
    let place = || format!("host {index}");
    let mut previous: Option<&str> = None;
    for (k, v) in host.labels() {
        label(k, v, place)?;
        if !H::ORDERED && previous.is_some_and(|p| p >= k) {
            return Err(HostTableError::LabelsOutOfOrder { index });
        }
        previous = Some(k);
    }
    Ok(())
}

/// Checks that the maps of an archived configuration are strictly ascending by key.
pub(crate) fn archived_config_order(config: &ArchivedSubsetConfig) -> Result<(), HostTableError> {
    let out_of_order = |place: String| HostTableError::EntriesOutOfOrder { place };
    if !ascending(config.default_subset.keys().map(|k| k.as_str())) {
        return Err(out_of_order("default_subset".into()));
    }
    for (index, fallback) in config.metadata_fallbacks.iter().enumerate() {
        if !ascending(fallback.keys().map(|k| k.as_str())) {
            return Err(out_of_order(format!("metadata_fallbacks {index}")));
        }
    }
    Ok(())
}

/// Whether `keys` are strictly ascending.
pub(super) fn ascending<'a>(keys: impl Iterator<Item = &'a str>) -> bool {
    let mut last: Option<&str> = None;
    keys.into_iter().all(|k| {
        let ok = last.is_none_or(|l| l < k);
        last = Some(k);
        ok
    })
}

fn address(index: usize, address: &str) -> Result<(), HostTableError> {
    if address.is_empty() {
        return Err(HostTableError::EmptyAddress { index });
    }
    let invalid = |reason| HostTableError::InvalidAddress {
        index,
        address: shown(address),
        reason,
    };
    if address.len() > MAX_ADDRESS_LEN {
        return Err(invalid("longer than 2048 bytes"));
    }
    match Origin::check(address) {
        Ok(true) => Ok(()),
        // Two spellings of one origin would be two hosts with one origin's traffic twice.
        Ok(false) => Err(HostTableError::AddressNotNormal {
            index,
            address: shown(address),
            normal: Origin::parse(address).map_or_else(|_| String::new(), |o| shown(o.as_str())),
        }),
        Err(Error::InvalidOrigin(reason)) => Err(invalid(reason)),
        Err(_) => Err(invalid("unparseable")),
    }
}

fn label(k: &str, v: &str, place: impl Fn() -> String) -> Result<(), HostTableError> {
    key(k, &place)?;
    if v.len() > MAX_VALUE_LEN {
        return Err(HostTableError::ValueTooLong {
            place: place(),
            key: shown(k),
        });
    }
    Ok(())
}

fn key(key: &str, place: impl Fn() -> String) -> Result<(), HostTableError> {
    if key.is_empty() {
        return Err(HostTableError::EmptyKey { place: place() });
    }
    if key.len() > MAX_KEY_LEN {
        return Err(HostTableError::KeyTooLong {
            place: place(),
            key: shown(key),
        });
    }
    Ok(())
}

pub(crate) fn config(config: &SubsetConfig) -> Result<(), HostTableError> {
    if config.selectors.len() > MAX_SELECTORS {
        return Err(HostTableError::TooManySelectors(config.selectors.len()));
    }
    for (index, selector) in config.selectors.iter().enumerate() {
        self::selector(index, selector)?;
        let first = config.selectors[..index]
            .iter()
            .position(|other| same_keys(&other.keys, &selector.keys));
        if let Some(first) = first {
            return Err(HostTableError::DuplicateSelector { first, index });
        }
    }
    entries(&config.default_subset, MAX_LABELS, || {
        "default_subset".into()
    })?;
    if config.metadata_fallbacks.len() > MAX_METADATA_FALLBACKS {
        return Err(HostTableError::TooManyMetadataFallbacks(
            config.metadata_fallbacks.len(),
        ));
    }
    for (index, fallback) in config.metadata_fallbacks.iter().enumerate() {
        if fallback.is_empty() {
            return Err(HostTableError::EmptyMetadataFallback { index });
        }
        entries(fallback, MAX_SELECTOR_KEYS, || {
            format!("metadata_fallbacks {index}")
        })?;
    }
    if config.panic_threshold > 100 {
        return Err(HostTableError::PanicThreshold(config.panic_threshold));
    }
    Ok(())
}

fn entries(
    map: &BTreeMap<String, String>,
    max: usize,
    place: impl Fn() -> String,
) -> Result<(), HostTableError> {
    if map.len() > max {
        return Err(HostTableError::TooManyEntries {
            place: place(),
            count: map.len(),
            max,
        });
    }
    map.iter().try_for_each(|(k, v)| label(k, v, &place))
}

fn selector(index: usize, selector: &SubsetSelector) -> Result<(), HostTableError> {
    let keys = &selector.keys;
    if keys.is_empty() {
        return Err(HostTableError::EmptySelector { index });
    }
    if keys.len() > MAX_SELECTOR_KEYS {
        return Err(HostTableError::TooManySelectorKeys {
            index,
            count: keys.len(),
        });
    }
    for (i, k) in keys.iter().enumerate() {
        key(k, || format!("selector {index}"))?;
        if keys[..i].contains(k) {
            return Err(HostTableError::DuplicateSelectorKey {
                index,
                key: shown(k),
            });
        }
    }
    keys_subset(index, selector)
}

fn keys_subset(index: usize, selector: &SubsetSelector) -> Result<(), HostTableError> {
    let subset = &selector.fallback_keys_subset;
    if selector.fallback_policy != SelectorFallback::KeysSubset {
        return match subset.is_empty() {
            true => Ok(()),
            false => Err(HostTableError::UnusedKeysSubset { index }),
        };
    }
    let strict = !subset.is_empty()
        && subset.len() < selector.keys.len()
        && subset.iter().all(|k| selector.keys.contains(k))
        && subset
            .iter()
            .enumerate()
            .all(|(i, k)| !subset[..i].contains(k));
    match strict {
        true => Ok(()),
        false => Err(HostTableError::InvalidKeysSubset { index }),
    }
}

fn same_keys(a: &[String], b: &[String]) -> bool {
    a.len() == b.len() && a.iter().all(|k| b.contains(k))
}
