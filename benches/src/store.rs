//! The feature-store benchmark's workload and its peer: the same tables for edgewise's store
//! and for Cloudflare's mmap-sync 2.0.4 (rkyv 0.7), the library behind bliss, with bliss's own
//! entity shape (`Vec<HashMap<u64, Vec<f32>>>`).

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use edgewise::{FeatureSnapshot, FeatureTable};
use mmap_sync::synchronizer::Synchronizer;

/// The one table's name in edgewise snapshots.
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
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) % n
    }
}

/// Per-operation latencies in nanoseconds, timer overhead already subtracted.
#[derive(Debug, Default, Clone)]
pub struct Histogram(Vec<u32>);

impl Histogram {
    /// Records one operation that took `ns` nanoseconds of which `overhead` were the timer's.
    pub fn record(&mut self, ns: u64, overhead: u64) {
        self.0
            .push(ns.saturating_sub(overhead).min(u64::from(u32::MAX)) as u32);
    }

    /// Adds `other`'s operations.
    pub fn merge(&mut self, other: Histogram) {
        self.0.extend(other.0);
    }

    /// Operations recorded.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q` quantile (0..=1) in nanoseconds; NaN when empty.
    pub fn quantile(&mut self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.sort_unstable();
        let at = ((self.0.len() - 1) as f64 * q).round() as usize;
        f64::from(self.0[at])
    }
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
