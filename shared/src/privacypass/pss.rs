//! RSASSA-PSS verification (RFC 8017 section 8.1.2) for 2048-bit keys, SHA-384, MGF1-SHA-384,
//! 48-byte salt: the verification of token type 0x0002.
//!
//! The worker verifies on the request path, and the `rsa` crate's general big-number code is
//! slow at it: side by side on the 2-core dev machine (benches/benches/privacypass.rs, and a
//! wasm32-wasip1 build under Node), it took 230-380 us natively and ~1.5 ms as Wasm. This module
//! does the one operation verification needs, s^e mod n, with fixed-size Montgomery arithmetic
//! on 32 64-bit limbs and constants computed once per key: 55-80 us natively, ~300 us as Wasm
//! (openssl: 12-34 us). Everything it handles is public (key, signature, message), so nothing
//! needs to run in constant time.

use sha2::{Digest, Sha384};

/// 2048 bits.
const LIMBS: usize = 32;
/// k = emLen: a 2048-bit modulus gives emBits = 2047, which still takes 256 bytes.
pub(crate) const MODULUS_LEN: usize = LIMBS * 8;
const HASH_LEN: usize = 48;
const SALT_LEN: usize = 48;
/// Length of maskedDB / DB.
const DB_LEN: usize = MODULUS_LEN - HASH_LEN - 1;

type Limbs = [u64; LIMBS];

/// A 2048-bit RSA public key with its Montgomery constants.
#[derive(Clone)]
pub(crate) struct PssKey {
    /// Modulus, least significant limb first.
    n: Limbs,
    /// -n^-1 mod 2^64.
    n0: u64,
    /// R^2 mod n, R = 2^2048: multiplying by it enters the Montgomery domain.
    r2: Limbs,
    e: u64,
}

impl PssKey {
    /// `n`: exactly 256 big-endian bytes with the top bit set; `e`: odd, above 1.
    pub(crate) fn new(n: &[u8; MODULUS_LEN], e: u64) -> Option<PssKey> {
        let n = from_be(n);
        if n[LIMBS - 1] >> 63 == 0 || n[0] & 1 == 0 || e & 1 == 0 || e < 3 {
            return None;
        }
        Some(PssKey {
            n0: neg_inverse(n[0]),
            r2: r_squared(&n),
            n,
            e,
        })
    }

    /// Whether `signature` is a PSS signature of `message` under this key.
    pub(crate) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        let Ok(signature) = <&[u8; MODULUS_LEN]>::try_from(signature) else {
            return false;
        };
        let s = from_be(signature);
        // RSAVP1: the signature representative must lie below n.
        if !less_than(&s, &self.n) {
            return false;
        }
        let em = to_be(&self.pow_e(&s));
        emsa_pss_verify(&Sha384::digest(message).into(), &em)
    }

    /// s^e mod n, left-to-right square and multiply in the Montgomery domain.
    fn pow_e(&self, s: &Limbs) -> Limbs {
        let base = self.mul(s, &self.r2);
        let mut x = base;
        let top = 63 - self.e.leading_zeros();
        for bit in (0..top).rev() {
            x = self.mul(&x, &x);
            if self.e >> bit & 1 == 1 {
                x = self.mul(&x, &base);
            }
        }
        let mut one = [0u64; LIMBS];
        one[0] = 1;
        self.mul(&x, &one)
    }

    /// Montgomery product a * b / R mod n, for a, b < n (CIOS, Koc et al. 1996).
    fn mul(&self, a: &Limbs, b: &Limbs) -> Limbs {
        let n = &self.n;
        let mut t = [0u64; LIMBS + 2];
        for &bi in b {
            let mut carry = 0;
            for (tj, &aj) in t.iter_mut().zip(a) {
                (*tj, carry) = mac(*tj, aj, bi, carry);
            }
            let (sum, over) = t[LIMBS].overflowing_add(carry);
            t[LIMBS] = sum;
            t[LIMBS + 1] = u64::from(over);

            let m = t[0].wrapping_mul(self.n0);
            let (_, mut carry) = mac(t[0], m, n[0], 0);
            for j in 1..LIMBS {
                (t[j - 1], carry) = mac(t[j], m, n[j], carry);
            }
            let (sum, over) = t[LIMBS].overflowing_add(carry);
            t[LIMBS - 1] = sum;
            t[LIMBS] = t[LIMBS + 1] + u64::from(over);
        }
        let mut out = [0u64; LIMBS];
        out.copy_from_slice(&t[..LIMBS]);
        if t[LIMBS] != 0 || !less_than(&out, n) {
            sub_assign(&mut out, n);
        }
        out
    }
}

/// a + b * c + carry, as (low, high) limbs; cannot overflow 128 bits.
#[inline(always)]
fn mac(a: u64, b: u64, c: u64, carry: u64) -> (u64, u64) {
    let wide = u128::from(a) + u128::from(b) * u128::from(c) + u128::from(carry);
    (wide as u64, (wide >> 64) as u64)
}

fn less_than(a: &Limbs, b: &Limbs) -> bool {
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x < y;
        }
    }
    false
}

/// a -= b, modulo 2^2048.
fn sub_assign(a: &mut Limbs, b: &Limbs) {
    let mut borrow = false;
    for (x, &y) in a.iter_mut().zip(b) {
        let (d, b1) = x.overflowing_sub(y);
        let (d, b2) = d.overflowing_sub(u64::from(borrow));
        *x = d;
        borrow = b1 | b2;
    }
}

/// -n0^-1 mod 2^64 by Newton's iteration (each step doubles the correct low bits; n0 odd).
fn neg_inverse(n0: u64) -> u64 {
    let mut inv: u64 = 1;
    for _ in 0..6 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(n0.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

/// R^2 mod n: start from R mod n = 2^2048 - n (n has its top bit set, so this is below n) and
/// double 2048 times modulo n.
fn r_squared(n: &Limbs) -> Limbs {
    let mut x = [0u64; LIMBS];
    sub_assign(&mut x, n);
    for _ in 0..LIMBS * 64 {
        let carry = x[LIMBS - 1] >> 63;
        for i in (1..LIMBS).rev() {
            x[i] = x[i] << 1 | x[i - 1] >> 63;
        }
        x[0] <<= 1;
        if carry == 1 || !less_than(&x, n) {
            sub_assign(&mut x, n);
        }
    }
    x
}

fn from_be(bytes: &[u8; MODULUS_LEN]) -> Limbs {
    let mut limbs = [0u64; LIMBS];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.rchunks_exact(8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        *limb = u64::from_be_bytes(word);
    }
    limbs
}

fn to_be(limbs: &Limbs) -> [u8; MODULUS_LEN] {
    let mut bytes = [0u8; MODULUS_LEN];
    for (chunk, limb) in bytes.rchunks_exact_mut(8).zip(limbs) {
        chunk.copy_from_slice(&limb.to_be_bytes());
    }
    bytes
}

/// EMSA-PSS-VERIFY (RFC 8017 section 9.1.2) with emBits = 2047, SHA-384 and a 48-byte salt.
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
    let (padding, salt) = db.split_at(DB_LEN - SALT_LEN);
    let Some((one, zeros)) = padding.split_last() else {
        return false;
    };
    if *one != 0x01 || zeros.iter().any(|&b| b != 0) {
        return false;
    }
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
    to_be(&key.pow_e(&from_be(s)))
}
