//! The one error type of the core.

/// Why an input was refused.
///
/// Each variant says which input was wrong and carries a short, static reason: these strings
/// end up in logs and in error responses, so they must never echo attacker-controlled bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configured origin URL is unusable.
    #[error("invalid origin URL: {0}")]
    InvalidOrigin(&'static str),
    /// The path or query of an incoming request cannot be forwarded as is.
    #[error("invalid request target: {0}")]
    InvalidTarget(&'static str),
}
