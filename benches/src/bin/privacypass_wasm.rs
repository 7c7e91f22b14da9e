//! Privacy Pass token verification as a plain binary, so it runs where criterion cannot:
//! compiled to `wasm32-wasip1` under Node (V8, the engine Workers run) by
//! `scripts/bench-privacypass-wasm.sh`. Built natively it prints the same table, for a
//! side-by-side read.
//!
//!   privacypass_wasm [--batches N] [--batch-ms MS]
//!
//! Each cell is the median over batches (rows interleaved) of the time per `Verifier::verify` of
//! an already decoded token: essentially the RSA-2048 PSS verification, since the challenge and
//! key lookups before it cost well under a microsecond. Beside it, the peer: the `rsa` crate's
//! `pss::VerifyingKey` on the same token, and the ratio edgewise ÷ peer.

use std::hint::black_box;
use std::process::ExitCode;

use edgewise::{IssuerKey, Token, TokenChallenge, TokenError, Verifier};
use edgewise_benches::batch::{Config, Sampler, TARGET};
use edgewise_benches::rfc9578::{
    CHALLENGE_HEX, PUBLIC_KEY_HEX, TOKEN_HEX, rsa_verifier, rsa_verifies, unhex,
};

/// Far from any expiry: the vectors' keys are added without one anyway.
const NOW: u64 = 1_700_000_000;

struct Fixture {
    verifier: Verifier,
    peer: rsa::pss::VerifyingKey<sha2::Sha384>,
    digest: [u8; 32],
    valid: Vec<u8>,
    /// The valid token with its last signature byte changed: still below n, so verification
    /// runs the whole RSA operation before it fails.
    forged: Vec<u8>,
}

fn fixture() -> Result<Fixture, String> {
    let key = IssuerKey::from_spki(&unhex(PUBLIC_KEY_HEX)?).map_err(|e| e.to_string())?;
    let mut verifier = Verifier::new();
    verifier.add_key(key, None);
    let challenge = unhex(CHALLENGE_HEX)?;
    let digest = TokenChallenge::decode(&challenge)
        .map_err(|e| e.to_string())?
        .digest();
    let valid = unhex(TOKEN_HEX)?;
    let mut forged = valid.clone();
    if let Some(last) = forged.last_mut() {
        *last ^= 1;
    }
    let f = Fixture {
        verifier,
        peer: rsa_verifier()?,
        digest,
        valid,
        forged,
    };
    if check(&f, &f.valid) != Ok(()) || check(&f, &f.forged) != Err(TokenError::BadSignature) {
        return Err("the RFC 9578 vector does not verify as expected".to_owned());
    }
    if !rsa_verifies(&f.peer, &f.valid) || rsa_verifies(&f.peer, &f.forged) {
        return Err("the rsa crate does not verify the RFC 9578 vector as expected".to_owned());
    }
    Ok(f)
}

fn check(f: &Fixture, token: &[u8]) -> Result<(), TokenError> {
    let token = Token::from_bytes(black_box(token))?;
    f.verifier.verify(&token, &[f.digest], NOW)
}

/// Rows of (name, edgewise ns, peer ns).
fn run(cfg: &Config, f: &Fixture) -> Vec<(&'static str, f64, f64)> {
    // Each row's name, its peer's sample name, and the token.
    let rows = [
        ("RFC 9578 vector 1 (valid)", "rsa: valid", &f.valid),
        ("same, signature forged", "rsa: forged", &f.forged),
    ];
    let mut sampler = Sampler::new(cfg);
    for _ in 0..cfg.batches {
        for (row, peer, token) in rows {
            sampler.batch(row, 1, || check(f, black_box(token)).is_ok());
            sampler.batch(peer, 1, || rsa_verifies(&f.peer, black_box(token)));
        }
    }
    let median = |name| sampler.median(name).unwrap_or(f64::NAN);
    rows.iter()
        .map(|&(row, peer, _)| (row, median(row), median(peer)))
        .collect()
}

fn main() -> ExitCode {
    let cfg = match Config::new(31, 20, 300).from_args("privacypass_wasm", "", |_, _| false) {
        Ok(cfg) => cfg,
        Err(code) => return code,
    };
    let f = match fixture() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("privacypass_wasm: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!(
        "edgewise privacypass verify, {TARGET}: median of {} batches of ~{} ms, us per verify",
        cfg.batches,
        cfg.batch.as_millis(),
    );
    println!(
        "  {:<28} {:>11} {:>11} {:>8}",
        "", "edgewise", "rsa crate", "ratio"
    );
    for (row, ns, peer) in run(&cfg, &f) {
        println!(
            "  {row:<28} {:>8.1} us {:>8.1} us {:>7.2}x",
            ns / 1000.0,
            peer / 1000.0,
            ns / peer
        );
    }
    ExitCode::SUCCESS
}
