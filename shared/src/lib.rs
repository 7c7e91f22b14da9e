//! edgewise core.
//!
//! Everything the edge worker (Wasm) and the daemon (native) must agree on lives here, so that
//! both sides run the very same code. The core is `no_std` + `alloc` so it builds for
//! `wasm32-unknown-unknown` without pulling a runtime in; native-only parts sit behind cargo
//! features.
//!
//! The public API is what this file re-exports; modules stay private so they can be reshaped
//! without breaking users.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![no_std]
// `unsafe` only where a module allows it, each block with its `// SAFETY:` argument: the
// feature store's low-level files (it maps files shared with other processes) and
// `subset/prefetch.rs` (one cache hint, x86_64 only). Forbidden in builds with neither (the
// Wasm worker's).
#![cfg_attr(
    not(any(feature = "store", all(target_arch = "x86_64", target_feature = "sse"))),
    forbid(unsafe_code)
)]
#![cfg_attr(
    any(feature = "store", all(target_arch = "x86_64", target_feature = "sse")),
    deny(unsafe_code)
)]

extern crate alloc;
#[cfg(feature = "store")]
extern crate std;

mod error;
mod headers;
mod hosttable;
mod origin;
mod outlier;
mod path;
mod privacypass;
mod protected;
mod route;
mod secret;
#[cfg(feature = "store")]
mod store;
mod subset;
mod workspace;

pub use error::Error;
pub use headers::{
    DEFAULT_INTERNAL_REQUEST_HEADERS, DEFAULT_INTERNAL_RESPONSE_HEADERS, DEFAULT_LIST_TOKEN,
    HeaderNames, HeaderSet,
};
pub use hosttable::{
    FallbackPolicy, HOST_DELTA_MEDIA_TYPE, HOST_TABLE_MEDIA_TYPE, Host, HostDelta, HostTable,
    HostTableError, LbPolicy, MAX_ADDRESS_LEN, MAX_HOSTS, MAX_KEY_LEN, MAX_LABELS,
    MAX_LIST_SUBSETS, MAX_METADATA_FALLBACKS, MAX_SELECTOR_KEYS, MAX_SELECTORS, MAX_VALUE_LEN,
    MAX_WEIGHT, SelectorFallback, SubsetConfig, SubsetSelector,
};
pub use origin::{Origin, Scheme};
pub use outlier::{OutlierPolicy, OutlierVerdict, Outliers};
#[cfg(feature = "issuer")]
pub use privacypass::Issuer;
pub use privacypass::{
    IssuerKey, TOKEN_SCRATCH_LEN, TOKEN_TYPE_BLIND_RSA, Token, TokenChallenge, TokenError,
    Verifier, spend_key, spend_key_from_fields, www_authenticate,
};
pub use protected::{DECODE_PASSES, ProtectedPaths};
pub use route::{
    AttributeSource, MAX_PATH_PREFIXES, MAX_ROUTE_ATTRIBUTES, PathPrefix, RouteAttribute,
    path_segment, prefix_value, query_value, routing_path,
};
pub use secret::Secret;
#[cfg(feature = "store")]
pub use store::{
    FeatureGuard, FeatureReader, FeatureSnapshot, FeatureTable, FeatureWriter, Mapping,
    PublishReport, StoreError, TableRef, WriterOptions,
};
pub use subset::{
    Applied, Fallback, HostId, METADATA_CAPACITY, Metadata, RequestKeys, Selection, SubsetError,
    SubsetLb, SubsetStats,
};
pub use workspace::{
    Arena, ArenaWriter, DEFAULT_VERIFY_ONE_IN, DEFAULT_WORKSPACE_SIZE, RequestScope, ResetReport,
    ScrubMode, VerifyFailure, Workspace, WorkspaceConfig, WorkspaceOverflow, WorkspaceStats,
};
