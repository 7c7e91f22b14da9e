//! The keys a request sets, resolved against a load balancer once instead of per pair: a
//! proxy's metadata keys come from its configuration (`x-edgewise-zone` becomes `zone`), so
//! only the values are new per request. Setting a pair by a resolved key skips finding the
//! key's id by its text.
//!
//! A key keeps its id while its load balancer lives (updates only add keys), so resolved ids
//! hold as long as the load balancer is the one they were resolved against: each gets a
//! serial of its own, as a rebuilt one interns anew. Keys of another load balancer, and keys
//! unknown when resolved (an update may bring them), are set by name: slower, never wrong.

use alloc::{boxed::Box, string::String};
use core::sync::atomic::{AtomicU64, Ordering};

use super::SubsetLb;
use super::metadata::{Metadata, UNKNOWN_VALUE};

/// A key no host or configuration knew when resolved.
const UNKNOWN_KEY: u32 = u32::MAX;

static SERIALS: AtomicU64 = AtomicU64::new(0);

/// A serial no other load balancer of this process has.
pub(super) fn serial() -> u64 {
    SERIALS.fetch_add(1, Ordering::Relaxed)
}

/// Metadata keys resolved against a [`SubsetLb`]: made by [`SubsetLb::request_keys`], used
/// per request by [`SubsetLb::set_key`] (the `i`-th key, in the order given) or
/// [`SubsetLb::set_values`] (all of a request's values at once).
///
/// ```
/// use edgewise::{Host, HostTable, SubsetLb, SubsetSelector};
///
/// let mut table = HostTable::default();
/// table.hosts.push(Host::new("http://10.0.0.1").with_label("zone", "a"));
/// table.hosts.push(Host::new("http://10.0.0.2").with_label("zone", "b"));
/// table.subset.selectors.push(SubsetSelector::new(["zone"]));
/// let mut lb = SubsetLb::build(&table).unwrap();
/// let keys = lb.request_keys(["zone"]);
///
/// let mut md = lb.metadata();
/// lb.set_key(&mut md, &keys, 0, "b");
/// let chosen = lb.select(&md, 42).unwrap();
/// assert_eq!(lb.address(chosen.host), Some("http://10.0.0.2"));
/// ```
#[derive(Debug, Clone)]
pub struct RequestKeys {
    names: Box<[String]>,
    /// Key id per name, or [`UNKNOWN_KEY`].
    ids: Box<[u32]>,
    /// The load balancer's serial, and its key count, when resolved.
    serial: u64,
    key_count: usize,
}

impl RequestKeys {
    /// The keys' names, in the order given.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }

    /// The id of the `i`-th key, if known to the load balancer of `serial`.
    #[inline]
    fn id(&self, i: usize, serial: u64) -> Option<u32> {
        let id = *self.ids.get(i)?;
        (serial == self.serial && id != UNKNOWN_KEY).then_some(id)
    }
}

impl SubsetLb {
    /// Resolves `names`, the metadata keys requests will set, for [`SubsetLb::set_key`]. Keep
    /// the result beside the load balancer, and [`SubsetLb::resolve`] it again after updates
    /// and rebuilds.
    pub fn request_keys<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> RequestKeys {
        let names: Box<[String]> = names.into_iter().map(String::from).collect();
        let ids = names.iter().map(|n| self.key_id(n)).collect();
        RequestKeys {
            names,
            ids,
            serial: self.serial,
            key_count: self.names.key_count(),
        }
    }

    /// Resolves `keys` again if they were resolved against another load balancer, or before
    /// an update brought new keys (which they may name); nothing to do when neither.
    pub fn resolve(&self, keys: &mut RequestKeys) {
        let key_count = self.names.key_count();
        if (keys.serial, keys.key_count) != (self.serial, key_count) {
            for (id, name) in keys.ids.iter_mut().zip(&keys.names) {
                *id = self.key_id(name);
            }
            (keys.serial, keys.key_count) = (self.serial, key_count);
        }
    }

    /// [`SubsetLb::set`] of `keys`' `i`-th key to `value`. Keys of another load balancer,
    /// or unknown when resolved, are set by name, as `set` would; an `i` past the keys makes
    /// `md` match no subset, as an unknown key does.
    #[inline]
    pub fn set_key(&self, md: &mut Metadata, keys: &RequestKeys, i: usize, value: &str) {
        match keys.id(i, self.serial) {
            Some(k) => md.put_ids(k, self.names.kv(k, value).unwrap_or(UNKNOWN_VALUE)),
            None => self.put_key_by_name(md, keys, i, value),
        }
    }

    /// Sets a request's values in `md`, each by its key's position in `keys`, as
    /// [`SubsetLb::set_key`] sets them.
    #[inline]
    pub fn set_values<'v>(
        &self,
        md: &mut Metadata,
        keys: &RequestKeys,
        values: impl IntoIterator<Item = (usize, &'v str)>,
    ) {
        for (i, value) in values {
            self.set_key(md, keys, i, value);
        }
    }

    #[cold]
    fn put_key_by_name(&self, md: &mut Metadata, keys: &RequestKeys, i: usize, value: &str) {
        match keys.names.get(i) {
            Some(name) => md.put_str(&self.names, name, value),
            None => md.set_foreign(),
        }
    }

    fn key_id(&self, name: &str) -> u32 {
        self.names.key(name).unwrap_or(UNKNOWN_KEY)
    }
}
