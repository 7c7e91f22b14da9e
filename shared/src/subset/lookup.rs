//! Finding the set a request picks from: Envoy's `chooseHostIteration`, over the index.

use super::pick::{self, Context, Rng};
use super::subsets::Subset;
use super::{Fallback, Metadata, Options, Selection, Slot, SubsetLb};
use crate::{FallbackPolicy, SelectorFallback};

/// Where a pick happens.
#[derive(Debug, Clone, Copy)]
enum Target {
    Subset(Subset),
    Any,
    Default,
}

impl Context<'_> {
    fn new(slots: &[Slot], options: Options, weighted_hosts: usize) -> Context<'_> {
        Context {
            slots,
            policy: pick::policy(options.policy),
            panic_threshold: options.panic_threshold,
            weighted: weighted_hosts > 0,
        }
    }
}

impl SubsetLb {
    /// The request's own metadata, then each metadata fallback merged over it.
    pub(super) fn with_fallbacks(
        &mut self,
        md: &Metadata,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<Selection> {
        if let Some(chosen) = self.iteration(md, rng, exclude) {
            return Some(chosen);
        }
        for i in 0..self.metadata_fallbacks.len() {
            let mut merged = *md;
            for &(k, kv) in self.metadata_fallbacks[i].pairs() {
                merged.put_ids(k, kv);
            }
            if let Some(mut chosen) = self.iteration(&merged, rng, exclude) {
                chosen.metadata_fallback = Some(i as u8);
                return Some(chosen);
            }
        }
        None
    }

    /// Envoy's `chooseHostIteration`.
    fn iteration(
        &mut self,
        md: &Metadata,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<Selection> {
        let cut;
        let md = match self.options.allow_redundant_keys {
            true => {
                cut = self.without_redundant_keys(md);
                &cut
            }
            false => md,
        };
        if !md.is_empty() {
            let (kvs, len) = md.kvs();
            let found = match md.has_foreign_key() {
                true => None,
                false => self.subsets.get(&kvs[..len]),
            };
            let selector = || {
                self.selector_for(md)
                    .map(|s| &self.selectors[usize::from(s)])
            };
            // `fallback_on_unhealthy`: a subset without a healthy host is no match.
            let usable = |subset| {
                !self.on_unhealthy
                    || self.subsets.any_healthy(subset, &self.slots)
                    || !selector().is_some_and(|s| s.on_unhealthy)
            };
            if let Some(subset) = found.filter(|&s| usable(s)) {
                self.stats.subset_hits += 1;
                return self.pick(Target::Subset(subset), Fallback::None, rng, exclude);
            }
            if let Some(selector) = selector() {
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
                        let mut chosen = self.iteration(&cut, rng, exclude)?;
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

    fn top_level(&mut self, rng: &mut Rng, exclude: Option<u32>) -> Option<Selection> {
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
        let mut keys = [0; super::METADATA_CAPACITY];
        for (slot, &(k, _)) in keys.iter_mut().zip(md.pairs()) {
            *slot = k;
        }
        self.selector_of.get(&keys[..md.len()]).copied()
    }

    fn pick(
        &mut self,
        target: Target,
        fallback: Fallback,
        rng: &mut Rng,
        exclude: Option<u32>,
    ) -> Option<Selection> {
        let cx = Context::new(&self.slots, self.options, self.weighted_hosts);
        let (slot, panic) = match target {
            Target::Subset(subset) => self.subsets.pick(subset, &cx, rng, exclude)?,
            Target::Default => match &mut self.default {
                Some((_, set)) => set.pick(&cx, rng, exclude)?,
                None => self.any.pick(&cx, rng, exclude)?,
            },
            Target::Any => self.any.pick(&cx, rng, exclude)?,
        };
        Some(Selection {
            host: super::HostId {
                slot,
                generation: self.slots[slot as usize].generation,
            },
            fallback,
            metadata_fallback: None,
            panic,
        })
    }
}
