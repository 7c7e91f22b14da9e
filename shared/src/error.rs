//! The one error type of the core.

use alloc::string::String;

/// Why an input was refused.
///
/// Each variant says which input was wrong and carries a short, static reason: these strings
/// end up in logs and in error responses, so they never echo request bytes (configuration
/// entries are echoed, escaped, so an operator can find the bad one).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configured origin URL is unusable.
    #[error("invalid origin URL: {0}")]
    InvalidOrigin(&'static str),
    /// The path or query of an incoming request cannot be forwarded as is.
    #[error("invalid request target: {0}")]
    InvalidTarget(&'static str),
    /// An entry of a header name list is not a valid header name.
    #[error("invalid header name \"{name}\" (entry {index}): {reason}")]
    InvalidHeaderName {
        /// Position of the entry in the list, from 0.
        index: usize,
        /// The entry, ASCII-escaped and cut at 64 bytes.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An entry of a routing attribute list (`key=source`) is unusable.
    #[error("invalid routing attribute \"{entry}\" (entry {index}): {reason}")]
    InvalidRouteAttribute {
        /// Position of the entry in the list, from 0.
        index: usize,
        /// The entry, ASCII-escaped and cut at 64 bytes.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An entry of a protected path list (`TOKEN_PATHS`) is unusable.
    #[error("invalid protected path \"{entry}\" (entry {index}): {reason}")]
    InvalidProtectedPath {
        /// Position of the entry in the list, from 0.
        index: usize,
        /// The entry, ASCII-escaped and cut at 64 bytes.
        entry: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A header set would exceed 65,535 names.
    #[error("header set too large: {0} names, at most 65535")]
    HeaderSetTooLarge(usize),
}
