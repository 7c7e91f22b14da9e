//! Privacy Pass token redemption: the `PrivateToken` HTTP authentication scheme (RFC 9577) with
//! publicly verifiable tokens of type 0x0002, Blind RSA 2048 (RFC 9578 section 6).
//!
//! The worker runs this on every request that carries a token, so the cheap checks come first
//! and the RSA operation last: the header is parsed in place, the token is base64-decoded into a
//! caller-provided buffer (no allocation), and a token for a foreign challenge or key is refused
//! before any big-number arithmetic. Issuer keys are parsed once, when they are configured.
//!
//! Verification is stateless. Refusing a token spent before is the caller's job, keyed by
//! [`spend_key`], because only the daemon sees every redemption.

mod auth;
mod b64;
mod challenge;
mod error;
#[cfg(feature = "issuer")]
mod issuer;
mod key;
mod pss;
mod token;
mod verifier;

pub use auth::www_authenticate;
pub use challenge::TokenChallenge;
pub use error::TokenError;
#[cfg(feature = "issuer")]
pub use issuer::Issuer;
pub use key::IssuerKey;
pub use token::{TOKEN_SCRATCH_LEN, Token, spend_key, spend_key_from_fields};
pub use verifier::Verifier;

/// Token type 0x0002: Blind RSA with a 2048-bit key, RSASSA-PSS over SHA-384 (RFC 9578).
pub const TOKEN_TYPE_BLIND_RSA: u16 = 0x0002;

#[cfg(test)]
mod tests;
