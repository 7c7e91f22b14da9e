//! What changed between two versions of a host table, for a worker that holds the older one:
//! Envoy's incremental (delta) xDS for the host table.
//!
//! A table change usually touches a few hosts (one drained, one relabelled, health flips), but a
//! worker that gets the whole table decodes and indexes every host again, in each isolate. With
//! a [`HostDelta`] it applies the change to the index it has
//! ([`SubsetLb::apply`](crate::SubsetLb::apply)), touching only the changed hosts' subsets, and
//! keeps its in-flight counts. The daemon serves one only when the worker names the table it holds (by
//! its ETag) and the configuration is unchanged, and only while applying it is cheaper than a
//! rebuild; otherwise the whole table.

use alloc::{string::String, vec::Vec};

use hashbrown::{HashMap, HashSet};

use super::{Aligned, Host, HostTable, HostTableError, MAX_HOSTS, shown, validate, wire};

/// The header's magic of a delta.
const DELTA_MAGIC: [u8; 14] = *b"edgewise/delta";

type Fixed = foldhash::fast::FixedState;

/// Media type of [`HostDelta::encode`]'s bytes, as `GET /v1/hosts` serves them to a client
/// that lists it in `Accept`.
pub const HOST_DELTA_MEDIA_TYPE: &str = "application/x-edgewise-hosts-delta";

/// Changes from the table of version `from` to the table of version `version`, whose subset
/// configurations are equal.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Eq,
    Default,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(deny_unknown_fields)]
pub struct HostDelta {
    /// Version of the table the changes apply to.
    pub from: u64,
    /// Version of the table they make.
    pub version: u64,
    /// Hosts new or changed (weight, health or labels), whole.
    pub upserts: Vec<Host>,
    /// Addresses of the hosts gone.
    pub removed: Vec<String>,
}

impl HostDelta {
    /// The changes from `old` to `new`; `None` if their subset configurations differ (the
    /// index must then be built again).
    pub fn between(old: &HostTable, new: &HostTable) -> Option<HostDelta> {
        if old.subset != new.subset {
            return None;
        }
        let before: HashMap<&str, &Host, Fixed> =
            old.hosts.iter().map(|h| (h.address.as_str(), h)).collect();
        let upserts = new
            .hosts
            .iter()
            .filter(|h| before.get(h.address.as_str()) != Some(h))
            .cloned()
            .collect();
        let after: HashSet<&str, Fixed> = new.hosts.iter().map(|h| h.address.as_str()).collect();
        let removed = old
            .hosts
            .iter()
            .filter(|h| !after.contains(h.address.as_str()))
            .map(|h| h.address.clone())
            .collect();
        Some(HostDelta {
            from: old.version,
            version: new.version,
            upserts,
            removed,
        })
    }

    /// Hosts added, changed or removed.
    pub fn changes(&self) -> usize {
        self.upserts.len() + self.removed.len()
    }

    /// Whether nothing changes but the version.
    pub fn is_empty(&self) -> bool {
        self.changes() == 0
    }

    /// The delta's bytes, the body of `GET /v1/hosts` in [`HOST_DELTA_MEDIA_TYPE`]: a header
    /// naming the format (as a table's), then an rkyv archive. Validates first.
    pub fn encode(&self) -> Result<Vec<u8>, HostTableError> {
        self.validate()?;
        let archive = rkyv::to_bytes::<rkyv::rancor::Failure>(self)
            .map_err(|_| HostTableError::TooLargeToEncode)?;
        Ok(wire::frame(&DELTA_MAGIC, &archive))
    }

    /// Reads bytes made by [`HostDelta::encode`]: the header, then the archive checked byte by
    /// byte (bytecheck), then [`HostDelta::validate`]d; the upserted hosts are checked archived,
    /// where labels a `BTreeMap` would silently sort or merge are refused, as a table's are.
    pub fn decode(bytes: &[u8]) -> Result<HostDelta, HostTableError> {
        let aligned = Aligned::new(wire::unframe(&DELTA_MAGIC, bytes)?);
        let archived: &ArchivedHostDelta = aligned.access()?;
        validate::hosts(&archived.upserts[..])?;
        let delta = rkyv::deserialize::<HostDelta, rkyv::rancor::Failure>(archived)
            .map_err(|_| HostTableError::Malformed)?;
        delta.validate_removed()?;
        Ok(delta)
    }

    /// Each upserted host as a table's host; no address named twice, upserted or removed.
    /// Whether removed addresses exist is the index's business.
    pub fn validate(&self) -> Result<(), HostTableError> {
        validate::hosts(&self.upserts)?;
        self.validate_removed()
    }

    /// [`HostDelta::validate`] but for the upserted hosts themselves.
    fn validate_removed(&self) -> Result<(), HostTableError> {
        if self.removed.len() > MAX_HOSTS {
            return Err(HostTableError::TooManyHosts(self.removed.len()));
        }
        let mut seen: HashSet<&str, Fixed> =
            self.upserts.iter().map(|h| h.address.as_str()).collect();
        match self.removed.iter().find(|a| !seen.insert(a.as_str())) {
            Some(address) => Err(HostTableError::DeltaRepeatsAddress {
                address: shown(address),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
