//! One way to read a host, owned or archived: the subset index is built straight from the
//! rkyv bytes the daemon serves ([`SubsetLb::decode`](crate::SubsetLb::decode)), without
//! deserializing 100k hosts into a `BTreeMap` and nine `String`s each first, and from a
//! [`HostTable`](crate::HostTable) in memory, by the same code.

use core::ops::ControlFlow;

use super::{ArchivedHost, Host};

/// What the validation and the index read of a host.
pub(crate) trait HostView {
    /// Whether labels come strictly ascending by key (a `BTreeMap` guarantees it; an archive
    /// from elsewhere is checked).
    const ORDERED: bool;

    fn address(&self) -> &str;
    fn weight(&self) -> u32;
    fn healthy(&self) -> bool;
    fn label_count(&self) -> usize;
    /// Calls `f` on each label in the stored order (key order, unless an archive was crafted
    /// otherwise) until it breaks; returns what it broke with.
    fn visit_labels<B>(&self, f: impl FnMut(&str, &str) -> ControlFlow<B>) -> Option<B>;
}

impl HostView for Host {
    const ORDERED: bool = true;

    fn address(&self) -> &str {
        &self.address
    }

    fn weight(&self) -> u32 {
        self.weight
    }

    fn healthy(&self) -> bool {
        self.healthy
    }

    fn label_count(&self) -> usize {
        self.labels.len()
    }

    fn visit_labels<B>(&self, mut f: impl FnMut(&str, &str) -> ControlFlow<B>) -> Option<B> {
        self.labels
            .iter()
            .try_for_each(|(k, v)| f(k, v))
            .break_value()
    }
}

impl HostView for ArchivedHost {
    // The labels are archived as a vector of entries, in whatever order the encoder wrote.
    const ORDERED: bool = false;

    fn address(&self) -> &str {
        &self.address
    }

    fn weight(&self) -> u32 {
        self.weight.to_native()
    }

    fn healthy(&self) -> bool {
        self.healthy
    }

    fn label_count(&self) -> usize {
        self.labels.len()
    }

    fn visit_labels<B>(&self, mut f: impl FnMut(&str, &str) -> ControlFlow<B>) -> Option<B> {
        let mut labels = self.labels.iter();
        labels.try_for_each(|e| f(&e.key, &e.value)).break_value()
    }
}
