//! Privacy Pass redemption, edgewise beside its peers:
//!
//! - `privacypass/decode`: `Authorization` header to token bytes (parse + base64url into a
//!   reused buffer), beside a bare base64 decode of the already-extracted value.
//! - `privacypass/challenge_digest`: `TokenChallenge::digest` (hashes the fields in place)
//!   beside encoding the challenge and hashing that.
//! - `privacypass/verify`: the whole redemption check (header, decode, challenge and key
//!   lookup, RSA-2048 PSS verify), beside the `rsa` crate's own `pss::VerifyingKey` on
//!   pre-extracted bytes (edgewise does its own arithmetic: see `shared/src/privacypass/pss.rs`).
//! - `privacypass/reject`: refusing a token for a foreign challenge, which must not cost an RSA
//!   operation.
//!
//! The token is RFC 9578 appendix A.2 test vector 1.

use std::hint::black_box;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use criterion::{Criterion, criterion_group, criterion_main};
use edgewise::{IssuerKey, TOKEN_SCRATCH_LEN, Token, TokenChallenge, Verifier};
use edgewise_benches::rfc9578::{
    CHALLENGE_HEX, PUBLIC_KEY_HEX, TOKEN_HEX, rsa_verifier, rsa_verifies, unhex,
};
use sha2::{Digest, Sha256};

fn hex(text: &str) -> Vec<u8> {
    unhex(text).unwrap()
}

struct Fixture {
    header: String,
    token: Vec<u8>,
    challenge: Vec<u8>,
    digest: [u8; 32],
    verifier: Verifier,
    peer: rsa::pss::VerifyingKey<sha2::Sha384>,
}

fn fixture() -> Fixture {
    let pk = hex(PUBLIC_KEY_HEX);
    let token = hex(TOKEN_HEX);
    let challenge = hex(CHALLENGE_HEX);
    let digest = TokenChallenge::decode(&challenge).unwrap().digest();
    let mut verifier = Verifier::new();
    verifier.add_key(IssuerKey::from_spki(&pk).unwrap(), None);
    let peer = rsa_verifier().unwrap();
    Fixture {
        header: format!("PrivateToken token=\"{}\"", URL_SAFE.encode(&token)),
        token,
        challenge,
        digest,
        verifier,
        peer,
    }
}

fn redeem(
    f: &Fixture,
    header: &[u8],
    accepted: &[[u8; 32]],
    scratch: &mut [u8; TOKEN_SCRATCH_LEN],
) -> bool {
    let Ok(token) = Token::from_authorization(header, scratch) else {
        return false;
    };
    f.verifier.verify(&token, accepted, 0).is_ok()
}

fn decode(c: &mut Criterion) {
    let f = fixture();
    let value = &f.header.as_bytes()["PrivateToken token=\"".len()..f.header.len() - 1];
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    let mut group = c.benchmark_group("privacypass/decode");
    group.bench_function("edgewise::Token::from_authorization", |b| {
        b.iter(|| Token::from_authorization(black_box(f.header.as_bytes()), &mut scratch).is_ok())
    });
    let mut out = [0u8; TOKEN_SCRATCH_LEN];
    group.bench_function("base64 decode_slice (value only)", |b| {
        b.iter(|| URL_SAFE.decode_slice(black_box(value), &mut out).is_ok())
    });
    group.finish();
}

fn challenge_digest(c: &mut Criterion) {
    let f = fixture();
    let challenge = TokenChallenge::decode(&f.challenge).unwrap();
    let mut group = c.benchmark_group("privacypass/challenge_digest");
    group.bench_function("edgewise::TokenChallenge::digest", |b| {
        b.iter(|| black_box(&challenge).digest())
    });
    group.bench_function("encode + sha256", |b| {
        b.iter(|| <[u8; 32]>::from(Sha256::digest(black_box(&challenge).encode())))
    });
    group.finish();
}

fn verify(c: &mut Criterion) {
    let f = fixture();
    let accepted = [[0u8; 32], f.digest];
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    assert!(redeem(&f, f.header.as_bytes(), &accepted, &mut scratch));
    assert!(rsa_verifies(&f.peer, &f.token));
    let mut group = c.benchmark_group("privacypass/verify");
    group.bench_function("edgewise (header to verdict)", |b| {
        b.iter(|| redeem(&f, black_box(f.header.as_bytes()), &accepted, &mut scratch))
    });
    group.bench_function("rsa::pss::VerifyingKey", |b| {
        b.iter(|| rsa_verifies(&f.peer, black_box(&f.token)))
    });
    group.finish();
}

fn reject(c: &mut Criterion) {
    let f = fixture();
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    let mut group = c.benchmark_group("privacypass/reject");
    group.bench_function("edgewise (wrong challenge)", |b| {
        b.iter(|| {
            redeem(
                &f,
                black_box(f.header.as_bytes()),
                &[[7u8; 32]],
                &mut scratch,
            )
        })
    });
    group.finish();
}

// RSA verification takes tens of microseconds: a few seconds per peer gives thousands of
// iterations, enough for stable medians on a noisy 2-core machine.
fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(50)
}

criterion_group! {
    name = benches;
    config = config();
    targets = decode, challenge_digest, verify, reject
}
criterion_main!(benches);
