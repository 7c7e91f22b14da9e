//! The host table: the upstream hosts of the subset load balancer, their labels and the subset
//! configuration, as one versioned value.
//!
//! The daemon loads it from its TOML configuration and serves it at `GET /v1/hosts` as rkyv
//! bytes ([`HostTable::encode`]); the worker fetches those bytes, or reads the same table as
//! JSON from a wrangler var, and rebuilds its [`SubsetLb`](crate::SubsetLb) only when
//! [`HostTable::version`] changes. Both formats go through [`HostTable::validate`], so a table
//! one side accepts the other accepts too, and a malformed table is refused with one error per
//! distinct mistake instead of half-building an index.
//!
//! ```
//! use edgewise::HostTable;
//!
//! let table: HostTable = serde_json::from_str(r#"{
//!     "version": 7,
//!     "hosts": [
//!         { "address": "http://10.0.0.1:8080", "labels": { "zone": "a", "version": "v1" } },
//!         { "address": "http://10.0.0.2:8080", "weight": 3, "labels": { "zone": "b" } }
//!     ],
//!     "subset": {
//!         "fallback_policy": "ANY_ENDPOINT",
//!         "selectors": [ { "keys": ["zone"] }, { "keys": ["zone", "version"] } ]
//!     }
//! }"#).unwrap();
//! let bytes = table.encode().unwrap();
//! assert_eq!(HostTable::decode(&bytes).unwrap(), table);
//! ```

mod config;
mod delta;
mod error;
mod validate;
mod view;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

use alloc::{collections::BTreeMap, string::String, vec::Vec};

use config::ArchivedSubsetConfig;
pub use config::{FallbackPolicy, LbPolicy, SelectorFallback, SubsetConfig, SubsetSelector};
pub use delta::{HOST_DELTA_MEDIA_TYPE, HostDelta};
pub use error::HostTableError;
pub(crate) use error::shown;
pub use validate::{
    MAX_ADDRESS_LEN, MAX_HOSTS, MAX_KEY_LEN, MAX_LABELS, MAX_LIST_SUBSETS, MAX_METADATA_FALLBACKS,
    MAX_SELECTOR_KEYS, MAX_SELECTORS, MAX_VALUE_LEN, MAX_WEIGHT,
};
pub(crate) use validate::{
    check_list_subsets, config as validate_config, count as validate_count, distinct_items,
    duplicate, host as validate_host, list_items,
};
pub(crate) use view::HostView;

/// Media type of [`HostTable::encode`]'s bytes, as `GET /v1/hosts` serves them.
pub const HOST_TABLE_MEDIA_TYPE: &str = "application/x-edgewise-hosts";

/// The upstream hosts and how requests are divided among them.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostTable {
    /// Version of the table: the worker rebuilds its index only when it changes. Optional in
    /// the daemon's file (0: the daemon derives one from the content).
    #[serde(default)]
    pub version: u64,
    /// The hosts, each address at most once, in any order.
    #[serde(default)]
    pub hosts: Vec<Host>,
    /// Subset selectors, fallbacks and the load balancing policy inside a subset.
    #[serde(default)]
    pub subset: SubsetConfig,
}

/// One upstream host.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(deny_unknown_fields)]
pub struct Host {
    /// Origin URL requests are forwarded to, e.g. `http://127.0.0.1:8081`; identifies the host.
    pub address: String,
    /// Relative share of the requests for the weighted policies, 1 to [`MAX_WEIGHT`].
    #[serde(default = "default_weight")]
    pub weight: u32,
    /// Whether the host takes traffic; unhealthy hosts are used only in panic (see
    /// [`SubsetConfig::panic_threshold`]).
    #[serde(default = "default_healthy")]
    pub healthy: bool,
    /// String labels matched by the subset selectors (Envoy's `envoy.lb` metadata). With
    /// [`SubsetConfig::list_as_any`], a comma-separated value is a list of values.
    // Archived (in a delta) as a flat vector of entries, not rkyv's B-tree: read once, in
    // order (checked to ascend, see `HostView::ORDERED`).
    #[serde(default)]
    #[rkyv(with = rkyv::with::AsVec)]
    pub labels: BTreeMap<String, String>,
}

impl Host {
    /// A healthy host of weight 1 without labels.
    pub fn new(address: impl Into<String>) -> Host {
        Host {
            address: address.into(),
            weight: default_weight(),
            healthy: default_healthy(),
            labels: BTreeMap::new(),
        }
    }

    /// The host with one more label.
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Host {
        self.labels.insert(key.into(), value.into());
        self
    }
}

/// Encoded bytes at an address an archive can be read at: borrowed when they already are
/// (a fetched body usually is), else copied.
pub(crate) enum Aligned<'a> {
    Borrowed(&'a [u8]),
    Copied(rkyv::util::AlignedVec<16>),
}

impl<'a> Aligned<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Aligned<'a> {
        if bytes.as_ptr().align_offset(16) == 0 {
            return Aligned::Borrowed(bytes);
        }
        let mut copy = rkyv::util::AlignedVec::<16>::with_capacity(bytes.len());
        copy.extend_from_slice(bytes);
        Aligned::Copied(copy)
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Aligned::Borrowed(b) => b,
            Aligned::Copied(c) => &c[..],
        }
    }

    /// The archive of type `T`, once rkyv has checked every byte of it.
    pub(crate) fn access<T>(&self) -> Result<&T, HostTableError>
    where
        T: rkyv::Portable
            + for<'c> rkyv::bytecheck::CheckBytes<
                rkyv::api::high::HighValidator<'c, rkyv::rancor::Failure>,
            >,
    {
        rkyv::access::<T, rkyv::rancor::Failure>(self.bytes())
            .map_err(|_| HostTableError::Malformed)
    }
}

/// The configuration of an archived table, owned: it is small, and the build interns it.
pub(crate) fn deserialize_config(
    config: &ArchivedSubsetConfig,
) -> Result<SubsetConfig, HostTableError> {
    // Deserializing inserts entry by entry: a repeated key would silently keep its last value.
    validate::archived_config_order(config)?;
    rkyv::deserialize::<SubsetConfig, rkyv::rancor::Failure>(config)
        .map_err(|_| HostTableError::Malformed)
}

fn default_weight() -> u32 {
    1
}

fn default_healthy() -> bool {
    true
}

impl HostTable {
    /// The table's bytes, the body of `GET /v1/hosts` (see [`HOST_TABLE_MEDIA_TYPE`]): a
    /// header naming the format, then an rkyv archive of the table with its labels interned.
    /// Validates first, so that nothing the worker would refuse is ever served.
    pub fn encode(&self) -> Result<Vec<u8>, HostTableError> {
        self.validate()?;
        wire::encode(self)
    }

    /// Reads bytes made by [`HostTable::encode`], checked as [`HostTable::validate`] checks a
    /// table. The load balancer reads them in place: [`SubsetLb::decode`](crate::SubsetLb::decode).
    pub fn decode(bytes: &[u8]) -> Result<HostTable, HostTableError> {
        wire::read(bytes, |table| table.validate().map(|()| table.to_table()))?
    }

    /// Puts the hosts in address order, as the daemon serves its tables: the same hosts in any
    /// order of its file give the same bytes. Routing is the same in any order.
    pub fn sort_hosts(&mut self) {
        self.hosts
            .sort_unstable_by(|a, b| a.address.cmp(&b.address));
    }

    /// Writes each address that is an origin URL in normal form, as [`Origin`](crate::Origin)
    /// writes it: lower-case scheme and host, a port without leading zeros and not the
    /// scheme's default, no trailing `/`. [`HostTable::validate`] refuses any other spelling;
    /// the daemon's file and the worker's var are read through this first.
    pub fn normalize_addresses(&mut self) {
        // Checked first in one pass without allocating: most addresses are written normally,
        // and a parse builds a `String` for each of up to a million.
        let spelled_otherwise = |a: &str| crate::Origin::check(a) == Ok(false);
        for host in self
            .hosts
            .iter_mut()
            .filter(|h| spelled_otherwise(&h.address))
        {
            if let Ok(origin) = crate::Origin::parse(&host.address) {
                host.address = origin.as_str().into();
            }
        }
    }

    /// Checks everything the load balancer relies on; see [`HostTableError`] for the rules.
    pub fn validate(&self) -> Result<(), HostTableError> {
        validate::table(self)
    }

    /// [`HostTable::encode`] without the validation, for tests of what decoders refuse.
    #[cfg(test)]
    pub(crate) fn encode_unchecked(&self) -> Vec<u8> {
        encode_unchecked(self).unwrap()
    }
}

/// [`HostTable::encode`] without the validation (the caller has, or a test wants bytes the
/// decoders refuse).
pub(crate) fn encode_unchecked(table: &HostTable) -> Result<Vec<u8>, HostTableError> {
    wire::encode(table)
}
