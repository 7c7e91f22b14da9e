//! The rules of [`HostTable::validate`](crate::HostTable::validate), and of archived tables:
//! there, maps must also be strictly ascending by key, as a `BTreeMap` is.

use alloc::{collections::BTreeMap, format, string::String, vec, vec::Vec};
use core::ops::ControlFlow;

use hashbrown::HashMap;

use super::config::ArchivedSubsetConfig;
use super::error::shown;
use super::view::HostView;
use super::{HostTable, HostTableError, SelectorFallback, SubsetConfig, SubsetSelector};
use crate::origin::Scanned;
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

/// Every rule of a table, given as its hosts (owned or archived) and its configuration.
pub(crate) fn parts<H: HostView>(hosts: &[H], config: &SubsetConfig) -> Result<(), HostTableError> {
    self::hosts(hosts)?;
    self::config(config)?;
    lists(hosts, config)
}

/// With `list_as_any`, checks [`check_list_subsets`] for each host.
fn lists<H: HostView>(hosts: &[H], config: &SubsetConfig) -> Result<(), HostTableError> {
    if !config.list_as_any {
        return Ok(());
    }
    // Each selector's keys as positions among all selectors' keys, for a host's labels to be
    // counted in one visit.
    let mut keys: BTreeMap<&str, usize> = BTreeMap::new();
    let selectors: Vec<Vec<usize>> = (config.selectors.iter())
        .map(|s| s.keys.iter().map(|k| position(&mut keys, k)).collect())
        .collect();
    let mut items = vec![0; keys.len()];
    for (index, host) in hosts.iter().enumerate() {
        items.fill(0);
        let mut all = 1u64;
        host.visit_labels(|k, v| {
            if let Some(&i) = keys.get(k) {
                items[i] = distinct_items(v);
                all = all.saturating_mul(items[i].max(1));
            }
            ControlFlow::<()>::Continue(())
        });
        let selectors = selectors.iter().map(|s| s.iter());
        check_list_subsets(index, selectors, |&i| items[i], all)?;
    }
    Ok(())
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
    if hosts.len() > MAX_HOSTS {
        return Err(HostTableError::TooManyHosts(hosts.len()));
    }
    let scanned = scan_addresses(hosts.iter().map(H::address));
    if scanned.order() == Some(true) {
        // Addresses ascending strictly repeat none.
        return hosts
            .iter()
            .enumerate()
            .try_for_each(|(index, host)| checked_host(index, host, true));
    }
    let mut seen =
        HashMap::with_capacity_and_hasher(hosts.len(), foldhash::fast::FixedState::default());
    for (index, host) in hosts.iter().enumerate() {
        checked_host(index, host, scanned.plain)?;
        if let Some(first) = seen.insert(host.address(), index) {
            return Err(HostTableError::DuplicateAddress {
                first,
                index,
                address: shown(host.address()),
            });
        }
    }
    Ok(())
}

/// Checks one host on its own (the address's uniqueness is the table's business).
pub(crate) fn host<H: HostView>(index: usize, host: &H) -> Result<(), HostTableError> {
    checked_host(index, host, false)
}

/// Whether every address is a plain valid origin, and whether they ascend strictly (see
/// [`scan_plain`](crate::origin::scan_plain)); addresses not all plain are checked one by one.
pub(crate) fn scan_addresses<'a, A>(addresses: impl Iterator<Item = &'a A>) -> Scanned
where
    A: AsRef<[u8]> + ?Sized + 'a,
{
    crate::origin::scan_plain(addresses, MAX_ADDRESS_LEN)
}

/// [`host`], but for its address when `address_valid`.
fn checked_host<H: HostView>(
    index: usize,
    host: &H,
    address_valid: bool,
) -> Result<(), HostTableError> {
    host_but_labels(index, host, address_valid)?;
    let place = || format!("host {index}");
    let mut previous = PreviousKey::default();
    let broken = host.visit_labels(|k, v| {
        if let Err(e) = label(k, v, place) {
            return ControlFlow::Break(e);
        }
        if !H::ORDERED && !previous.precedes(k) {
            return ControlFlow::Break(HostTableError::LabelsOutOfOrder { index });
        }
        ControlFlow::Continue(())
    });
    broken.map_or(Ok(()), Err)
}

/// [`host`] short of a walk of the labels, and of the address when `address_valid` (it passed
/// [`scan_addresses`]): the labels' count is checked, each one is left to the caller. The
/// index build makes the same checks by [`host_fits_but_labels`] and [`label_fits`] as it
/// interns the labels, one walk of each host's labels instead of two.
fn host_but_labels<H: HostView>(
    index: usize,
    host: &H,
    address_valid: bool,
) -> Result<(), HostTableError> {
    if !address_valid {
        address(index, host.address())?;
    }
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
    Ok(())
}

/// Whether `host` passes [`host_but_labels`], as a yes or no: the build only needs that, and
/// making (then dropping) the `Result` cost ~28 instructions a host.
pub(crate) fn host_fits_but_labels<H: HostView>(host: &H, address_valid: bool) -> bool {
    (address_valid || address_fits(host.address()))
        & weight_fits(host.weight())
        & label_count_fits(host.label_count())
}

/// Whether a weight passes the checks of [`host_but_labels`]: 1 to [`MAX_WEIGHT`].
pub(crate) fn weight_fits(weight: u32) -> bool {
    (1..=MAX_WEIGHT).contains(&weight)
}

/// Whether a host's label count passes the checks of [`host_but_labels`].
pub(crate) fn label_count_fits(count: usize) -> bool {
    count <= MAX_LABELS
}

/// Whether an address passes the checks of [`address`], as a yes or no.
pub(crate) fn address_fits(a: &str) -> bool {
    address(0, a).is_ok()
}

/// Whether a label passes the checks of [`label`], as a yes or no: the build only needs that,
/// and tests it on every label without a branch.
pub(crate) fn label_fits(k: &str, v: &str) -> bool {
    !k.is_empty() & (k.len() <= MAX_KEY_LEN) & (v.len() <= MAX_VALUE_LEN)
}

/// The last label key seen, copied (a visit lends each key for one call only), to check that
/// an archive's keys are strictly ascending as a `BTreeMap`'s are.
struct PreviousKey {
    bytes: [u8; MAX_KEY_LEN],
    len: Option<usize>,
}

impl Default for PreviousKey {
    fn default() -> PreviousKey {
        PreviousKey {
            bytes: [0; MAX_KEY_LEN],
            len: None,
        }
    }
}

impl PreviousKey {
    /// Whether `key` (at most [`MAX_KEY_LEN`] bytes) comes strictly after the previous key;
    /// it becomes the previous key.
    fn precedes(&mut self, key: &str) -> bool {
        let key = key.as_bytes();
        let after = self.len.is_none_or(|len| before(&self.bytes[..len], key));
        self.bytes[..key.len()].copy_from_slice(key);
        self.len = Some(key.len());
        after
    }
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
        let ok = last.is_none_or(|l| before(l.as_bytes(), k.as_bytes()));
        last = Some(k);
        ok
    })
}

/// Whether `a` sorts strictly before `b`, as `a < b` does, without the `memcmp` call a slice
/// comparison makes (a byte loop in Wasm, and a call that cost more than comparing a label key
/// of a few bytes): where they part, found 8 bytes at a time, as the address scan finds it.
pub(crate) fn before(a: &[u8], b: &[u8]) -> bool {
    crate::origin::precedes_at(a, b, crate::origin::shared_prefix(a, b))
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

#[cfg(test)]
mod tests {
    use alloc::vec::Vec;

    use super::{MAX_LABELS, MAX_WEIGHT};

    use proptest::prelude::*;

    /// Words of every length around the 8-byte steps, differing in their last bytes, by bytes
    /// at both ends of the range.
    #[test]
    fn before_orders_as_slices_do() {
        let bases: [&[u8]; 7] = [
            b"",
            b"1234567",
            b"12345678",
            b"123456789",
            b"http://10.0.0.1",
            b"http://10.0.0.1:",
            b"http://10.0.0.1:80",
        ];
        let mut suffixes: Vec<Vec<u8>> = alloc::vec![Vec::new()];
        for a in [0u8, b'a', 255] {
            suffixes.push(alloc::vec![a]);
            for b in [0u8, b'a', 255] {
                suffixes.push(alloc::vec![a, b]);
            }
        }
        let words: Vec<Vec<u8>> = bases
            .iter()
            .flat_map(|base| suffixes.iter().map(|s| [*base, &s[..]].concat()))
            .collect();
        for a in &words {
            for b in &words {
                assert_eq!(super::before(a, b), a < b, "{a:?} {b:?}");
            }
        }
    }

    proptest! {
        #[test]
        fn byte_loop_orders_as_slices_do(
            a in prop::collection::vec(0u8..4, 0..6),
            b in prop::collection::vec(0u8..4, 0..6),
        ) {
            let (a, b): (Vec<u8>, Vec<u8>) = (a, b);
            prop_assert_eq!(super::before(&b, &a), a > b);
        }

        #[test]
        fn before_orders_random_bytes_as_slices_do(
            a in prop::collection::vec(prop::sample::select(&[0u8, 1, b'.', 254, 255][..]), 0..40),
            b in prop::collection::vec(prop::sample::select(&[0u8, 1, b'.', 254, 255][..]), 0..40),
        ) {
            prop_assert_eq!(super::before(&a, &b), a < b);
            let shared = [&a[..], &b[..]].concat();
            prop_assert_eq!(super::before(&shared, &a), shared[..] < a[..]);
        }

        /// The build's yes-or-no host check and the one naming the broken rule are one rule set.
        #[test]
        fn host_fits_as_host_checks(
            address in prop::sample::select(alloc::vec!["http://a:1", "ftp://a", "", "http://a:0"]),
            weight in 0u32..MAX_WEIGHT + 3,
            labels in 0usize..MAX_LABELS + 3,
            valid in any::<bool>(),
        ) {
            let mut host = crate::Host { weight, ..crate::Host::new(address) };
            host.labels = (0..labels).map(|i| (alloc::format!("k{i}"), "v".into())).collect();
            // `valid` is true only for addresses that are.
            let valid = valid && super::address(0, address).is_ok();
            let checked = super::host_but_labels(0, &host, valid).is_ok();
            prop_assert_eq!(super::host_fits_but_labels(&host, valid), checked);
        }

        /// The build's yes-or-no label check and the one naming the broken rule are one rule set.
        #[test]
        fn label_fits_as_label_checks(k in 0usize..140, v in 0usize..270) {
            let (k, v) = ("k".repeat(k), "v".repeat(v));
            let checked = super::label(&k, &v, || "host 0".into()).is_ok();
            prop_assert_eq!(super::label_fits(&k, &v), checked);
        }
    }
}
