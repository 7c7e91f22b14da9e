extern crate std;

mod vectors;

use alloc::{
    format,
    string::{String, ToString},
    vec,
    vec::Vec,
};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

use super::auth::{Item, walk};
use super::*;
use vectors::*;

/// Far from any expiry used below.
const NOW: u64 = 1_700_000_000;

fn hex(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex length");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

fn array<const N: usize>(text: &str) -> [u8; N] {
    hex(text).try_into().unwrap()
}

fn rfc_key() -> IssuerKey {
    IssuerKey::from_spki(&hex(RFC9578_PK_HEX)).unwrap()
}

fn rfc_verifier() -> Verifier {
    let mut verifier = Verifier::new();
    assert!(verifier.add_key(rfc_key(), None));
    verifier
}

/// Vector 1's token bytes and the digest of its challenge.
fn rfc_token() -> (Vec<u8>, [u8; 32]) {
    let v = &RFC9578_VECTORS[0];
    let digest = Sha256::digest(hex(v.challenge)).into();
    (hex(v.token), digest)
}

fn header_for(token: &[u8]) -> String {
    format!("PrivateToken token=\"{}\"", URL_SAFE.encode(token))
}

fn decode_header(value: &str) -> Result<Vec<u8>, TokenError> {
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    Token::from_authorization(value.as_bytes(), &mut scratch).map(|t| t.as_bytes().to_vec())
}

// --- RFC 9578 / RFC 9577 vectors ---

#[test]
fn rfc9578_key_id_is_sha256_of_the_pss_spki() {
    let pk = hex(RFC9578_PK_HEX);
    let key = rfc_key();
    assert_eq!(
        key.spki(),
        &pk[..],
        "re-encoding must reproduce the published SPKI"
    );
    assert_eq!(key.id(), &<[u8; 32]>::from(Sha256::digest(&pk)));
    for v in &RFC9578_VECTORS {
        assert_eq!(&hex(v.token)[66..98], key.id());
    }
    for v in &RFC9577_STRUCTURE_VECTORS {
        assert_eq!(&hex(v.token_key_id)[..], key.id());
    }
}

#[test]
fn rsa_encryption_spki_gets_the_pss_key_id() {
    let pk = hex(RFC9578_PK_HEX);
    // The same RSAPublicKey (the last 270 bytes) under rsaEncryption with NULL parameters.
    let mut plain = hex("30820122300d06092a864886f70d0101010500038201 0f00"
        .replace(' ', "")
        .as_str());
    plain.extend_from_slice(&pk[pk.len() - 270..]);
    let key = IssuerKey::from_spki(&plain).unwrap();
    assert_eq!(key.id(), rfc_key().id());
    assert_eq!(key.spki(), &pk[..]);
    // Either form gives back the other exactly.
    assert_eq!(key.rsa_spki(), &plain[..]);
    assert_eq!(rfc_key().rsa_spki(), &plain[..]);
    // And from base64 in either alphabet, padded or not, with whitespace around.
    for text in [
        STANDARD.encode(&plain),
        URL_SAFE.encode(&pk),
        URL_SAFE_NO_PAD.encode(&pk),
        format!("  {}\n", STANDARD.encode(&pk)),
    ] {
        assert_eq!(
            IssuerKey::from_base64(text.as_bytes()).unwrap().id(),
            key.id()
        );
    }
}

#[test]
fn rfc9578_tokens_verify() {
    let verifier = rfc_verifier();
    for (i, v) in RFC9578_VECTORS.iter().enumerate() {
        let bytes = hex(v.token);
        let challenge_bytes = hex(v.challenge);
        let challenge = TokenChallenge::decode(&challenge_bytes).unwrap();
        assert_eq!(challenge.encode(), challenge_bytes, "vector {i}");
        let token = Token::from_bytes(&bytes).unwrap();
        assert_eq!(token.nonce(), &array::<32>(v.nonce), "vector {i}");
        assert_eq!(token.challenge_digest(), &challenge.digest(), "vector {i}");
        let other = [0u8; 32];
        verifier
            .verify(&token, &[other, challenge.digest()], NOW)
            .unwrap_or_else(|e| panic!("vector {i}: {e}"));
        assert_eq!(decode_header(&header_for(&bytes)).unwrap(), bytes);
    }
}

#[test]
fn rfc9577_structure_vectors() {
    for (i, v) in RFC9577_STRUCTURE_VECTORS.iter().enumerate() {
        let (issuer, origin) = (hex(v.issuer_name), hex(v.origin_info));
        let context = hex(v.redemption_context);
        let context: Option<&[u8; 32]> =
            (!context.is_empty()).then(|| context[..].try_into().unwrap());
        let challenge =
            TokenChallenge::new(TOKEN_TYPE_BLIND_RSA, &issuer, context, &origin).unwrap();
        let mut input = vec![0, 2];
        input.extend_from_slice(&hex(v.nonce));
        input.extend_from_slice(&challenge.digest());
        input.extend_from_slice(&hex(v.token_key_id));
        assert_eq!(input, hex(v.token_authenticator_input), "vector {i}");
        let encoded = challenge.encode();
        assert_eq!(TokenChallenge::decode(&encoded).unwrap(), challenge);
        assert_eq!(challenge.redemption_context(), context);
    }
}

/// PrivateToken challenges of a WWW-Authenticate value: (challenge, token-key, max-age).
type Challenge<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, Option<&'a [u8]>);

fn private_token_challenges(value: &str) -> Vec<Challenge<'_>> {
    let mut out: Vec<Challenge<'_>> = Vec::new();
    let mut ours = false;
    walk(value.as_bytes(), |item| {
        match item {
            Item::Scheme(s) => {
                ours = s.eq_ignore_ascii_case(b"PrivateToken");
                if ours {
                    out.push((None, None, None));
                }
            }
            Item::Param(name, value) if ours => {
                let last = out.last_mut().unwrap();
                match name {
                    b"challenge" => last.0 = Some(value.text),
                    b"token-key" => last.1 = Some(value.text),
                    b"max-age" => last.2 = Some(value.text),
                    _ => {}
                }
            }
            _ => {}
        }
        Ok(())
    })
    .unwrap();
    out
}

#[test]
fn rfc9577_header_vectors_parse() {
    let expected_challenge = hex(RFC9577_HEADER_CHALLENGE_HEX);
    let counts = [1, 2, 2];
    for (i, header) in RFC9577_HEADERS.iter().enumerate() {
        let challenges = private_token_challenges(header);
        assert_eq!(challenges.len(), counts[i], "vector {i}");
        for (challenge, key, max_age) in challenges {
            let bytes = URL_SAFE.decode(challenge.unwrap()).unwrap();
            let decoded = TokenChallenge::decode(&bytes);
            if bytes[..2] == [0, 2] {
                assert_eq!(bytes, expected_challenge, "vector {i}");
                assert_eq!(max_age, Some(&b"10"[..]));
                assert_eq!(decoded.unwrap().issuer_name(), b"issuer.example");
                let key = IssuerKey::from_base64(key.unwrap()).unwrap();
                assert_eq!(key.spki(), &hex(RFC9578_PK_HEX)[..]);
            }
        }
    }
}

#[test]
fn www_authenticate_matches_the_rfc_encoding() {
    let bytes = hex(RFC9577_HEADER_CHALLENGE_HEX);
    let challenge = TokenChallenge::decode(&bytes).unwrap();
    let header = www_authenticate(&challenge, Some(&rfc_key()), Some(10));
    let rfc = private_token_challenges(RFC9577_HEADERS[0]);
    let ours = private_token_challenges(&header);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].0, rfc[0].0, "challenge parameter");
    assert_eq!(ours[0].1, rfc[0].1, "token-key parameter");
    assert_eq!(ours[0].2, Some(&b"10"[..]));
    assert!(header.starts_with("PrivateToken challenge=\"AAIADmlzc3Vlci5leGFtcGxl"));

    let bare = www_authenticate(&challenge, None, None);
    assert_eq!(
        bare,
        format!("PrivateToken challenge=\"{}\"", URL_SAFE.encode(&bytes))
    );
}

// --- Authorization parsing ---

#[test]
fn authorization_is_lenient_where_rfc9110_allows() {
    let (bytes, _) = rfc_token();
    let padded = URL_SAFE.encode(&bytes);
    let unpadded = URL_SAFE_NO_PAD.encode(&bytes);
    let cases = [
        format!("PrivateToken token=\"{padded}\""),
        format!("privatetoken TOKEN=\"{padded}\""),
        format!("PRIVATETOKEN token={unpadded}"),
        format!("PrivateToken token = \"{unpadded}\" "),
        format!("PrivateToken\ttoken=\t{padded}"),
        format!("PrivateToken realm=\"a \\\"quoted\\\" realm\", token=\"{padded}\", x=1"),
        format!("PrivateToken foo=bar,token=\"{padded}\""),
        format!("Basic dXNlcjpwYXNz, PrivateToken token=\"{padded}\""),
        format!("Basic dXNlcjpwYXNz==,PrivateToken token=\"{padded}\", Bearer abc"),
        format!(" , ,PrivateToken token=\"{padded}\",, "),
        format!("Other a=b, c=\"d\", PrivateToken token=\"{padded}\", e=f"),
        format!("PrivateToken, token=\"{padded}\""),
    ];
    for header in &cases {
        assert_eq!(decode_header(header).as_deref(), Ok(&bytes[..]), "{header}");
    }
}

#[test]
fn authorization_is_strict_where_it_matters() {
    let (bytes, _) = rfc_token();
    let t = URL_SAFE.encode(&bytes);
    let malformed = [
        (
            format!("PrivateToken token=\"{t}\", PrivateToken token=\"{t}\""),
            "more than one PrivateToken credential",
        ),
        (
            format!("PrivateToken token=\"{t}\", token=\"{t}\""),
            "token parameter given twice",
        ),
        (
            format!("PrivateToken token=\"\\{t}\""),
            "escaped character in the token parameter",
        ),
        (
            format!("PrivateToken {t}"),
            "PrivateToken takes token=\"...\", not a bare value",
        ),
        (
            "PrivateToken".to_string(),
            "PrivateToken credentials lack a token parameter",
        ),
        (
            "PrivateToken realm=x".to_string(),
            "PrivateToken credentials lack a token parameter",
        ),
        (
            format!("token=\"{t}\""),
            "parameter before any authentication scheme",
        ),
        (
            format!("PrivateToken token=\"{t}"),
            "unterminated quoted string",
        ),
        (
            "PrivateToken token=".to_string(),
            "PrivateToken takes token=\"...\", not a bare value",
        ),
        (
            "PrivateToken a=b, token=".to_string(),
            "parameter without a value",
        ),
        (
            "PrivateToken a=b, token=,".to_string(),
            "parameter without a value",
        ),
        (
            format!("PrivateToken token=\"{t}\" x"),
            "unexpected character after a list element",
        ),
        (
            format!("PrivateToken token={t} \"x\""),
            "unexpected character after a list element",
        ),
        (
            "PrivateToken \"x\"".to_string(),
            "unexpected character after an authentication scheme",
        ),
        (
            "PrivateToken a b".to_string(),
            "unexpected character after an authentication scheme",
        ),
        ("PrivateToken a/b=c".to_string(), "invalid parameter name"),
        (
            "Bad/Scheme".to_string(),
            "invalid authentication scheme name",
        ),
        ("Basic ab!c".to_string(), "invalid token68"),
        ("\"PrivateToken\"".to_string(), "unexpected character"),
        (
            "PrivateToken token=\"a\u{1}\"".to_string(),
            "control character in a quoted string",
        ),
        (
            "PrivateToken token=\"a\\\u{1}\"".to_string(),
            "invalid escape in a quoted string",
        ),
    ];
    for (header, reason) in &malformed {
        assert_eq!(
            decode_header(header),
            Err(TokenError::MalformedHeader(reason)),
            "{header:?}"
        );
    }
}

#[test]
fn missing_and_foreign_credentials() {
    for header in ["", "   ", " , ,\t"] {
        assert_eq!(
            decode_header(header),
            Err(TokenError::MissingCredential),
            "{header:?}"
        );
    }
    for header in [
        "Basic dXNlcjpwYXNz",
        "Bearer abc.def",
        "Negotiate",
        "PrivateTokens token=x",
    ] {
        assert_eq!(
            decode_header(header),
            Err(TokenError::NotPrivateToken),
            "{header:?}"
        );
    }
}

// --- Token decoding ---

#[test]
fn token_decoding_reasons() {
    let (bytes, _) = rfc_token();
    let good = URL_SAFE.encode(&bytes);
    let mut type1 = vec![0, 1];
    type1.extend_from_slice(&[7; 144]);
    let mut odd_type = bytes.clone();
    odd_type[..2].copy_from_slice(&[0xab, 0xcd]);
    let cases: [(String, TokenError); 11] = [
        (format!("{good}+"), TokenError::BadBase64),
        (good.replacen('A', "+", 1), TokenError::BadBase64),
        (good.replacen('A', "/", 1), TokenError::BadBase64),
        (format!("{good}=="), TokenError::BadBase64),
        (
            "AAI".to_string() + "=",
            TokenError::WrongLength {
                expected: 354,
                got: 2,
            },
        ),
        ("A".to_string(), TokenError::BadBase64),
        (
            "AA".to_string(),
            TokenError::WrongLength {
                expected: 354,
                got: 1,
            },
        ),
        (
            URL_SAFE.encode(&bytes[..353]),
            TokenError::WrongLength {
                expected: 354,
                got: 353,
            },
        ),
        (
            URL_SAFE.encode([&bytes[..], &[0]].concat()),
            TokenError::WrongLength {
                expected: 354,
                got: 355,
            },
        ),
        (URL_SAFE.encode(&type1), TokenError::UnknownTokenType(1)),
        (
            URL_SAFE.encode(&odd_type),
            TokenError::UnknownTokenType(0xabcd),
        ),
    ];
    for (text, err) in &cases {
        let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
        assert_eq!(
            Token::decode(text.as_bytes(), &mut scratch).err(),
            Some(*err),
            "{text}"
        );
    }
    // Non-zero trailing bits: a second spelling of a 2-byte prefix.
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    assert_eq!(
        Token::decode(b"AAJ", &mut scratch).err(),
        Some(TokenError::BadBase64)
    );
    assert_eq!(
        Token::from_bytes(&bytes[..1]).err(),
        Some(TokenError::WrongLength {
            expected: 354,
            got: 1
        })
    );
    assert_eq!(
        Token::from_bytes(&type1).err(),
        Some(TokenError::UnknownTokenType(1))
    );
}

#[test]
fn token_accessors_slice_the_wire_format() {
    let (bytes, _) = rfc_token();
    let token = Token::from_bytes(&bytes).unwrap();
    assert_eq!(token.token_type(), 2);
    assert_eq!(&token.nonce()[..], &bytes[2..34]);
    assert_eq!(&token.challenge_digest()[..], &bytes[34..66]);
    assert_eq!(&token.token_key_id()[..], &bytes[66..98]);
    assert_eq!(token.input(), &bytes[..98]);
    assert_eq!(token.authenticator(), &bytes[98..]);
    assert_eq!(token.as_bytes(), &bytes[..]);
    let shown = format!("{token:?}");
    assert_eq!(shown, "Token(type 0x0002, key id ca572f8982a9ca24..)");
}

// --- Verification ---

#[test]
fn verification_reasons() {
    let (bytes, digest) = rfc_token();
    let verifier = rfc_verifier();
    let token = Token::from_bytes(&bytes).unwrap();
    assert_eq!(
        verifier.verify(&token, &[], NOW),
        Err(TokenError::WrongChallenge)
    );
    assert_eq!(
        verifier.verify(&token, &[[1; 32]], NOW),
        Err(TokenError::WrongChallenge)
    );
    assert_eq!(
        Verifier::new().verify(&token, &[digest], NOW),
        Err(TokenError::UnknownKeyId)
    );

    let mut expiring = Verifier::new();
    expiring.add_key(rfc_key(), Some(NOW));
    assert_eq!(expiring.verify(&token, &[digest], NOW), Ok(()));
    assert_eq!(
        expiring.verify(&token, &[digest], NOW + 1),
        Err(TokenError::KeyExpired)
    );

    let tampered = |at: usize| {
        let mut copy = bytes.clone();
        copy[at] ^= 1;
        copy
    };
    for at in [3, 98, 200, 353] {
        let copy = tampered(at);
        let token = Token::from_bytes(&copy).unwrap();
        assert_eq!(
            verifier.verify(&token, &[digest], NOW),
            Err(TokenError::BadSignature),
            "byte {at}"
        );
        // The checks before the signature's pass: the signer is named, its check is left.
        assert_eq!(
            verifier.signer(&token, &[digest], NOW).map(IssuerKey::id),
            Ok(rfc_key().id()),
            "byte {at}"
        );
    }
    assert_eq!(
        expiring
            .signer(&token, &[digest], NOW + 1)
            .map(IssuerKey::id),
        Err(TokenError::KeyExpired)
    );
    // An authenticator at or above the modulus is no signature at all.
    let mut huge = bytes.clone();
    huge[98..].fill(0xff);
    let token = Token::from_bytes(&huge).unwrap();
    assert_eq!(
        verifier.verify(&token, &[digest], NOW),
        Err(TokenError::BadSignature)
    );
    // A challenge digest or key id changed is caught before the signature.
    let (other_challenge, other_key) = (tampered(40), tampered(70));
    let token = Token::from_bytes(&other_challenge).unwrap();
    assert_eq!(
        verifier.verify(&token, &[digest], NOW),
        Err(TokenError::WrongChallenge)
    );
    let token = Token::from_bytes(&other_key).unwrap();
    assert_eq!(
        verifier.verify(&token, &[digest], NOW),
        Err(TokenError::UnknownKeyId)
    );
}

#[test]
fn key_set_management() {
    let mut verifier = Verifier::new();
    assert!(verifier.is_empty());
    assert!(verifier.add_key(rfc_key(), Some(10)));
    assert!(
        !verifier.add_key(rfc_key(), Some(20)),
        "same id replaces the expiry"
    );
    assert_eq!(verifier.len(), 1);
    assert_eq!(verifier.not_after(rfc_key().id()), Some(20));
    assert_eq!(verifier.not_after(&[0; 32]), None);
    assert_eq!(verifier.remove_expired(20), 0);
    assert_eq!(verifier.remove_expired(21), 1);
    assert!(verifier.key(rfc_key().id()).is_none());
    verifier.add_key(rfc_key(), None);
    assert_eq!(verifier.not_after(rfc_key().id()), None);
    assert_eq!(verifier.remove_expired(u64::MAX), 0);
    assert_eq!(verifier.keys().count(), 1);
    assert!(verifier.key(rfc_key().id()).is_some());
    assert!(verifier.remove_key(rfc_key().id()));
    assert!(!verifier.remove_key(rfc_key().id()));
    assert_eq!(
        format!("{:?}", rfc_key()),
        "IssuerKey(id ca572f8982a9ca248a3056186322d93ca147266121ddeb5632c07f1f71cd2708)"
    );
}

// --- Issuer keys ---

#[test]
fn issuer_key_reasons() {
    let pk = hex(RFC9578_PK_HEX);
    let bad = |der: &[u8]| IssuerKey::from_spki(der).err();
    assert_eq!(
        bad(b""),
        Some(TokenError::BadIssuerKey("not a DER SubjectPublicKeyInfo"))
    );
    assert_eq!(
        bad(&pk[..100]),
        Some(TokenError::BadIssuerKey("not a DER SubjectPublicKeyInfo"))
    );
    // The PSS parameters with SHA-256 (…0201) in place of SHA-384 (…0202).
    let mut sha256 = pk.clone();
    sha256[33] = 0x01;
    assert_eq!(
        bad(&sha256),
        Some(TokenError::BadIssuerKey(
            "RSASSA-PSS parameters are not SHA-384, MGF1-SHA-384, salt length 48"
        ))
    );
    // rsaEncryption with parameters other than NULL: an empty SEQUENCE (30 00) in place of 05 00.
    let mut plain = hex("30820122300d06092a864886f70d0101013000038201 0f00"
        .replace(' ', "")
        .as_str());
    plain.extend_from_slice(&pk[pk.len() - 270..]);
    assert_eq!(
        bad(&plain),
        Some(TokenError::BadIssuerKey(
            "rsaEncryption parameters are not NULL"
        ))
    );
    // An EC P-256 key.
    let ec = hex("3059301306072a8648ce3d020106082a8648ce3d03010703420004\
         6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296\
         4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5");
    assert_eq!(bad(&ec), Some(TokenError::BadIssuerKey("not an RSA key")));
    // A bit string with unused bits.
    let mut unused = pk.clone();
    unused[71] = 1;
    assert_eq!(
        bad(&unused),
        Some(TokenError::BadIssuerKey(
            "public key bit string has unused bits"
        ))
    );
    // The RSAPublicKey replaced by an OCTET STRING of the same length.
    let mut not_rsa = pk.clone();
    not_rsa[72] = 0x04;
    assert_eq!(
        bad(&not_rsa),
        Some(TokenError::BadIssuerKey("not an RSA public key"))
    );

    let modulus = &pk[pk.len() - 261..pk.len() - 5];
    assert_eq!(
        IssuerKey::from_components(modulus, &[1, 0, 1])
            .unwrap()
            .id(),
        rfc_key().id()
    );
    assert_eq!(
        IssuerKey::from_components(&[0xc5; 128], &[1, 0, 1]).err(),
        Some(TokenError::KeySize(1024))
    );
    assert_eq!(
        IssuerKey::from_components(&[0x7f; 256], &[1, 0, 1]).err(),
        Some(TokenError::KeySize(2047))
    );
    assert_eq!(
        IssuerKey::from_components(&[0xc5; 384], &[1, 0, 1]).err(),
        Some(TokenError::KeySize(3072))
    );
    assert_eq!(
        IssuerKey::from_components(&[], &[1, 0, 1]).err(),
        Some(TokenError::KeySize(0))
    );
    let mut even = modulus.to_vec();
    even[255] &= !1;
    assert_eq!(
        IssuerKey::from_components(&even, &[1, 0, 1]).err(),
        Some(TokenError::BadIssuerKey("RSA modulus is even"))
    );
    assert_eq!(
        IssuerKey::from_components(modulus, &[1]).err(),
        Some(TokenError::BadIssuerKey(
            "RSA public exponent is not an odd number from 3 to 2^33-1"
        ))
    );
    assert_eq!(
        IssuerKey::from_base64(b"not base64!").err(),
        Some(TokenError::BadIssuerKey("not base64 or base64url"))
    );
}

// --- Challenges ---

#[test]
fn challenge_reasons() {
    let long = vec![b'a'; 65536];
    let new = |issuer: &[u8], origin: &[u8]| TokenChallenge::new(2, issuer, None, origin).err();
    assert_eq!(
        new(b"", b""),
        Some(TokenError::MalformedChallenge("empty issuer name"))
    );
    assert_eq!(
        new(&long, b""),
        Some(TokenError::MalformedChallenge(
            "issuer name over 65535 bytes"
        ))
    );
    assert_eq!(
        new(b"i", &long),
        Some(TokenError::MalformedChallenge(
            "origin info over 65535 bytes"
        ))
    );
    assert!(new(&long[1..], &long[1..]).is_none());

    let decode = |h: &str| TokenChallenge::decode(&hex(h)).err().map(|e| e.to_string());
    let reason = |r: &str| Some(format!("malformed token challenge: {r}"));
    assert_eq!(decode(""), reason("truncated token type"));
    assert_eq!(decode("0002"), reason("truncated issuer name"));
    assert_eq!(decode("00020002aa"), reason("truncated issuer name"));
    assert_eq!(decode("00020001aa"), reason("truncated redemption context"));
    assert_eq!(
        decode("00020001aa01"),
        reason("truncated redemption context")
    );
    assert_eq!(decode("00020001aa00"), reason("truncated origin info"));
    assert_eq!(decode("00020001aa000001"), reason("truncated origin info"));
    assert_eq!(decode("00020000000000"), reason("empty issuer name"));
    assert_eq!(
        decode("00020001aa01ff0000"),
        reason("redemption context is neither 0 nor 32 bytes")
    );
    assert_eq!(decode("00020001aa000000ff"), reason("trailing bytes"));
    assert_eq!(decode("00020001aa000000"), None);
}

#[test]
fn challenge_digest_hashes_the_encoding() {
    let context = [9u8; 32];
    let c =
        TokenChallenge::new(2, b"issuer.example", Some(&context), b"a.example,b.example").unwrap();
    assert_eq!(c.digest(), <[u8; 32]>::from(Sha256::digest(c.encode())));
    assert_eq!(c.token_type(), 2);
    assert_eq!(c.issuer_name(), b"issuer.example");
    assert_eq!(c.origin_info(), b"a.example,b.example");
    assert_eq!(c.redemption_context(), Some(&context));
}

// --- Spend keys ---

#[test]
fn spend_key_is_pinned_and_ignores_the_authenticator() {
    let (bytes, _) = rfc_token();
    let token = Token::from_bytes(&bytes).unwrap();
    let key = spend_key(&token);
    // SHA-256("edgewise privacypass spend v1\0" || 0x0002 || token_key_id || nonce).
    assert_eq!(
        key,
        array::<32>("472dfb893b4bca8da76966533eb627c08818c3337d37aaa446663fbee9b5a765")
    );
    assert_eq!(
        key,
        spend_key_from_fields(2, token.token_key_id(), token.nonce())
    );
    let mut resigned = bytes.clone();
    resigned[300] ^= 0x55;
    resigned[34] ^= 0x55;
    assert_eq!(spend_key(&Token::from_bytes(&resigned).unwrap()), key);
    assert_ne!(
        spend_key_from_fields(1, token.token_key_id(), token.nonce()),
        key
    );
    assert_ne!(spend_key_from_fields(2, &[0; 32], token.nonce()), key);
    assert_ne!(
        spend_key_from_fields(2, token.token_key_id(), &[0; 32]),
        key
    );
}

// --- Error messages ---

#[test]
fn every_reason_has_its_own_message() {
    let all = [
        TokenError::MissingCredential,
        TokenError::NotPrivateToken,
        TokenError::MalformedHeader("x"),
        TokenError::BadBase64,
        TokenError::WrongLength {
            expected: 354,
            got: 3,
        },
        TokenError::UnknownTokenType(1),
        TokenError::UnknownKeyId,
        TokenError::KeyExpired,
        TokenError::WrongChallenge,
        TokenError::BadSignature,
        TokenError::MalformedChallenge("x"),
        TokenError::BadIssuerKey("x"),
        TokenError::KeySize(1024),
    ];
    let messages: Vec<String> = all.iter().map(|e| e.to_string()).collect();
    for (i, m) in messages.iter().enumerate() {
        assert!(!m.is_empty());
        assert!(!messages[..i].contains(m), "{m} twice");
    }
    assert_eq!(messages[4], "token is 3 bytes long, its type needs 354");
    assert_eq!(messages[5], "unsupported token type 0x0001");
    assert_eq!(
        messages[12],
        "issuer key has a 1024-bit modulus, token type 0x0002 needs 2048 bits"
    );
}

// --- Issuer ---

#[cfg(feature = "issuer")]
mod issuer {
    use rsa::rand_core::{CryptoRng, RngCore};

    use super::*;

    /// splitmix64: deterministic randomness for tests. `prefix` is handed out first, which
    /// replays a vector's salt (the rsa crate draws the salt before the blinding factor).
    struct TestRng {
        prefix: Vec<u8>,
        state: u64,
    }

    impl TestRng {
        fn new(seed: u64) -> TestRng {
            TestRng {
                prefix: Vec::new(),
                state: seed,
            }
        }
    }

    impl RngCore for TestRng {
        fn next_u32(&mut self) -> u32 {
            self.next_u64() as u32
        }

        fn next_u64(&mut self) -> u64 {
            self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        fn fill_bytes(&mut self, dest: &mut [u8]) {
            let from_prefix = dest.len().min(self.prefix.len());
            dest[..from_prefix].copy_from_slice(&self.prefix[..from_prefix]);
            self.prefix.drain(..from_prefix);
            for b in &mut dest[from_prefix..] {
                *b = self.next_u64() as u8;
            }
        }

        fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rsa::rand_core::Error> {
            self.fill_bytes(dest);
            Ok(())
        }
    }

    impl CryptoRng for TestRng {}

    fn rfc_issuer() -> Issuer {
        Issuer::from_pkcs8_pem(RFC9578_SK_PEM).unwrap()
    }

    #[test]
    fn minting_with_the_vector_salt_reproduces_rfc9578_tokens() {
        let issuer = rfc_issuer();
        assert_eq!(issuer.key().id(), rfc_key().id());
        for (i, v) in RFC9578_VECTORS.iter().enumerate() {
            let challenge_bytes = hex(v.challenge);
            let challenge = TokenChallenge::decode(&challenge_bytes).unwrap();
            let mut rng = TestRng::new(i as u64);
            rng.prefix = hex(v.salt);
            let token = issuer.mint(&challenge, &array(v.nonce), &mut rng).unwrap();
            assert_eq!(token, hex(v.token), "vector {i}");
        }
    }

    #[test]
    fn minted_tokens_verify_and_share_a_spend_key_per_nonce() {
        let pem = include_str!("../../../tests/data/test-issuer-key.pem");
        let issuer = Issuer::from_pkcs8_pem(pem).unwrap();
        let mut verifier = Verifier::new();
        verifier.add_key(IssuerKey::from_spki(issuer.key().spki()).unwrap(), None);
        let challenge = TokenChallenge::new(2, b"issuer.example", None, b"origin.example").unwrap();
        let mut rng = TestRng::new(7);
        let nonce = [42u8; 32];
        let first = issuer.mint(&challenge, &nonce, &mut rng).unwrap();
        let second = issuer.mint(&challenge, &nonce, &mut rng).unwrap();
        assert_ne!(first, second, "fresh salt, fresh signature");
        let mut keys = Vec::new();
        for bytes in [&first, &second] {
            let header = header_for(bytes);
            let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
            let token = Token::from_authorization(header.as_bytes(), &mut scratch).unwrap();
            verifier.verify(&token, &[challenge.digest()], NOW).unwrap();
            keys.push(spend_key(&token));
        }
        assert_eq!(keys[0], keys[1]);
        // Tokens of one issuer do not verify under another's key id or key.
        let other = rfc_issuer();
        let forged = other.mint(&challenge, &nonce, &mut rng).unwrap();
        let token = Token::from_bytes(&forged).unwrap();
        assert_eq!(
            verifier.verify(&token, &[challenge.digest()], NOW),
            Err(TokenError::UnknownKeyId)
        );
        let mut swapped = forged.clone();
        swapped[66..98].copy_from_slice(issuer.key().id());
        let token = Token::from_bytes(&swapped).unwrap();
        assert_eq!(
            verifier.verify(&token, &[challenge.digest()], NOW),
            Err(TokenError::BadSignature)
        );
    }

    /// The private key never reaches `Debug` (the rsa crate's own prints every component).
    #[test]
    fn an_issuer_shows_only_its_public_key() {
        let issuer = rfc_issuer();
        let shown = format!("{issuer:?}");
        assert!(shown.starts_with("Issuer { key: IssuerKey"), "{shown}");
        for secret in ["BigUint", "primes", "d:"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(shown.len() < 200, "{shown}");
    }

    #[test]
    fn issuer_reasons() {
        assert_eq!(
            Issuer::from_pkcs8_pem("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n")
                .err(),
            Some(TokenError::BadIssuerKey("not a PKCS#8 PEM RSA private key"))
        );
        let issuer = rfc_issuer();
        let challenge = TokenChallenge::new(1, b"issuer.example", None, b"").unwrap();
        assert_eq!(
            issuer
                .mint(&challenge, &[0; 32], &mut TestRng::new(1))
                .err(),
            Some(TokenError::UnknownTokenType(1))
        );
    }

    static TEST_SIGNER: std::sync::LazyLock<(
        rsa::pss::BlindedSigningKey<sha2::Sha384>,
        IssuerKey,
    )> = std::sync::LazyLock::new(|| {
        use rsa::pkcs8::DecodePrivateKey as _;
        let pem = include_str!("../../../tests/data/test-issuer-key.pem");
        let private = rsa::RsaPrivateKey::from_pkcs8_pem(pem).unwrap();
        let key = Issuer::from_pkcs8_pem(pem).unwrap().key().clone();
        (rsa::pss::BlindedSigningKey::new(private), key)
    });

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The rsa crate's PSS signatures verify under edgewise's verifier, and no longer do
        /// once any byte of message or signature changes.
        #[test]
        fn rsa_crate_signatures_verify(
            message in proptest::collection::vec(any::<u8>(), 0..300),
            flip in any::<proptest::sample::Index>(),
            seed in any::<u64>(),
        ) {
            use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};
            let (signer, key) = &*TEST_SIGNER;
            let signature = signer.sign_with_rng(&mut TestRng::new(seed), &message).to_bytes();
            prop_assert!(key.verifies(&message, &signature));
            let mut bad = signature.to_vec();
            let at = flip.index(bad.len());
            bad[at] ^= 0x10;
            prop_assert!(!key.verifies(&message, &bad));
            if !message.is_empty() {
                let mut other = message.clone();
                let at = flip.index(other.len());
                other[at] ^= 0x01;
                prop_assert!(!key.verifies(&other, &signature));
            }
        }
    }

    #[test]
    fn pss_zero_tokens_verify_and_other_salt_lengths_do_not() {
        use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};
        let private = {
            use rsa::pkcs8::DecodePrivateKey as _;
            rsa::RsaPrivateKey::from_pkcs8_pem(RFC9578_SK_PEM).unwrap()
        };
        let (bytes, digest) = rfc_token();
        let signed = |salt_len: usize| {
            let signer = rsa::pss::BlindedSigningKey::<sha2::Sha384>::new_with_salt_len(
                private.clone(),
                salt_len,
            );
            let signature = signer
                .sign_with_rng(&mut TestRng::new(3), &bytes[..98])
                .to_bytes();
            let mut token = bytes[..98].to_vec();
            token.extend_from_slice(&signature);
            token
        };
        let verify = |token: &[u8]| {
            let token = Token::from_bytes(token).unwrap();
            rfc_verifier().verify(&token, &[digest], NOW)
        };
        assert_eq!(verify(&signed(0)), Ok(()));
        assert_eq!(verify(&signed(48)), Ok(()));
        for salt_len in [1, 32] {
            assert_eq!(
                verify(&signed(salt_len)),
                Err(TokenError::BadSignature),
                "salt of {salt_len} bytes"
            );
        }
    }

    #[test]
    fn a_different_salt_length_does_not_verify() {
        use rsa::signature::{RandomizedSigner as _, SignatureEncoding as _};
        let private = {
            use rsa::pkcs8::DecodePrivateKey as _;
            rsa::RsaPrivateKey::from_pkcs8_pem(RFC9578_SK_PEM).unwrap()
        };
        let (bytes, digest) = rfc_token();
        let signer = rsa::pss::BlindedSigningKey::<sha2::Sha384>::new_with_salt_len(private, 32);
        let signature = signer
            .sign_with_rng(&mut TestRng::new(3), &bytes[..98])
            .to_bytes();
        let mut token = bytes[..98].to_vec();
        token.extend_from_slice(&signature);
        let token = Token::from_bytes(&token).unwrap();
        assert_eq!(
            rfc_verifier().verify(&token, &[digest], NOW),
            Err(TokenError::BadSignature)
        );
    }
}

// --- Properties ---

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_headers_never_panic(value in ".{0,600}") {
        let _ = decode_header(&value);
    }

    #[test]
    fn arbitrary_header_bytes_never_panic(value in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
        let _ = Token::from_authorization(&value, &mut scratch);
    }

    #[test]
    fn header_shaped_noise_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("PrivateToken".to_string()), Just("token".to_string()), Just("=".to_string()),
                Just("\"".to_string()), Just(",".to_string()), Just(" ".to_string()),
                Just("\\".to_string()), Just("Basic".to_string()), "[A-Za-z0-9_=/+-]{0,8}",
            ],
            0..24,
        )
    ) {
        let _ = decode_header(&parts.concat());
    }

    #[test]
    fn arbitrary_base64_never_panics(text in "[A-Za-z0-9_=+/-]{0,600}") {
        let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
        let _ = Token::decode(text.as_bytes(), &mut scratch);
        let _ = IssuerKey::from_base64(text.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = Token::from_bytes(&bytes);
        let _ = IssuerKey::from_spki(&bytes);
        if let Ok(c) = TokenChallenge::decode(&bytes) {
            prop_assert_eq!(c.encode(), bytes);
        }
    }

    #[test]
    fn encoded_tokens_decode_exactly(bytes in proptest::collection::vec(any::<u8>(), 352..=352)) {
        let token = [&[0, 2][..], &bytes].concat();
        for text in [URL_SAFE.encode(&token), URL_SAFE_NO_PAD.encode(&token)] {
            let header = format!("Basic x, PrivateToken a=\"b\", token={text}, c=d");
            prop_assert_eq!(decode_header(&header), Ok(token.clone()));
        }
    }

    #[test]
    fn challenges_round_trip(
        token_type in any::<u16>(),
        issuer in proptest::collection::vec(any::<u8>(), 1..300),
        context in proptest::option::of(any::<[u8; 32]>()),
        origin in proptest::collection::vec(any::<u8>(), 0..300),
    ) {
        let c = TokenChallenge::new(token_type, &issuer, context.as_ref(), &origin).unwrap();
        let encoded = c.encode();
        prop_assert_eq!(TokenChallenge::decode(&encoded), Ok(c));
        prop_assert_eq!(c.digest(), <[u8; 32]>::from(Sha256::digest(&encoded)));
    }
}

// --- The Montgomery arithmetic against num-bigint (via the rsa crate) ---

fn rfc_modulus() -> [u8; 256] {
    let pk = hex(RFC9578_PK_HEX);
    pk[pk.len() - 261..pk.len() - 5].try_into().unwrap()
}

#[test]
fn pss_key_refuses_what_montgomery_cannot_handle() {
    let n = rfc_modulus();
    assert!(pss::PssKey::new(&n, 65537).is_some());
    assert!(pss::PssKey::new(&n, 65536).is_none(), "even exponent");
    assert!(pss::PssKey::new(&n, 1).is_none());
    let mut even = n;
    even[255] &= 0xfe;
    assert!(pss::PssKey::new(&even, 65537).is_none(), "even modulus");
    let mut short = n;
    short[0] = 0x7f;
    assert!(
        pss::PssKey::new(&short, 65537).is_none(),
        "2047-bit modulus"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// s^e mod n agrees with num-bigint for random s below n, random odd e and random odd
    /// 2048-bit moduli (including ones whose top limbs are all ones, where carries pile up).
    #[test]
    fn montgomery_pow_matches_num_bigint(
        s in any::<[[u8; 32]; 8]>(),
        e in (1u64..1 << 33).prop_map(|e| e | 1).prop_filter("e > 1", |&e| e > 1),
        n in any::<[[u8; 32]; 8]>(),
        ones in 0usize..40,
    ) {
        use rsa::BigUint;
        let mut modulus = [0u8; 256];
        for (chunk, part) in modulus.chunks_mut(32).zip(&n) {
            chunk.copy_from_slice(part);
        }
        modulus[..ones.min(256)].fill(0xff);
        modulus[0] |= 0x80;
        modulus[255] |= 1;
        let mut base = [0u8; 256];
        for (chunk, part) in base.chunks_mut(32).zip(&s) {
            chunk.copy_from_slice(part);
        }
        base[0] &= 0x7f;
        let key = pss::PssKey::new(&modulus, e).unwrap();
        let ours = pss::pow_e_for_tests(&key, &base);
        let expected = BigUint::from_bytes_be(&base)
            .modpow(&BigUint::from(e), &BigUint::from_bytes_be(&modulus))
            .to_bytes_be();
        let mut padded = [0u8; 256];
        padded[256 - expected.len()..].copy_from_slice(&expected);
        prop_assert_eq!(ours, padded);
    }

    /// Random authenticators under the real key id and an accepted challenge never verify.
    #[test]
    fn random_tokens_never_verify(nonce in any::<[u8; 32]>(), sig in proptest::collection::vec(any::<u8>(), 256..=256)) {
        let (bytes, digest) = rfc_token();
        let token = [&bytes[..2], &nonce, &bytes[34..98], &sig].concat();
        let token = Token::from_bytes(&token).unwrap();
        prop_assert_eq!(rfc_verifier().verify(&token, &[digest], NOW), Err(TokenError::BadSignature));
    }
}

// --- Both limb widths (64-bit natively, 32-bit in Wasm), each run natively ---

type Limbs64 = pss::mont::Modulus<u64, 32>;
type Limbs32 = pss::mont::Modulus<u32, 64>;

/// An odd 2048-bit modulus from random bytes, with its top `ones` bytes all ones (carries pile
/// up) and its low `low` bytes all `fill` (0x00: long runs of zero limbs; 0xff: n0 = -1).
fn shaped_modulus(bytes: Vec<u8>, ones: usize, low: usize, fill: u8) -> [u8; 256] {
    let mut n: [u8; 256] = bytes.try_into().unwrap();
    n[..ones].fill(0xff);
    n[256 - low..].fill(fill);
    n[0] |= 0x80;
    n[255] |= 1;
    n
}

fn be_bytes(x: &rsa::BigUint) -> [u8; 256] {
    let bytes = x.to_bytes_be();
    let mut out = [0u8; 256];
    out[256 - bytes.len()..].copy_from_slice(&bytes);
    out
}

/// The verdicts of the key as built for this target and of both limb widths explicitly.
fn verdicts(n: &[u8; 256], e: u64, message: &[u8], signature: &[u8]) -> [bool; 3] {
    let key = pss::PssKey::new(n, e).unwrap();
    [
        key.verify(message, signature),
        pss::verify_with(&Limbs64::new(n).unwrap(), e, message, signature),
        pss::verify_with(&Limbs32::new(n).unwrap(), e, message, signature),
    ]
}

#[test]
fn both_limb_widths_refuse_what_montgomery_cannot_handle() {
    let n = rfc_modulus();
    let mut even = n;
    even[255] &= 0xfe;
    let mut short = n;
    short[0] = 0x7f;
    for bad in [even, short, [0; 256]] {
        assert!(Limbs64::new(&bad).is_none());
        assert!(Limbs32::new(&bad).is_none());
    }
    // The smallest and largest moduli they take.
    let mut smallest = [0u8; 256];
    smallest[0] = 0x80;
    smallest[255] = 1;
    for n in [smallest, [0xff; 256]] {
        assert!(Limbs64::new(&n).is_some());
        assert!(Limbs32::new(&n).is_some());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// s^e mod n agrees with num-bigint on both limb widths, for edge and random s below n, the
    /// usual and random odd e, and moduli shaped to stress carries at both ends; s at or above n
    /// is refused.
    #[test]
    fn both_limb_widths_match_num_bigint(
        n in proptest::collection::vec(any::<u8>(), 256),
        (ones, low, fill) in (0usize..40, 0usize..40, prop_oneof![Just(0u8), Just(0xff)]),
        s in proptest::collection::vec(any::<u8>(), 256),
        which in 0u8..5,
        e in prop_oneof![Just(3u64), Just(65537), (1u64..1 << 33).prop_map(|e| e | 1)],
    ) {
        use rsa::BigUint;
        let n = shaped_modulus(n, ones, low, fill);
        let big_n = BigUint::from_bytes_be(&n);
        let one = BigUint::from(1u8);
        let s = match which {
            0 => BigUint::from(0u8),
            1 => one.clone(),
            2 => &big_n - &one,
            // Random, below 2^2047 <= n.
            _ => BigUint::from_bytes_be(&s) >> 1usize,
        };
        let expected = be_bytes(&s.modpow(&BigUint::from(e), &big_n));
        let (wide, narrow) = (Limbs64::new(&n).unwrap(), Limbs32::new(&n).unwrap());
        let s = be_bytes(&s);
        prop_assert_eq!(wide.pow(&s, e), Some(expected));
        prop_assert_eq!(narrow.pow(&s, e), Some(expected));
        let at_or_above = [n, be_bytes(&(&big_n + &one)), [0xff; 256]];
        for s in &at_or_above[..if n == [0xff; 256] { 1 } else { 3 }] {
            prop_assert_eq!(wide.pow(s, e), None);
            prop_assert_eq!(narrow.pow(s, e), None);
        }
    }
}

// --- EMSA-PSS-VERIFY, step by step (RFC 8017 section 9.1.2) ---

/// The RFC 9578 issuer key as raw RSA: n and d. Read from DER so that it needs no `pem`
/// feature of the rsa crate (that comes only with `issuer`).
struct RawRsa {
    n: rsa::BigUint,
    d: rsa::BigUint,
}

static RAW_RSA: std::sync::LazyLock<RawRsa> = std::sync::LazyLock::new(|| {
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::traits::{PrivateKeyParts as _, PublicKeyParts as _};
    let body: String = RFC9578_SK_PEM
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    let private = rsa::RsaPrivateKey::from_pkcs8_der(&STANDARD.decode(body).unwrap()).unwrap();
    assert_eq!(be_bytes(private.n()), rfc_modulus());
    RawRsa {
        n: private.n().clone(),
        d: private.d().clone(),
    }
});

/// The signature whose public operation yields `em` (which must lie below n).
fn sign_em(em: &[u8; 256]) -> [u8; 256] {
    let em = rsa::BigUint::from_bytes_be(em);
    assert!(em < RAW_RSA.n, "EM at or above n");
    be_bytes(&em.modpow(&RAW_RSA.d, &RAW_RSA.n))
}

fn sha384(parts: &[&[u8]]) -> [u8; 48] {
    let mut hash = sha2::Sha384::new();
    for part in parts {
        hash.update(part);
    }
    hash.finalize().into()
}

/// EMSA-PSS-ENCODE (RFC 8017 section 9.1.1) for emBits = 2047, written out apart from the
/// verifier, in two halves so that a test can break a step in between: DB (PS || 0x01 ||
/// salt, 207 bytes) and H.
fn pss_db_and_h(message: &[u8], salt: &[u8]) -> (Vec<u8>, [u8; 48]) {
    let h = sha384(&[&[0; 8], &sha384(&[message]), salt]);
    let mut db = vec![0u8; 207 - salt.len() - 1];
    db.push(0x01);
    db.extend_from_slice(salt);
    (db, h)
}

/// maskedDB || H || 0xbc, with the bit above emBits cleared.
fn pss_em(db: &[u8], h: &[u8; 48]) -> [u8; 256] {
    let mut em = [0u8; 256];
    for (counter, chunk) in (0u32..).zip(em[..207].chunks_mut(48)) {
        let mask = sha384(&[h, &counter.to_be_bytes()]);
        for ((out, d), m) in chunk.iter_mut().zip(&db[48 * counter as usize..]).zip(mask) {
            *out = d ^ m;
        }
    }
    em[0] &= 0x7f;
    em[207..255].copy_from_slice(h);
    em[255] = 0xbc;
    em
}

#[test]
fn pss_test_encoder_reproduces_rfc9578_vector_1() {
    let (bytes, _) = rfc_token();
    let key = pss::PssKey::new(&rfc_modulus(), 65537).unwrap();
    let em = pss::pow_e_for_tests(&key, bytes[98..].try_into().unwrap());
    let (db, h) = pss_db_and_h(&bytes[..98], &hex(RFC9578_VECTORS[0].salt));
    assert_eq!(pss_em(&db, &h), em);
}

#[test]
fn emsa_pss_verify_checks_every_step() {
    let n = rfc_modulus();
    let message = b"edgewise";
    let check = |em: &[u8; 256]| verdicts(&n, 65537, message, &sign_em(em));
    let salt = [0x5a; 48];
    let (db, h) = pss_db_and_h(message, &salt);
    let good = pss_em(&db, &h);
    assert_eq!(check(&good), [true; 3], "well-formed");

    // Step 4: the trailer byte.
    for trailer in [0x00, 0xbd, 0x3c] {
        let mut em = good;
        em[255] = trailer;
        assert_eq!(check(&em), [false; 3], "trailer {trailer:#04x}");
    }
    // Step 6: the bit above emBits. Unmasking clears it again (step 9), so only the explicit
    // check refuses it; pick a salt whose EM stays below n with it set.
    let (db, h) = (0u8..)
        .map(|i| pss_db_and_h(message, &[i; 48]))
        .find(|(db, h)| {
            let mut em = pss_em(db, h);
            em[0] |= 0x80;
            em < n
        })
        .unwrap();
    let mut em = pss_em(&db, &h);
    assert_eq!(check(&em), [true; 3]);
    em[0] |= 0x80;
    assert_eq!(check(&em), [false; 3], "top bit set");
    // Step 10: PS all zero, then exactly 0x01; a salt of any length but 48 puts the 0x01
    // elsewhere.
    for (at, value) in [
        (0, 0x01),
        (0, 0x40),
        (100, 0x01),
        (157, 0x80),
        (158, 0x00),
        (158, 0x03),
    ] {
        let (mut db, h) = pss_db_and_h(message, &salt);
        db[at] = value;
        assert_eq!(
            check(&pss_em(&db, &h)),
            [false; 3],
            "DB[{at}] = {value:#04x}"
        );
    }
    for len in [1, 20, 32, 47, 49, 64, 158] {
        let (db, h) = pss_db_and_h(message, &vec![0x5a; len]);
        assert_eq!(check(&pss_em(&db, &h)), [false; 3], "salt of {len} bytes");
    }
    // PSSZERO: no salt at all, the separator in DB's last byte.
    let (db, h) = pss_db_and_h(message, &[]);
    assert_eq!(check(&pss_em(&db, &h)), [true; 3], "empty salt");
    // Its H over a 48-byte salt of zeros is not the same signature.
    let (db, _) = pss_db_and_h(message, &[]);
    let (_, h48) = pss_db_and_h(message, &[0; 48]);
    assert_eq!(
        check(&pss_em(&db, &h48)),
        [false; 3],
        "empty salt, H of another"
    );
    // Steps 12-14: H' over another message, or another salt than DB carries.
    let (db, _) = pss_db_and_h(message, &salt);
    let (_, other_h) = pss_db_and_h(b"edgewisf", &salt);
    assert_eq!(
        check(&pss_em(&db, &other_h)),
        [false; 3],
        "H of another message"
    );
    let (_, other_h) = pss_db_and_h(message, &[0x5b; 48]);
    assert_eq!(
        check(&pss_em(&db, &other_h)),
        [false; 3],
        "H of another salt"
    );
}

#[test]
fn signatures_out_of_range_or_of_the_wrong_length_do_not_verify() {
    use rsa::BigUint;
    let n = rfc_modulus();
    let message = b"edgewise";
    // s + n has the same value modulo n: RSAVP1 must refuse it as out of range, not reduce it.
    // Pick a salt whose signature s leaves room for s + n in 256 bytes.
    let (good, wrapped) = (0u8..)
        .map(|i| {
            let (db, h) = pss_db_and_h(message, &[i; 48]);
            let good = sign_em(&pss_em(&db, &h));
            let wrapped = BigUint::from_bytes_be(&good) + BigUint::from_bytes_be(&n);
            (good, wrapped.to_bytes_be())
        })
        .find(|(_, wrapped)| wrapped.len() == 256)
        .unwrap();
    assert_eq!(verdicts(&n, 65537, message, &good), [true; 3]);
    assert_eq!(verdicts(&n, 65537, message, &wrapped), [false; 3], "s + n");
    let n_plus_1 = be_bytes(&(BigUint::from_bytes_be(&n) + 1u8));
    let n_minus_1 = be_bytes(&(BigUint::from_bytes_be(&n) - 1u8));
    let mut one = [0u8; 256];
    one[255] = 1;
    for s in [n, n_plus_1, [0xff; 256], n_minus_1, [0; 256], one] {
        assert_eq!(verdicts(&n, 65537, message, &s), [false; 3]);
    }
    let longer = [&[0u8][..], &good].concat();
    for s in [&good[..255], &good[1..], &longer, &[], &good[..1]] {
        assert_eq!(
            verdicts(&n, 65537, message, s),
            [false; 3],
            "{} bytes",
            s.len()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(16))]

    /// Well-formed signatures over random messages and salts verify on both limb widths, and
    /// stop verifying once a byte of the signature or message changes.
    #[test]
    fn both_limb_widths_verify_pss(
        message in proptest::collection::vec(any::<u8>(), 0..300),
        salt in any::<[[u8; 16]; 3]>(),
        flip in any::<proptest::sample::Index>(),
    ) {
        let n = rfc_modulus();
        let (db, h) = pss_db_and_h(&message, salt.as_flattened());
        let signature = sign_em(&pss_em(&db, &h));
        prop_assert_eq!(verdicts(&n, 65537, &message, &signature), [true; 3]);
        let mut bad = signature;
        bad[flip.index(256)] ^= 0x04;
        prop_assert_eq!(verdicts(&n, 65537, &message, &bad), [false; 3]);
        let mut other = message.clone();
        other.push(0);
        prop_assert_eq!(verdicts(&n, 65537, &other, &signature), [false; 3]);
    }
}
