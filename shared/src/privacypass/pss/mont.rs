//! s^e mod n for a 2048-bit odd modulus: fixed-size Montgomery arithmetic, generic over the limb
//! width. Natively a u64 x u64 -> u128 product is one instruction, so 64-bit limbs halve the
//! limb count; Wasm has no 128-bit product (it becomes a `__multi3` call of four 32-bit products
//! and carries), while u32 x u32 -> u64 is a single `i64.mul`, so there 32-bit limbs win despite
//! four times as many products.

use core::ops::{BitAnd, BitOr, Shl, Shr};

use super::MODULUS_LEN;

/// A limb: an unsigned machine word whose double-width product the target computes cheaply.
pub(crate) trait Limb:
    Copy
    + Ord
    + Shl<u32, Output = Self>
    + Shr<u32, Output = Self>
    + BitAnd<Output = Self>
    + BitOr<Output = Self>
{
    const ZERO: Self;
    const ONE: Self;
    const TWO: Self;
    const BITS: u32;
    const BYTES: usize;

    /// a + b * c + carry as (low, high) limbs. It cannot overflow the double width:
    /// (2^w - 1) + (2^w - 1)^2 + (2^w - 1) = 2^2w - 1.
    fn mac(a: Self, b: Self, c: Self, carry: Self) -> (Self, Self);
    fn overflowing_add(self, rhs: Self) -> (Self, bool);
    fn overflowing_sub(self, rhs: Self) -> (Self, bool);
    fn wrapping_mul(self, rhs: Self) -> Self;
    fn wrapping_sub(self, rhs: Self) -> Self;
    fn wrapping_neg(self) -> Self;
    fn from_bool(bit: bool) -> Self;
    /// From exactly `BYTES` big-endian bytes.
    fn read_be(bytes: &[u8]) -> Self;
    /// Into exactly `BYTES` big-endian bytes.
    fn write_be(self, out: &mut [u8]);
}

/// Implements [`Limb`] for `$limb`, with `$wide` holding the product of two limbs.
macro_rules! limb {
    ($limb:ty, $wide:ty) => {
        impl Limb for $limb {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            const TWO: Self = 2;
            const BITS: u32 = <$limb>::BITS;
            const BYTES: usize = core::mem::size_of::<$limb>();

            #[inline(always)]
            fn mac(a: Self, b: Self, c: Self, carry: Self) -> (Self, Self) {
                let wide =
                    <$wide>::from(a) + <$wide>::from(b) * <$wide>::from(c) + <$wide>::from(carry);
                (wide as $limb, (wide >> <$limb>::BITS) as $limb)
            }

            #[inline(always)]
            fn overflowing_add(self, rhs: Self) -> (Self, bool) {
                <$limb>::overflowing_add(self, rhs)
            }

            #[inline(always)]
            fn overflowing_sub(self, rhs: Self) -> (Self, bool) {
                <$limb>::overflowing_sub(self, rhs)
            }

            #[inline(always)]
            fn wrapping_mul(self, rhs: Self) -> Self {
                <$limb>::wrapping_mul(self, rhs)
            }

            #[inline(always)]
            fn wrapping_sub(self, rhs: Self) -> Self {
                <$limb>::wrapping_sub(self, rhs)
            }

            #[inline(always)]
            fn wrapping_neg(self) -> Self {
                <$limb>::wrapping_neg(self)
            }

            #[inline(always)]
            fn from_bool(bit: bool) -> Self {
                <$limb>::from(bit)
            }

            fn read_be(bytes: &[u8]) -> Self {
                let mut word = [0u8; core::mem::size_of::<$limb>()];
                word.copy_from_slice(bytes);
                <$limb>::from_be_bytes(word)
            }

            fn write_be(self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_be_bytes());
            }
        }
    };
}

limb!(u32, u64);
limb!(u64, u128);

/// A 2048-bit modulus of `N` limbs of type `L` (`N * L::BYTES` must be 256) with its Montgomery
/// constants, computed once per key.
#[derive(Clone)]
pub(crate) struct Modulus<L, const N: usize> {
    /// Least significant limb first.
    n: [L; N],
    /// -n^-1 mod 2^w.
    n0: L,
    /// R^2 mod n, R = 2^2048: a Montgomery product with it enters the Montgomery domain.
    r2: [L; N],
}

impl<L: Limb, const N: usize> Modulus<L, N> {
    /// `n`: big-endian, odd, top bit set. The top bit makes R - n (= R mod n) fall below n, and
    /// keeps every value below n within the 2048 bits the arithmetic carries.
    pub(crate) fn new(n: &[u8; MODULUS_LEN]) -> Option<Self> {
        const {
            assert!(
                N * L::BYTES == MODULUS_LEN,
                "limbs must cover exactly 2048 bits"
            )
        };
        let n = from_be::<L, N>(n);
        let odd = n[0] & L::ONE == L::ONE;
        if !odd || n[N - 1] >> (L::BITS - 1) == L::ZERO {
            return None;
        }
        Some(Modulus {
            n0: neg_inverse(n[0]),
            r2: r_squared(&n),
            n,
        })
    }

    /// s^e mod n, big-endian; `None` when s is not below n (RSAVP1 step 1: "signature
    /// representative out of range").
    pub(crate) fn pow(&self, s: &[u8; MODULUS_LEN], e: u64) -> Option<[u8; MODULUS_LEN]> {
        let s = from_be::<L, N>(s);
        if !less_than(&s, &self.n) {
            return None;
        }
        let mut one = [L::ZERO; N];
        one[0] = L::ONE;
        // n > 1, so s^0 mod n = 1.
        let Some(top) = e.checked_ilog2() else {
            return Some(to_be(&one));
        };
        // Left-to-right square and multiply, all in the Montgomery domain (x stands for x R).
        let base = self.mul(&s, &self.r2);
        let mut x = base;
        for bit in (0..top).rev() {
            x = self.mul(&x, &x);
            if e >> bit & 1 == 1 {
                x = self.mul(&x, &base);
            }
        }
        Some(to_be(&self.mul(&x, &one)))
    }

    /// Montgomery product a b / R mod n, for a, b < n: CIOS (Koc et al. 1996) with the
    /// multiplication and reduction passes fused, so each round walks the accumulator once.
    fn mul(&self, a: &[L; N], b: &[L; N]) -> [L; N] {
        let n = &self.n;
        let mut t = [L::ZERO; N];
        // Limb N of the accumulator. It stays 0 or 1: after each round t < 2n < 2R.
        let mut high = L::ZERO;
        for &bi in b {
            // t + a bi + m n with m chosen to clear the low limb, shifted down one limb.
            let (t0, mut carry_a) = L::mac(t[0], a[0], bi, L::ZERO);
            let m = t0.wrapping_mul(self.n0);
            let (_, mut carry_n) = L::mac(t0, m, n[0], L::ZERO);
            for j in 1..N {
                let (tj, c) = L::mac(t[j], a[j], bi, carry_a);
                carry_a = c;
                (t[j - 1], carry_n) = L::mac(tj, m, n[j], carry_n);
            }
            let (sum, over_a) = high.overflowing_add(carry_a);
            let (sum, over_n) = sum.overflowing_add(carry_n);
            t[N - 1] = sum;
            // high + carry_a + carry_n < 2^(w+1), so at most one of the two additions wraps.
            high = L::from_bool(over_a | over_n);
        }
        // a b / R + (sum of m's) n / R < n + n: one subtraction brings it below n.
        if high != L::ZERO || !less_than(&t, n) {
            sub_assign(&mut t, n);
        }
        t
    }
}

fn less_than<L: Limb, const N: usize>(a: &[L; N], b: &[L; N]) -> bool {
    for (x, y) in a.iter().rev().zip(b.iter().rev()) {
        if x != y {
            return x < y;
        }
    }
    false
}

/// a -= b, modulo 2^2048.
fn sub_assign<L: Limb, const N: usize>(a: &mut [L; N], b: &[L; N]) {
    let mut borrow = false;
    for (x, &y) in a.iter_mut().zip(b) {
        let (d, b1) = x.overflowing_sub(y);
        let (d, b2) = d.overflowing_sub(L::from_bool(borrow));
        *x = d;
        borrow = b1 | b2;
    }
}

/// -n0^-1 mod 2^w by Newton's iteration: 1 is the inverse of odd n0 modulo 2, and each step
/// doubles the number of correct low bits, so log2(w) steps reach all w.
fn neg_inverse<L: Limb>(n0: L) -> L {
    let mut inv = L::ONE;
    for _ in 0..L::BITS.ilog2() {
        inv = inv.wrapping_mul(L::TWO.wrapping_sub(n0.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

/// R^2 mod n: start from R mod n = 2^2048 - n (below n, as n has its top bit set) and double
/// 2048 times modulo n.
fn r_squared<L: Limb, const N: usize>(n: &[L; N]) -> [L; N] {
    let mut x = [L::ZERO; N];
    sub_assign(&mut x, n);
    let shift = L::BITS - 1;
    for _ in 0..MODULUS_LEN * 8 {
        let carry = x[N - 1] >> shift != L::ZERO;
        for i in (1..N).rev() {
            x[i] = x[i] << 1 | x[i - 1] >> shift;
        }
        x[0] = x[0] << 1;
        // x < n before doubling, so 2x < 2n: one subtraction (modulo 2^2048 when the doubling
        // carried out of the top limb) brings it back below n.
        if carry || !less_than(&x, n) {
            sub_assign(&mut x, n);
        }
    }
    x
}

fn from_be<L: Limb, const N: usize>(bytes: &[u8; MODULUS_LEN]) -> [L; N] {
    let mut limbs = [L::ZERO; N];
    for (limb, chunk) in limbs.iter_mut().zip(bytes.rchunks_exact(L::BYTES)) {
        *limb = L::read_be(chunk);
    }
    limbs
}

fn to_be<L: Limb, const N: usize>(limbs: &[L; N]) -> [u8; MODULUS_LEN] {
    let mut bytes = [0u8; MODULUS_LEN];
    for (chunk, limb) in bytes.rchunks_exact_mut(L::BYTES).zip(limbs) {
        limb.write_be(chunk);
    }
    bytes
}
