//! A naive subset load balancer written straight from Envoy's `chooseHostIteration`: subsets
//! are recomputed by scanning every host for every request. The index must agree with it.

extern crate std;

use std::collections::{BTreeMap, BTreeSet};
use std::string::String;
use std::vec;
use std::vec::Vec;

use crate::{Fallback, FallbackPolicy, Host, SelectorFallback, SubsetConfig};

/// What the reference expects of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expected {
    pub fallback: Fallback,
    pub metadata_fallback: Option<u8>,
    pub panic: bool,
    /// Addresses the pick may return.
    pub pool: BTreeSet<String>,
}

pub struct Reference<'a> {
    pub config: &'a SubsetConfig,
    /// Live hosts.
    pub hosts: Vec<&'a Host>,
}

pub type Request = BTreeMap<String, String>;

impl Reference<'_> {
    fn values<'h>(&self, host: &'h Host, key: &str) -> Vec<&'h str> {
        match host.labels.get(key) {
            None => Vec::new(),
            Some(v) if self.config.list_as_any => v
                .split(',')
                .map(str::trim)
                .filter(|i| !i.is_empty())
                .collect(),
            Some(v) => vec![v.as_str()],
        }
    }

    fn matches(&self, host: &Host, pairs: &Request) -> bool {
        pairs
            .iter()
            .all(|(k, v)| self.values(host, k).contains(&v.as_str()))
    }

    pub fn members(&self, pairs: &Request) -> Vec<&Host> {
        let hosts = self.hosts.iter().copied();
        hosts.filter(|h| self.matches(h, pairs)).collect()
    }

    pub fn selector_for(&self, md: &Request) -> Option<&crate::SubsetSelector> {
        let keys: BTreeSet<&String> = md.keys().collect();
        self.config
            .selectors
            .iter()
            .find(|s| s.keys.iter().collect::<BTreeSet<_>>() == keys)
    }

    /// Every subset with at least one host: (selector keys, values).
    pub fn active_subsets(&self) -> BTreeSet<Request> {
        let mut out = BTreeSet::new();
        for selector in &self.config.selectors {
            for host in &self.hosts {
                let mut combos = vec![Request::new()];
                for key in &selector.keys {
                    let values = self.values(host, key);
                    combos = combos
                        .iter()
                        .flat_map(|c| {
                            values.iter().map(move |v| {
                                let mut c = c.clone();
                                c.insert(key.clone(), (*v).into());
                                c
                            })
                        })
                        .collect();
                }
                out.extend(combos);
            }
        }
        out
    }

    pub fn select(&self, md: &Request, exclude: Option<&str>) -> Option<Expected> {
        if let Some(e) = self.iteration(md, exclude) {
            return Some(e);
        }
        for (i, fallback) in self.config.metadata_fallbacks.iter().enumerate() {
            let mut merged = md.clone();
            merged.extend(fallback.clone());
            if let Some(mut e) = self.iteration(&merged, exclude) {
                e.metadata_fallback = Some(i as u8);
                return Some(e);
            }
        }
        None
    }

    fn iteration(&self, md: &Request, exclude: Option<&str>) -> Option<Expected> {
        let mut md = md.clone();
        if self.config.allow_redundant_keys {
            let first = self
                .config
                .selectors
                .iter()
                .find(|s| s.keys.iter().all(|k| md.contains_key(k)));
            if let Some(s) = first {
                md.retain(|k, _| s.keys.contains(k));
            }
        }
        if !md.is_empty()
            && let Some(selector) = self.selector_for(&md)
        {
            let members = self.members(&md);
            // `fallback_on_unhealthy`: a subset with no healthy host is no match.
            let unusable = selector.fallback_on_unhealthy && members.iter().all(|h| !h.healthy);
            if !members.is_empty() && !unusable {
                let single = selector.single_host_per_subset;
                return self.pick(&members, single, Fallback::None, exclude);
            }
            match selector.fallback_policy {
                SelectorFallback::NoFallback => return None,
                SelectorFallback::AnyEndpoint => {
                    return self.pick(&self.hosts, false, Fallback::AnyEndpoint, exclude);
                }
                SelectorFallback::DefaultSubset => {
                    return self.pick(&self.default(), false, Fallback::DefaultSubset, exclude);
                }
                SelectorFallback::KeysSubset => {
                    let keep = &selector.fallback_keys_subset;
                    let cut = md.iter().filter(|(k, _)| keep.contains(k));
                    let cut: Request = cut.map(|(k, v)| (k.clone(), v.clone())).collect();
                    let mut e = self.iteration(&cut, exclude)?;
                    if e.fallback == Fallback::None {
                        e.fallback = Fallback::KeysSubset;
                    }
                    return Some(e);
                }
                _ => {}
            }
        }
        let (set, fallback) = match self.config.fallback_policy {
            FallbackPolicy::AnyEndpoint => (self.hosts.clone(), Fallback::AnyEndpoint),
            FallbackPolicy::DefaultSubset => (self.default(), Fallback::DefaultSubset),
            _ => return None,
        };
        if let Some(e) = self.pick(&set, false, fallback, exclude) {
            return Some(e);
        }
        if !self.config.panic_mode_any {
            return None;
        }
        self.pick(&self.hosts, false, Fallback::PanicAny, exclude)
    }

    fn default(&self) -> Vec<&Host> {
        self.members(&self.config.default_subset)
    }

    fn pick(
        &self,
        set: &[&Host],
        single: bool,
        fallback: Fallback,
        exclude: Option<&str>,
    ) -> Option<Expected> {
        let threshold = usize::from(self.config.panic_threshold);
        let (panic, pool): (bool, Vec<&Host>) = if single {
            // The lowest address, as in every isolate.
            let first = set.iter().min_by_key(|h| h.address.as_str())?;
            let panic = !first.healthy && threshold > 0;
            (panic, vec![*first])
        } else {
            let healthy = set.iter().filter(|h| h.healthy).count();
            let panic = healthy * 100 < threshold * set.len();
            let pool = set.iter().filter(|h| panic || h.healthy);
            (panic, pool.copied().collect())
        };
        let pool: BTreeSet<String> = pool
            .into_iter()
            .filter(|h| healthy_or(panic, h) && Some(h.address.as_str()) != exclude)
            .map(|h| h.address.clone())
            .collect();
        (!pool.is_empty()).then_some(Expected {
            fallback,
            metadata_fallback: None,
            panic,
            pool,
        })
    }
}

fn healthy_or(panic: bool, host: &Host) -> bool {
    panic || host.healthy
}
