//! RFC 9578's Blind RSA test vector 1 for the Privacy Pass benchmarks, read where the shared
//! crate's unit tests keep the published vectors rather than copied here.

// The benchmarks use only a few of its items.
#[allow(dead_code)]
#[path = "../../shared/src/privacypass/tests/vectors.rs"]
mod vectors;

/// The issuer's public key (RFC 9578 PSS-form SubjectPublicKeyInfo), hex.
pub const PUBLIC_KEY_HEX: &str = vectors::RFC9578_PK_HEX;
/// Vector 1's TokenChallenge, hex.
pub const CHALLENGE_HEX: &str = vectors::RFC9578_VECTORS[0].challenge;
/// Vector 1's token, hex.
pub const TOKEN_HEX: &str = vectors::RFC9578_VECTORS[0].token;

/// Decodes hex (the vectors' encoding).
pub fn unhex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err(format!("odd hex length {}", text.len()));
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| e.to_string()))
        .collect()
}
