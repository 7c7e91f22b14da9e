//! The TokenChallenge of RFC 9577 section 2.1: what an origin asks tokens to be bound to.

use alloc::vec::Vec;

use sha2::{Digest, Sha256};

use super::TokenError;

const CONTEXT_LEN: usize = 32;

/// A TokenChallenge, borrowing its fields.
///
/// Tokens carry only the SHA-256 digest of the encoded challenge, so an origin computes the
/// [`digest`](TokenChallenge::digest) of each challenge it issues and accepts tokens whose
/// `challenge_digest` is one of those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenChallenge<'a> {
    token_type: u16,
    issuer_name: &'a [u8],
    /// Empty or [`CONTEXT_LEN`] bytes.
    redemption_context: &'a [u8],
    origin_info: &'a [u8],
}

impl<'a> TokenChallenge<'a> {
    /// A challenge for tokens of `token_type` from `issuer_name` (a server name such as
    /// `issuer.example`), optionally bound to a redemption context, valid at the origins listed
    /// comma-separated in `origin_info` (empty: any origin). Fails if a field does not fit its
    /// length prefix.
    pub fn new(
        token_type: u16,
        issuer_name: &'a [u8],
        redemption_context: Option<&'a [u8; CONTEXT_LEN]>,
        origin_info: &'a [u8],
    ) -> Result<TokenChallenge<'a>, TokenError> {
        if issuer_name.is_empty() {
            return Err(TokenError::MalformedChallenge("empty issuer name"));
        }
        if issuer_name.len() > usize::from(u16::MAX) {
            return Err(TokenError::MalformedChallenge(
                "issuer name over 65535 bytes",
            ));
        }
        if origin_info.len() > usize::from(u16::MAX) {
            return Err(TokenError::MalformedChallenge(
                "origin info over 65535 bytes",
            ));
        }
        Ok(TokenChallenge {
            token_type,
            issuer_name,
            redemption_context: redemption_context.map_or(&[], |c| c.as_slice()),
            origin_info,
        })
    }

    /// Decodes the wire form, strictly: every length must fit, the redemption context must be
    /// 0 or 32 bytes and nothing may follow, so that each challenge has exactly one encoding
    /// and therefore one digest.
    pub fn decode(bytes: &'a [u8]) -> Result<TokenChallenge<'a>, TokenError> {
        let mut r = Reader(bytes);
        let token_type = r
            .u16()
            .ok_or(TokenError::MalformedChallenge("truncated token type"))?;
        let issuer_name = r
            .prefixed(2)
            .ok_or(TokenError::MalformedChallenge("truncated issuer name"))?;
        let redemption_context = r.prefixed(1).ok_or(TokenError::MalformedChallenge(
            "truncated redemption context",
        ))?;
        let origin_info = r
            .prefixed(2)
            .ok_or(TokenError::MalformedChallenge("truncated origin info"))?;
        if issuer_name.is_empty() {
            return Err(TokenError::MalformedChallenge("empty issuer name"));
        }
        if !matches!(redemption_context.len(), 0 | CONTEXT_LEN) {
            return Err(TokenError::MalformedChallenge(
                "redemption context is neither 0 nor 32 bytes",
            ));
        }
        if !r.0.is_empty() {
            return Err(TokenError::MalformedChallenge("trailing bytes"));
        }
        Ok(TokenChallenge {
            token_type,
            issuer_name,
            redemption_context,
            origin_info,
        })
    }

    /// The wire form.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        self.for_each_part(|part| out.extend_from_slice(part));
        out
    }

    /// SHA-256 of the wire form: the `challenge_digest` of tokens bound to this challenge.
    /// Hashes the fields in place, without building the encoding.
    pub fn digest(&self) -> [u8; 32] {
        let mut hash = Sha256::new();
        self.for_each_part(|part| hash.update(part));
        hash.finalize().into()
    }

    /// The token type asked for.
    pub fn token_type(&self) -> u16 {
        self.token_type
    }

    /// The issuer's server name.
    pub fn issuer_name(&self) -> &'a [u8] {
        self.issuer_name
    }

    /// The redemption context, if any.
    pub fn redemption_context(&self) -> Option<&'a [u8; CONTEXT_LEN]> {
        self.redemption_context.try_into().ok()
    }

    /// The origins the challenge is valid at, comma-separated; empty for any.
    pub fn origin_info(&self) -> &'a [u8] {
        self.origin_info
    }

    fn encoded_len(&self) -> usize {
        2 + 2
            + self.issuer_name.len()
            + 1
            + self.redemption_context.len()
            + 2
            + self.origin_info.len()
    }

    /// The encoding, piece by piece. Lengths were checked on construction, so the casts are
    /// exact.
    fn for_each_part(&self, mut f: impl FnMut(&[u8])) {
        f(&self.token_type.to_be_bytes());
        f(&(self.issuer_name.len() as u16).to_be_bytes());
        f(self.issuer_name);
        f(&[self.redemption_context.len() as u8]);
        f(self.redemption_context);
        f(&(self.origin_info.len() as u16).to_be_bytes());
        f(self.origin_info);
    }
}

/// Reads big-endian integers and length-prefixed fields off the front of a slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn u16(&mut self) -> Option<u16> {
        let (head, tail) = self.0.split_first_chunk::<2>()?;
        self.0 = tail;
        Some(u16::from_be_bytes(*head))
    }

    /// A field after a `prefix`-byte (1 or 2) big-endian length.
    fn prefixed(&mut self, prefix: usize) -> Option<&'a [u8]> {
        let len = self
            .take(prefix)?
            .iter()
            .fold(0usize, |n, &b| n << 8 | usize::from(b));
        self.take(len)
    }
}
