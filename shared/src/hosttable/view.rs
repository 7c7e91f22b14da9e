//! One way to read a host, owned or archived: the load balancer builds from the daemon's bytes
//! in place ([`SubsetLb::decode`](crate::SubsetLb::decode)), without deserializing every host
//! into `String`s and a `BTreeMap` first, and from a [`HostTable`](crate::HostTable) in memory,
//! by the same code; the validation reads both the same way.

use super::{ArchivedHost, Host};

/// What the validation and the index read of a host.
pub(crate) trait HostView {
    /// Whether labels come strictly ascending by key (a `BTreeMap` guarantees it; an archive
    /// is checked).
    const ORDERED: bool;

    fn address(&self) -> &str;
    fn weight(&self) -> u32;
    fn label_count(&self) -> usize;
    /// The labels, in the stored order: key order, unless an archive was crafted otherwise.
    fn labels(&self) -> impl Iterator<Item = (&str, &str)>;
}

impl HostView for Host {
    const ORDERED: bool = true;

    fn address(&self) -> &str {
        &self.address
    }

    fn weight(&self) -> u32 {
        self.weight
    }

    fn label_count(&self) -> usize {
        self.labels.len()
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        self.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

impl HostView for ArchivedHost {
    const ORDERED: bool = false;

    fn address(&self) -> &str {
        &self.address
    }

    fn weight(&self) -> u32 {
        self.weight.to_native()
    }

    fn label_count(&self) -> usize {
        self.labels.len()
    }

    fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (self.labels.iter()).map(|e| (e.key.as_str(), e.value.as_str()))
    }
}
