//! Issuer public keys for token type 0x0002 and their key ids (RFC 9578 section 6.5).
//!
//! The key id is SHA-256 over one exact DER encoding: a SubjectPublicKeyInfo with the
//! id-RSASSA-PSS algorithm and SHA-384 / MGF1-SHA-384 / 48-byte-salt parameters. Issuers
//! publish keys in that form, but operators often hold the plain `rsaEncryption` form openssl
//! prints, so both are accepted and the PSS form is always rebuilt from the modulus and
//! exponent: the id then matches the issuer's whatever form the key came in.

use alloc::{boxed::Box, vec::Vec};
use core::fmt;

use pkcs1::der::{Decode, Tag, Tagged};
use sha2::{Digest, Sha256};
use spki::SubjectPublicKeyInfoRef;

use super::{
    TOKEN_TYPE_BLIND_RSA, TokenError, b64,
    pss::{MODULUS_LEN, PssKey},
};

/// Modulus size of token type 0x0002 (RFC 9578 section 8.2.2, Nk = 256 bytes).
const MODULUS_BITS: usize = 2048;

/// The largest public exponent accepted, as in the `rsa` crate: larger ones only slow
/// verification down.
const MAX_EXPONENT: u64 = (1 << 33) - 1;

/// DER of the OID 1.2.840.113549.1.1.1, rsaEncryption (content bytes only).
const OID_RSA_ENCRYPTION: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

/// DER of the OID 1.2.840.113549.1.1.10, id-RSASSA-PSS (content bytes only).
const OID_RSASSA_PSS: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0a];

/// Content of the RSASSA-PSS-params SEQUENCE that RFC 9578 prescribes: hashAlgorithm \[0\]
/// sha384, maskGenAlgorithm \[1\] mgf1(sha384), saltLength \[2\] 48. Hash identifiers carry no
/// NULL parameters, as in the RFC's example and test vectors.
#[rustfmt::skip]
const PSS_PARAMS: &[u8] = &[
    // [0] hashAlgorithm: sha384 (2.16.840.1.101.3.4.2.2)
    0xa0, 0x0d, 0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
    // [1] maskGenAlgorithm: mgf1 (1.2.840.113549.1.1.8) with sha384
    0xa1, 0x1a, 0x30, 0x18, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x08,
    0x30, 0x0b, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02, 0x02,
    // [2] saltLength: 48
    0xa2, 0x03, 0x02, 0x01, 0x30,
];

const BAD_EXPONENT: &str = "RSA public exponent is not an odd number from 3 to 2^33-1";
const EVEN_MODULUS: &str = "RSA modulus is even";

const TAG_INTEGER: u8 = 0x02;
const TAG_BIT_STRING: u8 = 0x03;
const TAG_NULL: u8 = 0x05;
const TAG_OID: u8 = 0x06;
const TAG_SEQUENCE: u8 = 0x30;

/// An issuer's public key for token type 0x0002, parsed once so that verifying a token costs
/// only the RSA operation.
#[derive(Clone)]
pub struct IssuerKey {
    id: [u8; 32],
    /// The RFC 9578 PSS-form SubjectPublicKeyInfo, DER.
    spki: Box<[u8]>,
    /// The same key in the rsaEncryption form, DER.
    rsa_spki: Box<[u8]>,
    pss: PssKey,
}

impl IssuerKey {
    /// Parses a DER SubjectPublicKeyInfo, in the RFC 9578 RSASSA-PSS form or the plain
    /// rsaEncryption form. Only 2048-bit moduli are accepted: that is token type 0x0002.
    pub fn from_spki(der: &[u8]) -> Result<IssuerKey, TokenError> {
        let spki = SubjectPublicKeyInfoRef::try_from(der)
            .map_err(|_| TokenError::BadIssuerKey("not a DER SubjectPublicKeyInfo"))?;
        check_algorithm(&spki)?;
        let bits = spki
            .subject_public_key
            .as_bytes()
            .ok_or(TokenError::BadIssuerKey(
                "public key bit string has unused bits",
            ))?;
        let key = pkcs1::RsaPublicKey::from_der(bits)
            .map_err(|_| TokenError::BadIssuerKey("not an RSA public key"))?;
        IssuerKey::from_components(key.modulus.as_bytes(), key.public_exponent.as_bytes())
    }

    /// Parses a SubjectPublicKeyInfo given as base64url (as in a `token-key` parameter and the
    /// issuer directory) or standard base64, padded or not; surrounding whitespace is ignored.
    pub fn from_base64(text: &[u8]) -> Result<IssuerKey, TokenError> {
        let der = b64::decode_any(text.trim_ascii())
            .ok_or(TokenError::BadIssuerKey("not base64 or base64url"))?;
        IssuerKey::from_spki(&der)
    }

    /// Builds the key from its big-endian modulus and public exponent.
    pub(crate) fn from_components(n: &[u8], e: &[u8]) -> Result<IssuerKey, TokenError> {
        let n = strip_zeros(n);
        let bits = bit_len(n);
        let modulus: &[u8; MODULUS_LEN] = match n.try_into() {
            Ok(modulus) if bits == MODULUS_BITS => modulus,
            _ => return Err(TokenError::KeySize(bits)),
        };
        if modulus[MODULUS_LEN - 1] & 1 == 0 {
            return Err(TokenError::BadIssuerKey(EVEN_MODULUS));
        }
        let e = strip_zeros(e);
        let exponent = e
            .iter()
            .try_fold(0u64, |acc, &b| {
                acc.checked_mul(256).map(|acc| acc | u64::from(b))
            })
            .filter(|&x| x <= MAX_EXPONENT)
            .ok_or(TokenError::BadIssuerKey(BAD_EXPONENT))?;
        let pss = PssKey::new(modulus, exponent).ok_or(TokenError::BadIssuerKey(BAD_EXPONENT))?;
        let spki = spki_der(PSS_ALGORITHM, n, e);
        Ok(IssuerKey {
            id: Sha256::digest(&spki).into(),
            spki: spki.into_boxed_slice(),
            rsa_spki: spki_der(RSA_ENCRYPTION_ALGORITHM, n, e).into_boxed_slice(),
            pss,
        })
    }

    /// The `token_key_id`: SHA-256 of [`spki`](IssuerKey::spki).
    pub fn id(&self) -> &[u8; 32] {
        &self.id
    }

    /// The RFC 9578 PSS-form SubjectPublicKeyInfo (DER), as sent in the `token-key` parameter
    /// of a challenge.
    pub fn spki(&self) -> &[u8] {
        &self.spki
    }

    /// The same key as an rsaEncryption SubjectPublicKeyInfo (DER): the form WebCrypto's
    /// `importKey("spki", ..., {name: "RSA-PSS", hash: "SHA-384"})` takes (workerd's and
    /// browsers' refuse the id-RSASSA-PSS form of [`spki`](IssuerKey::spki)).
    pub fn rsa_spki(&self) -> &[u8] {
        &self.rsa_spki
    }

    /// The token type the key signs.
    pub fn token_type(&self) -> u16 {
        TOKEN_TYPE_BLIND_RSA
    }

    /// Whether `authenticator` is an RSASSA-PSS (SHA-384, MGF1-SHA-384, 48-byte or empty salt)
    /// signature over `message`.
    pub(crate) fn verifies(&self, message: &[u8], authenticator: &[u8]) -> bool {
        self.pss.verify(message, authenticator)
    }
}

impl fmt::Debug for IssuerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IssuerKey(id ")?;
        for b in self.id {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

fn check_algorithm(spki: &SubjectPublicKeyInfoRef<'_>) -> Result<(), TokenError> {
    let params = spki.algorithm.parameters.as_ref();
    match spki.algorithm.oid.as_bytes() {
        OID_RSASSA_PSS => match params {
            Some(p) if p.tag() == Tag::Sequence && p.value() == PSS_PARAMS => Ok(()),
            _ => Err(TokenError::BadIssuerKey(
                "RSASSA-PSS parameters are not SHA-384, MGF1-SHA-384, salt length 48",
            )),
        },
        OID_RSA_ENCRYPTION => match params {
            None => Ok(()),
            Some(p) if p.tag() == Tag::Null && p.value().is_empty() => Ok(()),
            Some(_) => Err(TokenError::BadIssuerKey(
                "rsaEncryption parameters are not NULL",
            )),
        },
        _ => Err(TokenError::BadIssuerKey("not an RSA key")),
    }
}

fn strip_zeros(mut n: &[u8]) -> &[u8] {
    while let [0, rest @ ..] = n {
        n = rest;
    }
    n
}

fn bit_len(n: &[u8]) -> usize {
    n.first()
        .map_or(0, |&top| n.len() * 8 - top.leading_zeros() as usize)
}

/// Which AlgorithmIdentifier a built SubjectPublicKeyInfo carries.
type Algorithm = [(u8, &'static [u8]); 2];

/// id-RSASSA-PSS with RFC 9578's parameters: the form the key id is computed over.
const PSS_ALGORITHM: Algorithm = [(TAG_OID, OID_RSASSA_PSS), (TAG_SEQUENCE, PSS_PARAMS)];

/// rsaEncryption with NULL parameters.
const RSA_ENCRYPTION_ALGORITHM: Algorithm = [(TAG_OID, OID_RSA_ENCRYPTION), (TAG_NULL, &[])];

/// The SubjectPublicKeyInfo for modulus `n` and exponent `e` (big-endian, no leading zeros):
///
/// ```text
/// SEQUENCE {
///   SEQUENCE { algorithm }
///   BIT STRING { 0 unused bits, SEQUENCE { INTEGER n, INTEGER e } }
/// }
/// ```
fn spki_der(algorithm: Algorithm, n: &[u8], e: &[u8]) -> Vec<u8> {
    let mut rsa_key = Vec::with_capacity(n.len() + e.len() + 16);
    der_uint(&mut rsa_key, n);
    der_uint(&mut rsa_key, e);
    let mut identifier = Vec::with_capacity(64);
    for (tag, content) in algorithm {
        der(&mut identifier, tag, content);
    }
    let mut bits = Vec::with_capacity(rsa_key.len() + 8);
    bits.push(0);
    der(&mut bits, TAG_SEQUENCE, &rsa_key);
    let mut body = Vec::with_capacity(identifier.len() + bits.len() + 8);
    der(&mut body, TAG_SEQUENCE, &identifier);
    der(&mut body, TAG_BIT_STRING, &bits);
    let mut out = Vec::with_capacity(body.len() + 4);
    der(&mut out, TAG_SEQUENCE, &body);
    out
}

/// A DER INTEGER holding the unsigned big-endian `n`: a zero byte goes in front when the top
/// bit is set, so that the value stays positive.
fn der_uint(out: &mut Vec<u8>, n: &[u8]) {
    let pad = n.first().is_none_or(|&b| b & 0x80 != 0);
    out.push(TAG_INTEGER);
    der_len(out, n.len() + usize::from(pad));
    if pad {
        out.push(0);
    }
    out.extend_from_slice(n);
}

fn der(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    der_len(out, content.len());
    out.extend_from_slice(content);
}

/// DER definite length: short form below 128, else the minimal big-endian bytes after 0x8N.
fn der_len(out: &mut Vec<u8>, len: usize) {
    if len < 0x80 {
        out.push(len as u8);
        return;
    }
    let bytes = len.to_be_bytes();
    let used = strip_zeros(&bytes);
    out.push(0x80 | used.len() as u8);
    out.extend_from_slice(used);
}
