//! A test and demo issuer for token type 0x0002 (feature `issuer`).
//!
//! A real issuer signs a blinded message it never sees in the clear (RFC 9474); the finalized
//! blind signature is an ordinary RSASSA-PSS signature over the token input, so signing that
//! input directly yields the same tokens without the client round trips. That is fine for tests
//! and demos only: an issuer signing in the clear learns every nonce it issues and can link
//! redemptions to issuance.

use alloc::vec::Vec;
use core::fmt;

use rsa::{
    RsaPrivateKey,
    pkcs8::DecodePrivateKey,
    pss::BlindedSigningKey,
    rand_core::CryptoRngCore,
    signature::{RandomizedSigner as _, SignatureEncoding as _},
    traits::PublicKeyParts as _,
};
use sha2::Sha384;

use super::{IssuerKey, TOKEN_TYPE_BLIND_RSA, TokenChallenge, TokenError};

/// An issuer holding an RSA-2048 private key.
#[derive(Clone)]
pub struct Issuer {
    signing: BlindedSigningKey<Sha384>,
    key: IssuerKey,
}

/// The public key only: the rsa crate's derived `Debug` prints the private exponent and
/// primes, so a log line formatting an issuer would hand out the means to mint tokens.
impl fmt::Debug for Issuer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issuer")
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl Issuer {
    /// Loads a PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`, as `openssl genpkey`
    /// writes it). The key must be RSA-2048.
    pub fn from_pkcs8_pem(pem: &str) -> Result<Issuer, TokenError> {
        let private = RsaPrivateKey::from_pkcs8_pem(pem)
            .map_err(|_| TokenError::BadIssuerKey("not a PKCS#8 PEM RSA private key"))?;
        let key =
            IssuerKey::from_components(&private.n().to_bytes_be(), &private.e().to_bytes_be())?;
        Ok(Issuer {
            signing: BlindedSigningKey::new(private),
            key,
        })
    }

    /// The public key, to configure verifiers with and to publish.
    pub fn key(&self) -> &IssuerKey {
        &self.key
    }

    /// A token of type 0x0002 with `nonce`, bound to `challenge`. `rng` draws the 48-byte PSS
    /// salt and the RSA blinding factor (which guards the private key against timing attacks).
    pub fn mint<R: CryptoRngCore>(
        &self,
        challenge: &TokenChallenge<'_>,
        nonce: &[u8; 32],
        rng: &mut R,
    ) -> Result<Vec<u8>, TokenError> {
        if challenge.token_type() != TOKEN_TYPE_BLIND_RSA {
            return Err(TokenError::UnknownTokenType(challenge.token_type()));
        }
        let mut token = Vec::with_capacity(super::TOKEN_SCRATCH_LEN);
        token.extend_from_slice(&TOKEN_TYPE_BLIND_RSA.to_be_bytes());
        token.extend_from_slice(nonce);
        token.extend_from_slice(&challenge.digest());
        token.extend_from_slice(self.key.id());
        let signature = self
            .signing
            .try_sign_with_rng(rng, &token)
            .map_err(|_| TokenError::BadIssuerKey("RSA signing failed"))?;
        token.extend_from_slice(&signature.to_bytes());
        Ok(token)
    }
}
