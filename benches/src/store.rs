//! The feature-store benchmark's workload and its peer: the same tables for edgewise's store
//! and for Cloudflare's mmap-sync 2.0.4 (rkyv 0.7), the library behind bliss, with bliss's own
//! entity shape (`Vec<HashMap<u64, Vec<f32>>>`), plus the pieces of its benchmark binary
//! (`src/bin/store_latency.rs`): the key distributions, the daemon's memcached-text socket as a
//! third peer, resident-memory figures and the Markdown report.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use edgewise::{FeatureSnapshot, FeatureTable};
use mmap_sync::synchronizer::Synchronizer;

pub mod daemon;
pub mod report;
pub mod resident;
pub mod zipf;

/// The one table's name in edgewise snapshots (and in the daemon's `get features:<key>`).
pub const TABLE: &str = "features";

pub use peer::Features;

mod peer {
    // rkyv 0.7's derive predates edition 2024's unsafe-in-unsafe-fn rule.
    #![allow(unsafe_op_in_unsafe_fn)]

    use std::collections::HashMap;

    /// bliss's `FeaturesMetadata`, archived with rkyv 0.7 for mmap-sync.
    #[derive(Debug, rkyv07::Archive, rkyv07::Serialize)]
    #[archive(crate = "rkyv07", check_bytes)]
    pub struct Features {
        /// Features version.
        pub version: u32,
        /// Creation time, Unix seconds.
        pub created_at: u32,
        /// One map per dimension.
        pub features: Vec<HashMap<u64, Vec<f32>>>,
    }
}

/// Key number `i` of the workload: spread over the whole `u64` range, like hashed dimensions.
pub fn key(i: u64) -> u64 {
    i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5bd1_e995
}

/// `keys` keys, each a vector of `dims` floats equal to `version` (a reader can check it got
/// one whole version).
pub fn rows(keys: u64, dims: usize, version: u64) -> HashMap<u64, Vec<f32>> {
    (0..keys)
        .map(|i| (key(i), vec![version as f32; dims]))
        .collect()
}

/// The edgewise snapshot of `rows`.
pub fn snapshot(rows: HashMap<u64, Vec<f32>>, version: u64) -> FeatureSnapshot {
    FeatureSnapshot {
        version,
        created_unix_ms: version,
        tables: vec![FeatureTable {
            name: TABLE.to_owned(),
            rows,
        }],
    }
}

/// The mmap-sync entity of `rows`.
pub fn entity(rows: HashMap<u64, Vec<f32>>, version: u64) -> Features {
    Features {
        version: version as u32,
        created_at: version as u32,
        features: vec![rows],
    }
}

/// mmap-sync's synchronizer for the store in `dir` (files `dir/mmap_sync_*`).
pub fn synchronizer(dir: &Path) -> Synchronizer {
    Synchronizer::new(dir.join("mmap_sync").as_os_str())
}

/// mmap-sync's grace period as bliss-style users pass it.
pub const MMAP_SYNC_GRACE: Duration = Duration::from_secs(1);

/// Uses the whole vector, as a model would: an 8-lane sum, which vectorizes (a plain `sum()`
/// of `f32`s is one long dependency chain, ~4 cycles a float, and would dwarf the lookup).
#[inline]
pub fn use_vector(v: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let chunks = v.chunks_exact(8);
    let tail: f32 = chunks.remainder().iter().sum();
    for chunk in chunks {
        for (lane, x) in lanes.iter_mut().zip(chunk) {
            *lane += x;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// xorshift64*: the probe sequence, the same for every peer.
#[derive(Debug, Clone)]
pub struct Probes(u64);

impl Probes {
    /// A sequence from `seed` (non-zero).
    pub fn new(seed: u64) -> Probes {
        Probes(seed | 1)
    }

    /// The next index below `n`.
    pub fn next_below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// The next float in `[0, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        self.next() as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// The next 53 random bits.
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11
    }
}

/// Values below this are counted exactly; above, in 128 sub-buckets per power of two.
const EXACT: u64 = 2048;
const SUB_BITS: u32 = 7;
const BUCKETS: usize = EXACT as usize + ((64 - EXACT.trailing_zeros() as usize) << SUB_BITS);

/// Per-operation latencies in nanoseconds, timer overhead already subtracted: exact below
/// 2 µs, within 0.8% above, in constant memory (a 10 s run records tens of millions of
/// operations; keeping them all would cost hundreds of MB and seconds of sorting).
#[derive(Debug, Clone)]
pub struct Histogram {
    counts: Vec<u64>,
    len: u64,
    max: u64,
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram {
            counts: vec![0; BUCKETS],
            len: 0,
            max: 0,
        }
    }
}

impl Histogram {
    /// Records one operation that took `ns` nanoseconds of which `overhead` were the timer's.
    #[inline]
    pub fn record(&mut self, ns: u64, overhead: u64) {
        let v = ns.saturating_sub(overhead);
        self.counts[bucket(v)] += 1;
        self.len += 1;
        self.max = self.max.max(v);
    }

    /// Adds `other`'s operations.
    pub fn merge(&mut self, other: Histogram) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
        self.len += other.len;
        self.max = self.max.max(other.max);
    }

    /// Operations that took more than `ns` nanoseconds (to the histogram's resolution).
    pub fn above(&self, ns: u64) -> u64 {
        self.counts
            .iter()
            .enumerate()
            .filter(|&(index, _)| middle(index) > ns)
            .map(|(_, &count)| count)
            .sum()
    }

    /// Operations recorded.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `q` quantile (0..=1) in nanoseconds (`q = 1` is the exact maximum); NaN when empty.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.len == 0 {
            return f64::NAN;
        }
        if q >= 1.0 {
            return self.max as f64;
        }
        let rank = ((self.len - 1) as f64 * q).round() as u64;
        let mut seen = 0;
        for (index, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen > rank {
                return (middle(index) as f64).min(self.max as f64);
            }
        }
        self.max as f64
    }
}

fn bucket(v: u64) -> usize {
    if v < EXACT {
        return v as usize;
    }
    let power = 63 - v.leading_zeros();
    let sub = (v >> (power - SUB_BITS)) as usize & ((1 << SUB_BITS) - 1);
    EXACT as usize + (((power - EXACT.trailing_zeros()) as usize) << SUB_BITS) + sub
}

/// The middle of bucket `index`'s range.
fn middle(index: usize) -> u64 {
    if index < EXACT as usize {
        return index as u64;
    }
    let above = index - EXACT as usize;
    let power = (above >> SUB_BITS) as u32 + EXACT.trailing_zeros();
    let sub = (above & ((1 << SUB_BITS) - 1)) as u64;
    let width = 1u64 << (power - SUB_BITS);
    (1u64 << power) + sub * width + width / 2
}

/// The cost of reading the clock twice, as a median over many tries: what every timed
/// operation's figure has subtracted.
pub fn timer_overhead() -> u64 {
    let mut h = Histogram::default();
    for _ in 0..100_000 {
        let start = Instant::now();
        h.record(start.elapsed().as_nanos() as u64, 0);
    }
    h.quantile(0.5) as u64
}

#[cfg(test)]
mod tests;
