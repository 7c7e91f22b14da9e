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
#![forbid(unsafe_code)]

extern crate alloc;

mod error;
mod headers;
mod origin;

pub use error::Error;
pub use headers::{
    DEFAULT_INTERNAL_REQUEST_HEADERS, DEFAULT_INTERNAL_RESPONSE_HEADERS, DEFAULT_LIST_TOKEN,
    HeaderNames, HeaderSet,
};
pub use origin::{Origin, Scheme};
