//! The Token structure of RFC 9577 section 2.2 and the double-spend key.

use core::fmt;

use sha2::{Digest, Sha256};

use super::{TOKEN_TYPE_BLIND_RSA, TokenError, auth, b64};

/// token_type (2) + nonce (32) + challenge_digest (32) + token_key_id (32).
const INPUT_LEN: usize = 98;

/// Nk of token type 0x0002: one RSA-2048 signature.
const AUTHENTICATOR_LEN: usize = 256;

/// Size of a decoded token of type 0x0002.
const TOKEN_LEN: usize = INPUT_LEN + AUTHENTICATOR_LEN;

/// Size of the scratch buffer [`Token::decode`] decodes into: the largest token of a supported
/// type (354 bytes for type 0x0002).
pub const TOKEN_SCRATCH_LEN: usize = TOKEN_LEN;

/// Domain separation of [`spend_key`]: these keys share a store with other edgewise keys.
const SPEND_LABEL: &[u8] = b"edgewise privacypass spend v1\0";

/// A syntactically valid token of type 0x0002, borrowing its bytes (from the caller's scratch
/// buffer when decoded from base64). Nothing is verified yet: see
/// [`Verifier::verify`](super::Verifier::verify).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Token<'a> {
    bytes: &'a [u8; TOKEN_LEN],
}

impl<'a> Token<'a> {
    /// Takes the token out of an `Authorization` or `Proxy-Authorization` header value
    /// (`PrivateToken token="..."`, RFC 9577 section 2.2) and decodes it into `scratch`.
    ///
    /// ```
    /// use edgewise::{TOKEN_SCRATCH_LEN, Token, TokenError};
    ///
    /// // Scratch memory may come from a per-request arena as a plain slice.
    /// let mut memory = vec![0u8; 4096];
    /// let scratch: &mut [u8; TOKEN_SCRATCH_LEN] =
    ///     (&mut memory[..TOKEN_SCRATCH_LEN]).try_into().unwrap();
    /// let refused = Token::from_authorization(b"Basic dXNlcjpwYXNz", scratch);
    /// assert_eq!(refused, Err(TokenError::NotPrivateToken));
    /// ```
    pub fn from_authorization(
        value: &[u8],
        scratch: &'a mut [u8; TOKEN_SCRATCH_LEN],
    ) -> Result<Token<'a>, TokenError> {
        Token::decode(auth::token_param(value)?, scratch)
    }

    /// Decodes a base64url token (padded or not) into `scratch`, which the token then borrows:
    /// no allocation, so a hot path can hand in a reused buffer. Only the first four characters
    /// are decoded before the type and length are checked, so junk is refused cheaply.
    pub fn decode(
        text: &[u8],
        scratch: &'a mut [u8; TOKEN_SCRATCH_LEN],
    ) -> Result<Token<'a>, TokenError> {
        let got = b64::decoded_len(text).ok_or(TokenError::BadBase64)?;
        let token_type = peek_type(text, got)?;
        check_type_and_len(token_type, got)?;
        b64::decode_url_exact(text, scratch).ok_or(TokenError::BadBase64)?;
        Ok(Token { bytes: scratch })
    }

    /// Takes a token already in binary form, as the daemon's HTTP API receives it.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Token<'a>, TokenError> {
        let token_type = match bytes {
            [a, b, ..] => u16::from_be_bytes([*a, *b]),
            _ => return Err(wrong_length(bytes.len())),
        };
        check_type_and_len(token_type, bytes.len())?;
        let bytes = bytes.try_into().map_err(|_| wrong_length(bytes.len()))?;
        Ok(Token { bytes })
    }

    /// The token type, 0x0002.
    pub fn token_type(&self) -> u16 {
        TOKEN_TYPE_BLIND_RSA
    }

    /// The client's random nonce.
    pub fn nonce(&self) -> &'a [u8; 32] {
        self.field(2)
    }

    /// SHA-256 of the TokenChallenge the token answers.
    pub fn challenge_digest(&self) -> &'a [u8; 32] {
        self.field(34)
    }

    /// SHA-256 of the issuer key that signed the token.
    pub fn token_key_id(&self) -> &'a [u8; 32] {
        self.field(66)
    }

    /// The issuer's signature over [`input`](Token::input).
    pub fn authenticator(&self) -> &'a [u8] {
        &self.bytes[INPUT_LEN..]
    }

    /// What the authenticator signs: token_type, nonce, challenge_digest and token_key_id,
    /// which lie contiguous at the front of the token.
    pub fn input(&self) -> &'a [u8] {
        &self.bytes[..INPUT_LEN]
    }

    /// The whole token in binary form.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    fn field(&self, at: usize) -> &'a [u8; 32] {
        let bytes: &'a [u8; TOKEN_LEN] = self.bytes;
        // The offsets are constants inside the fixed-size token.
        bytes[at..].first_chunk::<32>().unwrap_or(&[0; 32])
    }
}

impl fmt::Debug for Token<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(type 0x{:04x}, key id ", self.token_type())?;
        for b in &self.token_key_id()[..8] {
            write!(f, "{b:02x}")?;
        }
        write!(f, "..)")
    }
}

/// The double-spend key of a token: SHA-256 over a label, token_type, token_key_id and nonce.
///
/// Not over the authenticator: PSS signatures are salted, so one nonce could be spent again
/// under a fresh signature. Not over the challenge either: RFC 9577 asks that a nonce be
/// redeemed once, whichever challenge it claims.
pub fn spend_key(token: &Token<'_>) -> [u8; 32] {
    spend_key_from_fields(token.token_type(), token.token_key_id(), token.nonce())
}

/// [`spend_key`] from the fields alone, for a store that receives them without the token.
pub fn spend_key_from_fields(
    token_type: u16,
    token_key_id: &[u8; 32],
    nonce: &[u8; 32],
) -> [u8; 32] {
    Sha256::new()
        .chain_update(SPEND_LABEL)
        .chain_update(token_type.to_be_bytes())
        .chain_update(token_key_id)
        .chain_update(nonce)
        .finalize()
        .into()
}

/// The token type, from the first four base64 characters (three bytes).
fn peek_type(text: &[u8], decoded_len: usize) -> Result<u16, TokenError> {
    if decoded_len < 2 {
        return Err(wrong_length(decoded_len));
    }
    let head = text.get(..4).unwrap_or(text);
    let mut bytes = [0u8; 3];
    let len = decoded_len.min(3);
    b64::decode_url_exact(head, &mut bytes[..len]).ok_or(TokenError::BadBase64)?;
    Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
}

fn check_type_and_len(token_type: u16, len: usize) -> Result<(), TokenError> {
    if token_type != TOKEN_TYPE_BLIND_RSA {
        return Err(TokenError::UnknownTokenType(token_type));
    }
    if len != TOKEN_LEN {
        return Err(wrong_length(len));
    }
    Ok(())
}

fn wrong_length(got: usize) -> TokenError {
    TokenError::WrongLength {
        expected: TOKEN_LEN,
        got,
    }
}
