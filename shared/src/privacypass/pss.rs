//! RSASSA-PSS verification (RFC 8017 section 8.1.2) for 2048-bit keys, SHA-384, MGF1-SHA-384,
//! and a 48-byte or an empty salt: the verification of token type 0x0002, whose registry entry
//! (RFC 9578 section 8.2.2) names both RSABSSA-SHA384-PSS-Deterministic and
//! RSABSSA-SHA384-PSSZERO-Deterministic. In blind RSA the client, not the issuer, encodes the
//! message, so the salt length is the client's choice either way; the unmasked DB tells which
//! one a signature used, so a signature verifies under one of them at most.
//!
//! Native users verify on the request path (the worker hands the RSA operation to the
//! runtime's WebCrypto), and the `rsa` crate's general big-number code is slow at it: side by side on the 2-core dev machine (benches/benches/privacypass.rs, and a
//! wasm32-wasip1 build under Node), it took 230-380 us natively and ~1.5 ms as Wasm. This module
//! does the one operation verification needs, s^e mod n, with fixed-size Montgomery arithmetic
//! ([`mont`]) and constants computed once per key: 55-80 us natively (openssl: 12-34 us). As Wasm
//! it took 300-560 us on the 64-bit limbs it uses natively and takes 165-330 us on the 32-bit
//! limbs it uses there (scripts/bench-privacypass-wasm.sh, both builds interleaved on the same
//! loaded machine). Everything it handles is public (key, signature, message), so nothing needs
//! to run in constant time.

pub(crate) mod mont;

use sha2::{Digest, Sha384};

use mont::{Limb, Modulus};

/// k = emLen: a 2048-bit modulus gives emBits = 2047, which still takes 256 bytes.
pub(crate) const MODULUS_LEN: usize = 256;
const HASH_LEN: usize = 48;
/// Salt lengths accepted: RSABSSA-SHA384-PSS (48) and RSABSSA-SHA384-PSSZERO (0).
const SALT_LENS: [usize; 2] = [48, 0];
/// Length of maskedDB / DB.
const DB_LEN: usize = MODULUS_LEN - HASH_LEN - 1;

/// The limb the target multiplies fastest at double width (see [`mont`]).
#[cfg(target_arch = "wasm32")]
type Word = u32;
#[cfg(not(target_arch = "wasm32"))]
type Word = u64;
const LIMBS: usize = MODULUS_LEN / Word::BYTES;

/// A 2048-bit RSA public key with its Montgomery constants.
#[derive(Clone)]
pub(crate) struct PssKey {
    modulus: Modulus<Word, LIMBS>,
    e: u64,
}

impl PssKey {
    /// `n`: exactly 256 big-endian bytes, odd, with the top bit set; `e`: odd, above 1.
    pub(crate) fn new(n: &[u8; MODULUS_LEN], e: u64) -> Option<PssKey> {
        if e & 1 == 0 || e < 3 {
            return None;
        }
        Some(PssKey {
            modulus: Modulus::new(n)?,
            e,
        })
    }

    /// Whether `signature` is a PSS signature of `message` under this key.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        verify_with(&self.modulus, self.e, message, signature)
    }
}

/// [`PssKey::verify`] on any limb width, so that tests run the other width natively too.
pub(crate) fn verify_with<L: Limb, const N: usize>(
    modulus: &Modulus<L, N>,
    e: u64,
    message: &[u8],
    signature: &[u8],
) -> bool {
    let Ok(signature) = <&[u8; MODULUS_LEN]>::try_from(signature) else {
        return false;
    };
    // RSAVP1 refuses a signature representative that is not below n.
    let Some(em) = modulus.pow(signature, e) else {
        return false;
    };
    emsa_pss_verify(&Sha384::digest(message).into(), &em)
}

/// EMSA-PSS-VERIFY (RFC 8017 section 9.1.2) with emBits = 2047, SHA-384 and a salt of one of
/// [`SALT_LENS`]: the one where DB's `0x01` separator stands.
fn emsa_pss_verify(m_hash: &[u8; HASH_LEN], em: &[u8; MODULUS_LEN]) -> bool {
    let Some((masked_db, rest)) = em.split_first_chunk::<DB_LEN>() else {
        return false;
    };
    let Some((h, [0xbc])) = rest.split_first_chunk::<HASH_LEN>() else {
        return false;
    };
    // The bit above emBits must be clear.
    if masked_db[0] & 0x80 != 0 {
        return false;
    }
    let mut db = *masked_db;
    mgf1_xor(h, &mut db);
    db[0] &= 0x7f;
    let separated = |salt_len: usize| {
        let (padding, _) = db.split_at(DB_LEN - salt_len);
        matches!(padding.split_last(), Some((0x01, zeros)) if zeros.iter().all(|&b| b == 0))
    };
    let Some(salt_len) = SALT_LENS.into_iter().find(|&len| separated(len)) else {
        return false;
    };
    let salt = &db[DB_LEN - salt_len..];
    let expected = Sha384::new()
        .chain_update([0u8; 8])
        .chain_update(m_hash)
        .chain_update(salt)
        .finalize();
    expected.as_slice() == h
}

/// XORs MGF1-SHA-384(seed) into `out`.
fn mgf1_xor(seed: &[u8; HASH_LEN], out: &mut [u8]) {
    for (counter, chunk) in (0u32..).zip(out.chunks_mut(HASH_LEN)) {
        let mask = Sha384::new()
            .chain_update(seed)
            .chain_update(counter.to_be_bytes())
            .finalize();
        for (o, m) in chunk.iter_mut().zip(mask) {
            *o ^= m;
        }
    }
}

#[cfg(test)]
pub(crate) fn pow_e_for_tests(key: &PssKey, s: &[u8; MODULUS_LEN]) -> [u8; MODULUS_LEN] {
    key.modulus.pow(s, key.e).expect("s below n")
}
