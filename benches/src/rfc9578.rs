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

/// The `rsa` crate's PSS-SHA384 verifier of the vectors' key: the peer of edgewise's own
/// verification. The crate reads only rsaEncryption SubjectPublicKeyInfos, so one is rebuilt
/// around the same RSAPublicKey (the last 270 bytes of the PSS-form one).
pub fn rsa_verifier() -> Result<rsa::pss::VerifyingKey<sha2::Sha384>, String> {
    use rsa::pkcs8::DecodePublicKey as _;
    let pk = unhex(PUBLIC_KEY_HEX)?;
    let mut plain = unhex("30820122300d06092a864886f70d01010105000382010f00")?;
    let key = pk.get(pk.len().saturating_sub(270)..).ok_or("short key")?;
    plain.extend_from_slice(key);
    let key = rsa::RsaPublicKey::from_public_key_der(&plain).map_err(|e| e.to_string())?;
    Ok(rsa::pss::VerifyingKey::new(key))
}

/// Whether the `rsa` crate's `verifier` accepts `token` (a token's first 98 bytes are what
/// its last 256, the signature, sign).
pub fn rsa_verifies(verifier: &rsa::pss::VerifyingKey<sha2::Sha384>, token: &[u8]) -> bool {
    use rsa::signature::Verifier as _;
    let Some((input, signature)) = token.split_at_checked(98) else {
        return false;
    };
    let Ok(signature) = rsa::pss::Signature::try_from(signature) else {
        return false;
    };
    verifier.verify(input, &signature).is_ok()
}
