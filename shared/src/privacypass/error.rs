//! Why a token, a challenge or an issuer key was refused.

/// Why a Privacy Pass input was refused.
///
/// One variant per reason, so that the worker can count refusals by kind and a client developer
/// can tell from the message what to fix. Messages are static or carry numbers only: they end up
/// in logs and responses, so they never echo request bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TokenError {
    /// The request carries no credentials at all.
    #[error("no credentials: the authorization header is missing or empty")]
    MissingCredential,
    /// Credentials are present, but none of the `PrivateToken` scheme.
    #[error("credentials are not of the PrivateToken scheme")]
    NotPrivateToken,
    /// The authorization header does not follow RFC 9110 / RFC 9577 syntax.
    #[error("malformed authorization header: {0}")]
    MalformedHeader(&'static str),
    /// The token parameter is not base64url.
    #[error("token is not valid base64url")]
    BadBase64,
    /// The token has the wrong size for its type.
    #[error("token is {got} bytes long, its type needs {expected}")]
    WrongLength {
        /// Size the token type defines.
        expected: usize,
        /// Size received.
        got: usize,
    },
    /// The token type is not one this verifier implements (only 0x0002, Blind RSA 2048).
    #[error("unsupported token type 0x{0:04x}")]
    UnknownTokenType(u16),
    /// No configured issuer key has the token's key id.
    #[error("token was issued under an unknown issuer key")]
    UnknownKeyId,
    /// The issuer key is configured but past its not-after time.
    #[error("token was issued under an expired issuer key")]
    KeyExpired,
    /// The token is bound to a challenge this origin does not accept.
    #[error("token is bound to a challenge this origin did not issue")]
    WrongChallenge,
    /// The authenticator is not the issuer's signature over the token.
    #[error("token signature does not verify")]
    BadSignature,
    /// A TokenChallenge does not follow RFC 9577 section 2.1.
    #[error("malformed token challenge: {0}")]
    MalformedChallenge(&'static str),
    /// An issuer key cannot be used.
    #[error("unusable issuer key: {0}")]
    BadIssuerKey(&'static str),
    /// An RSA issuer key whose modulus is not 2048 bits, the only size of token type 0x0002.
    #[error("issuer key has a {0}-bit modulus, token type 0x0002 needs 2048 bits")]
    KeySize(usize),
}
