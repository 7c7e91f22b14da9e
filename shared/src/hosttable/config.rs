//! The subset configuration: Envoy's `LbSubsetConfig`, spelled as Envoy spells it.

use alloc::{collections::BTreeMap, string::String, vec::Vec};

/// What a request gets when no subset matches its metadata (Envoy's `fallback_policy`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum FallbackPolicy {
    /// No host: the request fails as if the cluster were empty.
    #[default]
    NoFallback,
    /// Any host of the table.
    AnyEndpoint,
    /// A host of [`SubsetConfig::default_subset`].
    DefaultSubset,
}

/// A selector's own fallback, used when the request's keys are exactly the selector's keys
/// (Envoy's `LbSubsetSelectorFallbackPolicy`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum SelectorFallback {
    /// Use the top-level [`SubsetConfig::fallback_policy`].
    #[default]
    NotDefined,
    /// No host.
    NoFallback,
    /// Any host of the table.
    AnyEndpoint,
    /// A host of [`SubsetConfig::default_subset`].
    DefaultSubset,
    /// Look up again with only the [`SubsetSelector::fallback_keys_subset`] keys of the request.
    KeysSubset,
}

/// How a host is picked inside the chosen subset.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum LbPolicy {
    /// Each host in turn, from a random one (per isolate and set), as many turns per cycle as
    /// its weight, spread over the cycle (plain turns when all weigh the same).
    #[default]
    RoundRobin,
    /// At random, in proportion to the hosts' weights.
    Weighted,
    /// Uniformly at random, weights ignored.
    Random,
    /// The one with fewer requests in flight of two random hosts (power of two choices); when
    /// weights differ, two hosts drawn in proportion to weight, compared by requests in
    /// flight per unit of weight.
    LeastRequest,
}

/// One subset selector: every combination of values of these keys found on the hosts is a
/// subset.
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
pub struct SubsetSelector {
    /// The label keys, in any order.
    pub keys: Vec<String>,
    /// Fallback for requests whose keys are exactly [`SubsetSelector::keys`].
    #[serde(default)]
    pub fallback_policy: SelectorFallback,
    /// With [`SelectorFallback::KeysSubset`]: the keys to retry with, a strict subset of `keys`.
    #[serde(default)]
    pub fallback_keys_subset: Vec<String>,
    /// Each subset of this selector is a single host (of the matching hosts, the one with the
    /// lowest address, the same in every isolate), for keys whose value is unique per host.
    #[serde(default)]
    pub single_host_per_subset: bool,
    /// A subset of this selector whose hosts are all unhealthy counts as no match: the
    /// selector's fallback, then the top-level one, apply (Envoy picks in it regardless,
    /// envoy#25654). Off by default, as in Envoy.
    #[serde(default)]
    pub fallback_on_unhealthy: bool,
}

impl SubsetSelector {
    /// A selector over `keys` with no fallback of its own.
    pub fn new<S: Into<String>>(keys: impl IntoIterator<Item = S>) -> SubsetSelector {
        SubsetSelector {
            keys: keys.into_iter().map(Into::into).collect(),
            ..SubsetSelector::default()
        }
    }
}

/// Envoy's subset load balancer options (`LbSubsetConfig`), all defaulting as in Envoy.
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
#[serde(deny_unknown_fields, default)]
pub struct SubsetConfig {
    /// What a request gets when no subset matches and its selector defines no fallback.
    pub fallback_policy: FallbackPolicy,
    /// The labels of the default subset's hosts; empty means every host.
    pub default_subset: BTreeMap<String, String>,
    /// The subset selectors.
    pub selectors: Vec<SubsetSelector>,
    /// When the fallback finds no host (an empty default subset), use any host.
    pub panic_mode_any: bool,
    /// A host label value with commas is a list: the host belongs to a subset for each item
    /// (spaces around an item trimmed, empty items dropped).
    pub list_as_any: bool,
    /// Request keys beyond those of a selector are ignored: the first selector (in order) whose
    /// keys the request all has decides the subset.
    pub allow_redundant_keys: bool,
    /// Alternative metadata tried in order when the request's own finds no host; each entry's
    /// pairs replace or extend the request's.
    pub metadata_fallbacks: Vec<BTreeMap<String, String>>,
    /// How a host is picked inside a subset.
    pub child_policy: LbPolicy,
    /// Envoy's healthy panic threshold, in percent: below this share of healthy hosts a subset
    /// picks among all its hosts, healthy or not. 0 never panics.
    pub panic_threshold: u8,
}

impl Default for SubsetConfig {
    fn default() -> Self {
        SubsetConfig {
            fallback_policy: FallbackPolicy::default(),
            default_subset: BTreeMap::new(),
            selectors: Vec::new(),
            panic_mode_any: false,
            list_as_any: false,
            allow_redundant_keys: false,
            metadata_fallbacks: Vec::new(),
            child_policy: LbPolicy::default(),
            panic_threshold: 50,
        }
    }
}
