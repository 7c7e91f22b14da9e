//! Finding the set a request picks from: Envoy's `chooseHostIteration`, over the index.

use super::pickset::{Pick, Pool, Rng, SetRef, pick_one};
use super::{Fallback, HostId, Metadata, SubsetLb, keys_hash};
use crate::{FallbackPolicy, SelectorFallback};

/// Where a pick happens.
#[derive(Debug, Clone, Copy)]
enum Target {
    Subset(SetRef),
    Any,
    Default,
}

/// What [`SubsetLb::clean_hit`] found.
#[derive(Debug)]
pub(super) enum Fast {
    /// A host, picked on the fast path.
    Picked(super::Selection),
    /// The request's subset, whose set needs the general pick (least request, a weighted
    /// set, an unhealthy member...): found once, not again by the general path.
    Found(SetRef),
    /// Anything else: the general path from the start.
    Miss,
}

impl SubsetLb {
    /// The usual lookup, as `iteration` takes it, without its branches and calls:
    /// the request names a subset whose set picks without reading a slot. The host picked
    /// counts one more request in flight. Otherwise nothing is changed (not the stats, not
    /// `rng`), and the general path takes over: at the subset's set if found.
    #[inline]
    pub(super) fn clean_hit(&mut self, md: &Metadata, rng: &mut Rng) -> Fast {
        // Empty metadata needs no test of its own: no subset has no ids, so it is not found.
        if self.options.allow_redundant_keys {
            return Fast::Miss;
        }
        let Some(found) = self.find_subset(md) else {
            return Fast::Miss;
        };
        let slot = match found.get() {
            Pool::Set(set) => {
                let policy = self.options.child.policy;
                self.sets[set as usize].pick_fast(&self.slots, &self.chains, policy, rng)
            }
            Pool::One(s) => self.slots[s as usize].healthy().then_some(s),
        };
        let Some(s) = slot else {
            return Fast::Found(found);
        };
        self.stats.subset_hits += 1;
        // The one read of the slot: its generation, and one more request in flight.
        let slot = &mut self.slots[s as usize];
        slot.active = slot.active.saturating_add(1);
        Fast::Picked(super::Selection {
            host: HostId {
                slot: s,
                generation: slot.generation,
            },
            fallback: Fallback::None,
            metadata_fallback: None,
            panic: false,
        })
    }

    /// The request's own metadata (whose subset's set is `found`, if known), then each
    /// metadata fallback merged over it.
    pub(super) fn with_fallbacks(
        &mut self,
        md: &Metadata,
        rng: &mut Rng,
        exclude: Option<u32>,
        found: Option<SetRef>,
    ) -> Option<super::Selection> {
        if let Some(chosen) = self.iteration(md, rng, exclude, found) {
            return Some(chosen);
        }
        for i in 0..self.metadata_fallbacks.len() {
            let mut merged = *md;
            for &(k, kv) in self.metadata_fallbacks[i].pairs() {
                merged.put_ids(k, kv);
            }
            merged.pack();
            if let Some(mut chosen) = self.iteration(&merged, rng, exclude, None) {
                chosen.metadata_fallback = Some(i as u8);
                return Some(chosen);
            }
        }
        None
    }

    /// Envoy's `chooseHostIteration`; `found`, the set of `md`'s subset when the fast path
    /// found it (only without `allow_redundant_keys`, which would cut `md` first).
    fn iteration(
        &mut self,
        md: &Metadata,
        rng: &mut Rng,
        exclude: Option<u32>,
        found: Option<SetRef>,
    ) -> Option<super::Selection> {
        let cut;
        let md = match self.options.allow_redundant_keys {
            true => {
                cut = self.without_redundant_keys(md);
                &cut
            }
            false => md,
        };
        if !md.is_empty() {
            if let Some(set) = found.or_else(|| self.find_subset(md)) {
                self.stats.subset_hits += 1;
                return self.pick(Target::Subset(set), Fallback::None, rng, exclude);
            }
            if let Some(selector) = self.selector_for(md) {
                let selector = &self.selectors[usize::from(selector)];
                match selector.fallback {
                    SelectorFallback::NoFallback => return None,
                    SelectorFallback::AnyEndpoint => {
                        return self.pick(Target::Any, Fallback::AnyEndpoint, rng, exclude);
                    }
                    SelectorFallback::DefaultSubset => {
                        return self.pick(Target::Default, Fallback::DefaultSubset, rng, exclude);
                    }
                    SelectorFallback::KeysSubset => {
                        let cut = md.only(&selector.keys_subset);
                        let mut chosen = self.iteration(&cut, rng, exclude, None)?;
                        if chosen.fallback == Fallback::None {
                            chosen.fallback = Fallback::KeysSubset;
                        }
                        return Some(chosen);
                    }
                    _ => {}
                }
            }
        }
        self.top_level(rng, exclude)
    }

    fn top_level(&mut self, rng: &mut Rng, exclude: Option<u32>) -> Option<super::Selection> {
        let (target, fallback) = match self.options.fallback_policy {
            FallbackPolicy::AnyEndpoint => (Target::Any, Fallback::AnyEndpoint),
            FallbackPolicy::DefaultSubset => (Target::Default, Fallback::DefaultSubset),
            _ => return None,
        };
        if let Some(chosen) = self.pick(target, fallback, rng, exclude) {
            self.stats.fallbacks += 1;
            return Some(chosen);
        }
        if !self.options.panic_mode_any {
            return None;
        }
        let chosen = self.pick(Target::Any, Fallback::PanicAny, rng, exclude)?;
        self.stats.panics += 1;
        Some(chosen)
    }

    /// `md` cut to the keys of the first selector whose keys it all has, if any.
    fn without_redundant_keys(&self, md: &Metadata) -> Metadata {
        self.selectors
            .iter()
            .find(|s| md.has_keys(&s.keys))
            .map_or(*md, |s| md.only(&s.keys))
    }

    /// The selector whose keys are exactly those of `md`.
    fn selector_for(&self, md: &Metadata) -> Option<u8> {
        if md.has_foreign_key() {
            return None;
        }
        let hash = keys_hash(md.pairs().iter().map(|&(k, _)| k));
        let selectors = &self.selectors;
        self.selector_table
            .find(hash, |&s| md.keys_are(&selectors[usize::from(s)].keys))
            .copied()
    }

    /// The set of the subset `md` names exactly: value ids imply their keys, so one probe on
    /// them finds it, without looking for the selector first.
    #[inline]
    pub(super) fn find_subset(&self, md: &Metadata) -> Option<SetRef> {
        if md.has_foreign_key() {
            return None;
        }
        let kvs = md.pairs().iter().map(|&(_, kv)| kv);
        debug_assert_eq!(
            md.key(),
            super::key::pack(kvs.clone(), md.len()),
            "a stale key"
        );
        self.subset_entry_keyed(md.key(), kvs, md.len())
            .map(|e| e.set)
    }

    fn pick(
        &mut self,
        target: Target,
        fallback: Fallback,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<super::Selection> {
        let child = self.options.child;
        let set = match target {
            Target::Subset(set) => match set.get() {
                Pool::Set(i) => &mut self.sets[i as usize],
                Pool::One(s) => {
                    return Some(self.picked(pick_one(s, &self.slots, child, exclude)?, fallback));
                }
            },
            Target::Default => match &mut self.default {
                Some((_, set)) => set,
                None => &mut self.any,
            },
            Target::Any => &mut self.any,
        };
        let pick = set.pick(&self.slots, &self.chains, child, rng, exclude)?;
        Some(self.picked(pick, fallback))
    }

    fn picked(&self, pick: Pick, fallback: Fallback) -> super::Selection {
        super::Selection {
            host: HostId {
                slot: pick.slot,
                generation: self.slots[pick.slot as usize].generation,
            },
            fallback,
            metadata_fallback: None,
            panic: pick.panic,
        }
    }
}
