//! Verification of arbitrary tokens against one fixed issuer key (the public half of
//! tests/data/test-issuer-key.pem): never panics and never accepts. Inputs are spliced into a
//! token that passes every cheap check (type, challenge, key id), so the fuzzer spends its time
//! in the RSA-PSS path; the raw input is also tried as a token in its own right.
#![no_main]

use std::sync::LazyLock;

use edgewise::{IssuerKey, Token, TokenChallenge, Verifier};
use libfuzzer_sys::fuzz_target;

const TEST_KEY: &str = "MIIBUjA9BgkqhkiG9w0BAQowMKANMAsGCWCGSAFlAwQCAqEaMBgGCSqGSIb3DQEBCDALBglghkgBZQMEAgKiAwIBMAOCAQ8AMIIBCgKCAQEA8Kg6VUn3O2g-ytFx40flOpvkhBv3EkusQm5V9uXjX6UyZ-GRDGR3lwR2Wk-Is9qRyS-Qp5NOvp2Q4V47Fj80nw4AFl38p_WPjhle2zIrE93IJKiMY5bMWLpzHZQLZ98tQMpabTIe2WWRd8ygyoAO6lsDtU91R0o8TcGrZn6BRHmA0l-yRR7G4tNtjG7j1339o_nS5Ui7ovCmnvgIF9yODcEZvpMLn8jo1rQm7o6buFgpN75gcC3J6ilPdM0N7EG4CI2KjjShfw8SvONZqXdl5W10b81l9K-c6o9xBPmeTjoU7DOaTagsbJtlWd7uk3uVaCcG-wjyr-yg0nnykvxb-wIDAQAB";

struct Fixture {
    verifier: Verifier,
    key_id: [u8; 32],
    digest: [u8; 32],
}

static FIXTURE: LazyLock<Fixture> = LazyLock::new(|| {
    let key = IssuerKey::from_base64(TEST_KEY.as_bytes()).expect("test key");
    let challenge =
        TokenChallenge::new(2, b"issuer.example", None, b"origin.example").expect("challenge");
    let key_id = *key.id();
    let mut verifier = Verifier::new();
    verifier.add_key(key, None);
    Fixture {
        verifier,
        key_id,
        digest: challenge.digest(),
    }
});

fuzz_target!(|data: &[u8]| {
    let f = &*FIXTURE;
    // nonce = first 32 bytes, authenticator = the rest, zero-padded or cut to 256 bytes.
    let mut token = [0u8; 354];
    token[1] = 2;
    let nonce = data.len().min(32);
    token[2..2 + nonce].copy_from_slice(&data[..nonce]);
    token[34..66].copy_from_slice(&f.digest);
    token[66..98].copy_from_slice(&f.key_id);
    let rest = &data[nonce..];
    let sig = rest.len().min(256);
    token[98..98 + sig].copy_from_slice(&rest[..sig]);
    let spliced = Token::from_bytes(&token).expect("well-formed token");
    assert!(
        f.verifier.verify(&spliced, &[f.digest], 0).is_err(),
        "forged token verified"
    );

    if let Ok(raw) = Token::from_bytes(data) {
        let accepted = [*raw.challenge_digest()];
        assert!(
            f.verifier.verify(&raw, &accepted, 0).is_err(),
            "raw token verified"
        );
    }
});
