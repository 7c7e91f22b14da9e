//! The set of issuer keys an origin trusts, and token verification against it.

use alloc::vec::Vec;

use super::{IssuerKey, Token, TokenError};

/// The issuer keys an origin accepts tokens from, each with an optional expiry.
///
/// Deployments trust a handful of keys at a time (the current one and the one being rotated
/// out), so a list scanned by key id beats any map.
#[derive(Debug, Clone, Default)]
pub struct Verifier {
    keys: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    key: IssuerKey,
    /// Unix time (seconds) after which the key is refused.
    not_after: Option<u64>,
}

impl Verifier {
    /// A verifier that trusts no key yet.
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// Trusts `key` until `not_after` (unix seconds, inclusive; `None`: until removed).
    /// Adding a key again replaces its expiry. Returns whether the key was new.
    pub fn add_key(&mut self, key: IssuerKey, not_after: Option<u64>) -> bool {
        match self.keys.iter_mut().find(|e| e.key.id() == key.id()) {
            Some(entry) => {
                entry.not_after = not_after;
                false
            }
            None => {
                self.keys.push(Entry { key, not_after });
                true
            }
        }
    }

    /// Stops trusting the key with id `key_id`; returns whether it was there.
    pub fn remove_key(&mut self, key_id: &[u8; 32]) -> bool {
        let before = self.keys.len();
        self.keys.retain(|e| e.key.id() != key_id);
        self.keys.len() != before
    }

    /// Drops every key expired at `now` (unix seconds); returns how many.
    pub fn remove_expired(&mut self, now: u64) -> usize {
        let before = self.keys.len();
        self.keys.retain(|e| !expired(e.not_after, now));
        before - self.keys.len()
    }

    /// The key with id `key_id`, expired or not.
    pub fn key(&self, key_id: &[u8; 32]) -> Option<&IssuerKey> {
        self.entry(key_id).map(|e| &e.key)
    }

    /// When the key with id `key_id` expires (unix seconds); `None` if it never does or is not
    /// trusted. Spend records must live that long.
    pub fn not_after(&self, key_id: &[u8; 32]) -> Option<u64> {
        self.entry(key_id).and_then(|e| e.not_after)
    }

    /// The trusted keys, in the order they were added.
    pub fn keys(&self) -> impl Iterator<Item = &IssuerKey> {
        self.keys.iter().map(|e| &e.key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether no key is trusted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks that `token` answers one of the `accepted` challenge digests (see
    /// [`TokenChallenge::digest`](super::TokenChallenge::digest)) and carries a valid signature
    /// of a trusted key unexpired at `now` (unix seconds).
    ///
    /// The RSA operation, the only expensive step, comes last: tokens for another challenge or
    /// key are refused for the cost of a few compares. Double spending is the caller's to
    /// check, with [`spend_key`](super::spend_key), after this succeeds.
    pub fn verify(
        &self,
        token: &Token<'_>,
        accepted: &[[u8; 32]],
        now: u64,
    ) -> Result<(), TokenError> {
        let key = self.signer(token, accepted, now)?;
        if !key.verifies(token.input(), token.authenticator()) {
            return Err(TokenError::BadSignature);
        }
        Ok(())
    }

    /// Every check of [`verify`](Verifier::verify) but the signature's: the key whose
    /// signature `token` must carry, for a caller that checks it with another RSA
    /// implementation (the worker uses the runtime's WebCrypto). The signature is an
    /// RSASSA-PSS one over [`Token::input`] under [`IssuerKey::rsa_spki`], SHA-384,
    /// MGF1-SHA-384, with a 48-byte or an empty salt; the token is valid only once it verifies.
    pub fn signer(
        &self,
        token: &Token<'_>,
        accepted: &[[u8; 32]],
        now: u64,
    ) -> Result<&IssuerKey, TokenError> {
        if !accepted.contains(token.challenge_digest()) {
            return Err(TokenError::WrongChallenge);
        }
        let entry = self
            .entry(token.token_key_id())
            .ok_or(TokenError::UnknownKeyId)?;
        if expired(entry.not_after, now) {
            return Err(TokenError::KeyExpired);
        }
        if entry.key.token_type() != token.token_type() {
            return Err(TokenError::UnknownKeyId);
        }
        Ok(&entry.key)
    }

    fn entry(&self, key_id: &[u8; 32]) -> Option<&Entry> {
        self.keys.iter().find(|e| e.key.id() == key_id)
    }
}

fn expired(not_after: Option<u64>, now: u64) -> bool {
    not_after.is_some_and(|t| now > t)
}
