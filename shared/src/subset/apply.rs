//! A table change applied in place: a [`HostDelta`] through the incremental updates, instead
//! of a build of the whole new table.

use alloc::vec::Vec;

use super::{SubsetError, SubsetLb};
use crate::{Host, HostDelta, MAX_HOSTS};

/// What [`SubsetLb::apply`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// Hosts new to the index.
    pub added: usize,
    /// Hosts gone.
    pub removed: usize,
    /// Hosts whose weight or health was set in place (same labels where they route: same
    /// subsets).
    pub updated: usize,
    /// Hosts with new values of keys that route (a selector's or the default subset's),
    /// moved between subsets (removed, then added).
    pub relabelled: usize,
}

/// What an upsert does to the index.
#[derive(Debug, Clone, Copy)]
enum Step {
    Add,
    Update,
    Relabel,
}

impl SubsetLb {
    /// Applies `delta`, made from the table of this index's version, in place; the index is
    /// then at `delta.version`. Removed hosts leave their subsets; new hosts join theirs; a
    /// changed host keeps its place (and its requests in flight) when only its weight, health
    /// or labels no selector or default subset has changed, and is removed and added again
    /// when labels that route did. Everything is checked before anything changes: after an
    /// error the index is as it was.
    pub fn apply(&mut self, delta: &HostDelta) -> Result<Applied, SubsetError> {
        if delta.from != self.version {
            return Err(SubsetError::DeltaBase {
                version: self.version,
                from: delta.from,
            });
        }
        delta.validate()?;
        let steps = self.plan(delta)?;
        let mut applied = Applied {
            removed: delta.removed.len(),
            ..Applied::default()
        };
        for address in &delta.removed {
            self.remove_host(address)?;
        }
        for (host, step) in delta.upserts.iter().zip(steps) {
            match step {
                Step::Add => applied.added += 1,
                Step::Update => applied.updated += 1,
                Step::Relabel => applied.relabelled += 1,
            }
            self.upsert(host, step)?;
        }
        self.version = delta.version;
        Ok(applied)
    }

    /// What each upsert will do, once every removed address is known and the hosts fit.
    fn plan(&self, delta: &HostDelta) -> Result<Vec<Step>, SubsetError> {
        for address in &delta.removed {
            self.known(address)?;
        }
        let routing = self.routing_keys();
        let steps: Vec<Step> = delta
            .upserts
            .iter()
            .map(|host| match self.find(&host.address) {
                None => Step::Add,
                Some(s) if self.same_labels(s, host, &routing) => Step::Update,
                Some(_) => Step::Relabel,
            })
            .collect();
        let added = steps.iter().filter(|s| matches!(s, Step::Add)).count();
        if self.len() - delta.removed.len() + added > MAX_HOSTS {
            return Err(SubsetError::Full);
        }
        for (index, (host, step)) in delta.upserts.iter().zip(&steps).enumerate() {
            if matches!(step, Step::Add | Step::Relabel) {
                let labels = host.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()));
                self.lists_allow(index, labels)?;
            }
        }
        Ok(steps)
    }

    /// Carries out one planned upsert; the plan leaves it nothing to refuse.
    fn upsert(&mut self, host: &Host, step: Step) -> Result<(), SubsetError> {
        match step {
            Step::Add => self.add(host).map(drop),
            Step::Update => {
                self.set_weight(&host.address, host.weight)?;
                self.set_healthy(&host.address, host.healthy)
            }
            Step::Relabel => {
                self.remove_host(&host.address)?;
                self.add(host).map(drop)
            }
        }
    }

    /// The keys whose values decide a host's subsets: the selectors' and the default
    /// subset's (sorted). A host's other labels are not routing state.
    fn routing_keys(&self) -> Vec<u32> {
        let selectors = self.selectors.iter().flat_map(|s| s.keys.iter().copied());
        let default = self.default.iter().flat_map(|(kvs, _)| kvs.iter());
        let default = default.map(|&kv| self.names.kv_key(kv));
        let mut keys: Vec<u32> = selectors.chain(default).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// Whether `host`'s labels of `routing` keys are those slot `s` was indexed with: the
    /// same key=value ids, looked up without interning (a value no host had is a change).
    /// Other labels may differ: a change to them alone (a build id, a deploy time) keeps the
    /// host where it is, with its requests in flight, rather than moving it and recounting
    /// its subsets.
    fn same_labels(&self, s: u32, host: &Host, routing: &[u32]) -> bool {
        let mut ids = Vec::with_capacity(host.labels.len());
        for (k, v) in &host.labels {
            // A key never interned is no selector's.
            let Some(key) = self.names.key(k) else {
                continue;
            };
            if routing.binary_search(&key).is_err() {
                continue;
            }
            let mut push = |value: &str| match self.names.kv(key, value) {
                Some(id) => ids.push(id),
                None => ids.push(u32::MAX),
            };
            match self.options.list_as_any {
                true => crate::hosttable::list_items(v).for_each(&mut push),
                false => push(v),
            }
        }
        if ids.contains(&u32::MAX) {
            return false;
        }
        let routes = |kv: &u32| routing.binary_search(&self.names.kv_key(*kv)).is_ok();
        let had = self.slots[s as usize].kvs.iter().copied();
        let mut had: Vec<u32> = had.filter(routes).collect();
        for list in [&mut ids, &mut had] {
            list.sort_unstable();
            list.dedup();
        }
        ids == had
    }
}
