//! Privacy Pass redemption, edgewise beside the floor it is built on:
//!
//! - `privacypass/decode`: `Authorization` header to token bytes (parse + base64url into a
//!   reused buffer), beside a bare base64 decode of the already-extracted value.
//! - `privacypass/challenge_digest`: `TokenChallenge::digest` (hashes the fields in place)
//!   beside encoding the challenge and hashing that.
//! - `privacypass/verify`: the whole redemption check (header, decode, challenge and key
//!   lookup, RSA-2048 PSS verify), beside the `rsa` crate's own `pss::VerifyingKey` on
//!   pre-extracted bytes: the floor, since edgewise verifies with it.
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
use rsa::pkcs8::DecodePublicKey as _;
use rsa::signature::Verifier as _;
use sha2::{Digest, Sha256};

const PK_HEX: &str = "\
    30820152303d06092a864886f70d01010a3030a00d300b0609608648016503040202a11a301806092a864886\
    f70d010108300b0609608648016503040202a2030201300382010f003082010a0282010100cb1aed6b6a95f5\
    b1ce013a4cfcab25b94b2e64a23034e4250a7eab43c0df3a8c12993af12b111908d4b471bec31d4b6c9ad9cd\
    da90612a2ee903523e6de5a224d6b02f09e5c374d0cfe01d8f529c500a78a2f67908fa682b5a2b430c81eaf1\
    af72d7b5e794fc98a3139276879757ce453b526ef9bf6ceb99979b8423b90f4461a22af37aab0cf5733f7597\
    abe44d31c732db68a181c6cbbe607d8c0e52e0655fd9996dc584eca0be87afbcd78a337d17b1dba9e828bbd8\
    1e291317144e7ff89f55619709b096cbb9ea474cead264c2073fe49740c01f00e109106066983d21e5f83f08\
    6e2e823c879cd43cef700d2a352a9babd612d03cad02db134b7e225a5f0203010001";

const CHALLENGE_HEX: &str = "\
    0002000e6973737565722e6578616d706c65208e7acc900e393381e8810b7c9e4a68b5163f1f880ab6688a6f\
    fe780923609e88000e6f726967696e2e6578616d706c65";

const TOKEN_HEX: &str = "\
    0002aa72019d1f951df197021ce63876fe8b0a02dc1c31a12b0a2dd1508d07827f055969f643b4cfda5196d4\
    aa86aeb5368834f4f06de46950ed435b3b81bd036d44ca572f8982a9ca248a3056186322d93ca147266121dd\
    eb5632c07f1f71cd2708bc6a21b533d07294b5e900faf5537dd3eb33cee4e08c9670d1e5358fd184b0e00c63\
    7174f5206b14c7bb0e724ebf6b56271e5aa2ed94c051c4a433d302b23bc52460810d489fb050f9de5c868c6c\
    1b06e3849fd087629f704cc724bc0d0984d5c339686fcdd75f9a9cdd25f37f855f6f4c584d84f716864f546b\
    696d620c5bd41a811498de84ff9740ba3003ba2422d26b91eb745c084758974642a42078201543246ddb5803\
    0ea8e722376aa82484dca9610a8fb7e018e396165462e17a03e40ea7e128c090a911ecc708066cb201833010\
    c1ebd4e910fc8e27a1be467f78671836a508257123a45e4e0ae2180a434bd1037713466347a8ebe46439d3da\
    1970";

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

struct Fixture {
    header: String,
    token: Vec<u8>,
    challenge: Vec<u8>,
    digest: [u8; 32],
    verifier: Verifier,
    floor: rsa::pss::VerifyingKey<sha2::Sha384>,
}

fn fixture() -> Fixture {
    let pk = hex(PK_HEX);
    let token = hex(TOKEN_HEX);
    let challenge = hex(CHALLENGE_HEX);
    let digest = TokenChallenge::decode(&challenge).unwrap().digest();
    let mut verifier = Verifier::new();
    verifier.add_key(IssuerKey::from_spki(&pk).unwrap(), None);
    // The rsa crate reads only rsaEncryption SPKIs: rebuild one around the same RSAPublicKey.
    let mut plain = hex("30820122300d06092a864886f70d01010105000382010f00");
    plain.extend_from_slice(&pk[pk.len() - 270..]);
    let floor =
        rsa::pss::VerifyingKey::new(rsa::RsaPublicKey::from_public_key_der(&plain).unwrap());
    Fixture {
        header: format!("PrivateToken token=\"{}\"", URL_SAFE.encode(&token)),
        token,
        challenge,
        digest,
        verifier,
        floor,
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
    let (input, authenticator) = f.token.split_at(98);
    let mut group = c.benchmark_group("privacypass/verify");
    group.bench_function("edgewise (header to verdict)", |b| {
        b.iter(|| redeem(&f, black_box(f.header.as_bytes()), &accepted, &mut scratch))
    });
    group.bench_function("rsa::pss::VerifyingKey (floor)", |b| {
        b.iter(|| {
            let signature = rsa::pss::Signature::try_from(black_box(authenticator)).unwrap();
            f.floor.verify(black_box(input), &signature).is_ok()
        })
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
