//! Why a host table was refused.

use alloc::string::String;

/// Why a host table was refused: one variant per rule of [`HostTable::validate`].
///
/// Configuration strings are echoed ASCII-escaped and cut at 64 bytes, so an operator can find
/// the bad entry in a large table.
///
/// [`HostTable::validate`]: crate::HostTable::validate
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostTableError {
    /// The bytes are not an rkyv archive of a host table (truncated, garbage, other schema).
    #[error("host table bytes are not a valid archive (truncated or not a host table)")]
    Malformed,
    /// The bytes are a host table or delta of another format than this build's (a worker and
    /// a daemon of different releases).
    #[error("host table bytes of format {found}, this build reads format {supported}")]
    UnsupportedFormat {
        /// The format of the bytes.
        found: u16,
        /// The format this build reads.
        supported: u16,
    },
    /// The table is too large for the archive format's 32-bit offsets.
    #[error("host table too large to encode")]
    TooLargeToEncode,
    /// More hosts than [`MAX_HOSTS`](crate::MAX_HOSTS).
    #[error("{0} hosts, at most {max}", max = super::MAX_HOSTS)]
    TooManyHosts(usize),
    /// A host's address is the empty string.
    #[error("host {index}: empty address")]
    EmptyAddress {
        /// Position of the host in the table, from 0.
        index: usize,
    },
    /// A host's address is not an origin URL.
    #[error("host {index}: address \"{address}\" is not an origin URL: {reason}")]
    InvalidAddress {
        /// Position of the host in the table, from 0.
        index: usize,
        /// The address, escaped and cut.
        address: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A host's address is an origin URL, but not written as [`Origin`](crate::Origin)
    /// writes it (lower-case scheme and host, a port without leading zeros and not the
    /// scheme's default, no trailing `/`): each origin has one spelling,
    /// so that two spellings are never two hosts. [`HostTable::normalize_addresses`]
    /// rewrites them.
    ///
    /// [`HostTable::normalize_addresses`]: crate::HostTable::normalize_addresses
    #[error(
        "host {index}: address \"{address}\" is not in normal form (lower-case scheme and host, no default port or leading zeros, no trailing '/'): \"{normal}\""
    )]
    AddressNotNormal {
        /// Position of the host in the table, from 0.
        index: usize,
        /// The address, escaped and cut.
        address: String,
        /// The address in normal form, escaped and cut.
        normal: String,
    },
    /// Two hosts have the same address.
    #[error("hosts {first} and {index}: duplicate address \"{address}\"")]
    DuplicateAddress {
        /// Position of the first host with the address.
        first: usize,
        /// Position of the second.
        index: usize,
        /// The address, escaped and cut.
        address: String,
    },
    /// A host has weight 0 (use `healthy = false` to take a host out of rotation).
    #[error("host {index}: weight 0, weights start at 1")]
    ZeroWeight {
        /// Position of the host in the table, from 0.
        index: usize,
    },
    /// A host's weight is above [`MAX_WEIGHT`](crate::MAX_WEIGHT).
    #[error("host {index}: weight {weight} above the maximum {max}", max = super::MAX_WEIGHT)]
    WeightTooLarge {
        /// Position of the host in the table, from 0.
        index: usize,
        /// The weight given.
        weight: u32,
    },
    /// A host has more than [`MAX_LABELS`](crate::MAX_LABELS) labels.
    #[error("host {index}: {count} labels, at most {max}", max = super::MAX_LABELS)]
    TooManyLabels {
        /// Position of the host in the table, from 0.
        index: usize,
        /// Labels given.
        count: usize,
    },
    /// With `list_as_any`, a host would join more than
    /// [`MAX_LIST_SUBSETS`](crate::MAX_LIST_SUBSETS) subsets: the items it lists under a
    /// selector's keys multiply.
    #[error(
        "host {index}: its lists put it in {count} subsets (list_as_any), at most {max}",
        max = super::MAX_LIST_SUBSETS
    )]
    TooManyListSubsets {
        /// Position of the host in the table, from 0.
        index: usize,
        /// The subsets its lists put it in, over all selectors.
        count: u64,
    },
    /// A label key (of a host, a selector, the default subset or a metadata fallback) is empty.
    #[error("{place}: empty label key")]
    EmptyKey {
        /// Where: `host 3`, `selector 0`, `default_subset`, `metadata_fallbacks 1`.
        place: String,
    },
    /// A label key is longer than [`MAX_KEY_LEN`](crate::MAX_KEY_LEN) bytes.
    #[error("{place}: label key \"{key}\" longer than {max} bytes", max = super::MAX_KEY_LEN)]
    KeyTooLong {
        /// Where, as in [`HostTableError::EmptyKey`].
        place: String,
        /// The key, escaped and cut.
        key: String,
    },
    /// A label value is longer than [`MAX_VALUE_LEN`](crate::MAX_VALUE_LEN) bytes.
    #[error("{place}: value of \"{key}\" longer than {max} bytes", max = super::MAX_VALUE_LEN)]
    ValueTooLong {
        /// Where, as in [`HostTableError::EmptyKey`].
        place: String,
        /// The key of the value, escaped and cut.
        key: String,
    },
    /// More subset selectors than [`MAX_SELECTORS`](crate::MAX_SELECTORS).
    #[error("{0} subset selectors, at most {max}", max = super::MAX_SELECTORS)]
    TooManySelectors(usize),
    /// A selector lists no keys.
    #[error("selector {index}: no keys")]
    EmptySelector {
        /// Position of the selector, from 0.
        index: usize,
    },
    /// A selector lists more keys than a request can carry.
    #[error("selector {index}: {count} keys, at most {max}", max = super::MAX_SELECTOR_KEYS)]
    TooManySelectorKeys {
        /// Position of the selector, from 0.
        index: usize,
        /// Keys given.
        count: usize,
    },
    /// A selector lists a key twice.
    #[error("selector {index}: key \"{key}\" listed twice")]
    DuplicateSelectorKey {
        /// Position of the selector, from 0.
        index: usize,
        /// The key, escaped and cut.
        key: String,
    },
    /// Two selectors have the same set of keys.
    #[error("selectors {first} and {index} have the same keys")]
    DuplicateSelector {
        /// Position of the first selector.
        first: usize,
        /// Position of the second.
        index: usize,
    },
    /// A `KEYS_SUBSET` fallback whose keys are empty or not a strict subset of the selector's.
    #[error("selector {index}: fallback_keys_subset must be a non-empty strict subset of its keys")]
    InvalidKeysSubset {
        /// Position of the selector, from 0.
        index: usize,
    },
    /// `fallback_keys_subset` given with a fallback policy other than `KEYS_SUBSET`.
    #[error("selector {index}: fallback_keys_subset is only used with KEYS_SUBSET")]
    UnusedKeysSubset {
        /// Position of the selector, from 0.
        index: usize,
    },
    /// The default subset or a metadata fallback has more entries than allowed.
    #[error("{place}: {count} entries, at most {max}")]
    TooManyEntries {
        /// `default_subset` or `metadata_fallbacks N`.
        place: String,
        /// Entries given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// More metadata fallbacks than
    /// [`MAX_METADATA_FALLBACKS`](crate::MAX_METADATA_FALLBACKS).
    #[error("{0} metadata fallbacks, at most {max}", max = super::MAX_METADATA_FALLBACKS)]
    TooManyMetadataFallbacks(usize),
    /// A metadata fallback entry is empty: it would repeat the request's own lookup.
    #[error("metadata_fallbacks {index}: empty")]
    EmptyMetadataFallback {
        /// Position of the entry, from 0.
        index: usize,
    },
    /// A host's label keys are not strictly ascending: two labels share a key, or the archive
    /// was not made by [`HostTable::encode`](crate::HostTable::encode), whose maps are sorted.
    #[error("host {index}: label keys repeated or out of order")]
    LabelsOutOfOrder {
        /// Position of the host, from 0.
        index: usize,
    },
    /// An archived configuration map (`default_subset`, a metadata fallback) is not strictly
    /// ascending by key: a key repeats, or the archive was not made by
    /// [`HostTable::encode`](crate::HostTable::encode).
    #[error("{place}: keys repeated or out of order")]
    EntriesOutOfOrder {
        /// Which map.
        place: String,
    },
    /// A [`HostDelta`](crate::HostDelta) names an address twice (upserted or removed).
    #[error("host delta: address \"{address}\" named twice")]
    DeltaRepeatsAddress {
        /// The address, escaped and cut.
        address: String,
    },
    /// The panic threshold is above 100 percent.
    #[error("panic_threshold {0} above 100 (percent)")]
    PanicThreshold(u8),
}

/// `s` ASCII-escaped and cut at 64 bytes, for error messages.
pub(crate) fn shown(s: &str) -> String {
    const SHOWN: usize = 64;
    let mut out: String = s
        .bytes()
        .take(SHOWN)
        .flat_map(|b| b.escape_ascii())
        .map(char::from)
        .collect();
    if s.len() > SHOWN {
        out.push_str("...");
    }
    out
}
