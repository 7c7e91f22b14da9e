//! Zipf-distributed key indices with exponent 1 (rank `k` drawn with probability proportional
//! to `1/k`), the skew of real feature traffic: a few keys (popular IPs, ASNs) take most
//! lookups.
//!
//! Rejection-inversion (Hörmann and Derflinger, 1996): invert the integral of the continuous
//! density `1/x` at a uniform point and accept the rounded rank unless it falls in the thin
//! region where the continuous and discrete masses differ. Constant time and memory per
//! draw, so picking a key costs nothing next to the lookup and touches no cache lines (a
//! CDF table for 1M keys would be 8 MB, evicting the store's lines).

use super::Probes;

/// A Zipf (exponent 1) sampler over the indices `0..n`; index 0 is the most frequent.
#[derive(Debug, Clone, Copy)]
pub struct Zipf {
    n: f64,
    /// `H(1.5) - h(1)`: the top of the inverted range.
    top: f64,
    /// `H(n + 0.5)`: its bottom.
    bottom: f64,
    /// Ranks this close below `x` are always accepted.
    squeeze: f64,
}

/// `h(x) = 1/x`, the unnormalized mass of rank `x`.
fn h(x: f64) -> f64 {
    1.0 / x
}

/// `H(x) = ln x`, an antiderivative of `h`.
fn big_h(x: f64) -> f64 {
    x.ln()
}

fn big_h_inverse(y: f64) -> f64 {
    y.exp()
}

impl Zipf {
    /// A sampler over `0..n` (`n` at least 1).
    pub fn new(n: u64) -> Zipf {
        let n = n.max(1) as f64;
        Zipf {
            n,
            top: big_h(1.5) - h(1.0),
            bottom: big_h(n + 0.5),
            squeeze: 2.0 - big_h_inverse(big_h(2.5) - h(2.0)),
        }
    }

    /// The next index, drawn from `probes`.
    pub fn sample(&self, probes: &mut Probes) -> u64 {
        loop {
            let u = self.bottom + probes.next_f64() * (self.top - self.bottom);
            let x = big_h_inverse(u);
            let k = x.round().clamp(1.0, self.n);
            if k - x <= self.squeeze || u >= big_h(k + 0.5) - h(k) {
                return k as u64 - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests;
