//! Interleaved batch timing for the plain bench binaries (`workspace_wasm`), which run where
//! criterion cannot: compiled to `wasm32-wasip1` under Node.
//!
//! Peers take turns batch by batch (each peer one short batch per round), so a slow stretch of
//! a shared machine hits all of them alike; each peer's figure is the median over its batches.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// How long and how often to measure.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Batches per peer.
    pub batches: usize,
    /// Target duration of one batch.
    pub batch: Duration,
    /// Warm-up per peer before its first batch: long enough for V8 to compile the hot Wasm
    /// functions with TurboFan in the background.
    pub warm_up: Duration,
}

/// One call of the measured closure, kept out of line: V8 has no on-stack replacement for
/// Wasm, so code only leaves its baseline (Liftoff) tier on a fresh call. Were the loop inlined
/// into its caller, which runs once, every batch would time baseline code.
#[inline(never)]
pub fn pass<R>(f: &mut impl FnMut() -> R) -> R {
    f()
}

/// Timings of one table row.
#[derive(Debug)]
pub struct Sampler<'c> {
    cfg: &'c Config,
    /// Per peer, in first-seen order: calls per batch and ns per op of each batch.
    peers: Vec<(&'static str, usize, Vec<f64>)>,
}

impl<'c> Sampler<'c> {
    /// An empty row.
    pub fn new(cfg: &'c Config) -> Self {
        Sampler {
            cfg,
            peers: Vec::new(),
        }
    }

    /// Times one batch of calls of `f`, which performs `ops` operations per call; the first
    /// time a peer is seen it is warmed up and its calls per batch are calibrated.
    pub fn batch<R>(&mut self, name: &'static str, ops: usize, mut f: impl FnMut() -> R) {
        let index = match self.peers.iter().position(|(n, _, _)| *n == name) {
            Some(index) => index,
            None => {
                let warm_start = Instant::now();
                let mut calls = 0u32;
                while warm_start.elapsed() < self.cfg.warm_up || calls < 10 {
                    black_box(pass(&mut f));
                    calls += 1;
                }
                let per_call = (warm_start.elapsed() / calls).as_nanos().max(1);
                let reps = (self.cfg.batch.as_nanos() / per_call).max(1) as usize;
                self.peers.push((name, reps, Vec::new()));
                self.peers.len() - 1
            }
        };
        let (_, reps, samples) = &mut self.peers[index];
        let start = Instant::now();
        for _ in 0..*reps {
            black_box(pass(&mut f));
        }
        samples.push(start.elapsed().as_nanos() as f64 / (*reps * ops) as f64);
    }

    /// Median ns per op of `name`, if it was timed.
    pub fn median(&self, name: &str) -> Option<f64> {
        let (_, _, samples) = self.peers.iter().find(|(n, _, _)| *n == name)?;
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied()
    }
}
