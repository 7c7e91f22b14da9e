//! Interleaved batch timing and the shared command line of the plain bench binaries
//! (`headers_wasm`, `workspace_wasm`, `privacypass_wasm`), which run where criterion cannot:
//! compiled to `wasm32-wasip1` under Node.
//!
//! Peers take turns batch by batch (round after round, each peer one short batch per round), so
//! a slow stretch of a shared machine hits all of them alike instead of skewing whichever peer it
//! happened to fall on: on our 2-core VMs absolute times drift by up to 2x between runs, while the
//! ratios of interleaved peers stay within a few percent. Each peer's figure is the median over
//! its batches.

use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Where the binary runs, as its table headers name it.
pub const TARGET: &str = if cfg!(target_family = "wasm") {
    "wasm32-wasip1"
} else {
    "native"
};

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

impl Config {
    /// A binary's defaults: `batches` batches of ~`batch_ms` ms after `warm_up_ms` ms of warm-up.
    pub const fn new(batches: usize, batch_ms: u64, warm_up_ms: u64) -> Self {
        Config {
            batches,
            batch: Duration::from_millis(batch_ms),
            warm_up: Duration::from_millis(warm_up_ms),
        }
    }

    /// Reads `args` (without the program name) over `self`: `--batches N`, `--batch-ms MS`, and
    /// the binary's own flags, which `extra(flag, value)` takes by returning true. Every value is
    /// a positive whole number.
    pub fn parse(
        mut self,
        args: impl IntoIterator<Item = String>,
        mut extra: impl FnMut(&str, u64) -> bool,
    ) -> Result<Self, String> {
        let mut args = args.into_iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            let n: u64 = value
                .parse()
                .map_err(|_| format!("{flag}: not a number: {value}"))?;
            match flag.as_str() {
                "--batches" if n > 0 => self.batches = n as usize,
                "--batch-ms" if n > 0 => self.batch = Duration::from_millis(n),
                _ if n > 0 && extra(&flag, n) => {}
                _ => return Err(format!("unknown or zero argument {flag} {value}")),
            }
        }
        Ok(self)
    }

    /// [`Config::parse`] of the process's arguments; on an error prints it with the usage of
    /// `bin` (whose own flags `extra_usage` lists, e.g. `" [--pool-mib MIB]"`) and returns the
    /// exit code of a usage error.
    pub fn from_args(
        self,
        bin: &str,
        extra_usage: &str,
        extra: impl FnMut(&str, u64) -> bool,
    ) -> Result<Self, ExitCode> {
        self.parse(std::env::args().skip(1), extra).map_err(|e| {
            eprintln!("{bin}: {e}\nusage: {bin} [--batches N] [--batch-ms MS]{extra_usage}");
            ExitCode::from(2)
        })
    }
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

    /// All the configured batches of one peer back to back, for a peer that must not be
    /// interleaved with others (see [`Sampler::batch`]).
    pub fn batches<R>(&mut self, name: &'static str, ops: usize, mut f: impl FnMut() -> R) {
        for _ in 0..self.cfg.batches {
            self.batch(name, ops, &mut f);
        }
    }

    /// Median ns per op of `name`, if it was timed.
    pub fn median(&self, name: &str) -> Option<f64> {
        let (_, _, samples) = self.peers.iter().find(|(n, _, _)| *n == name)?;
        median(samples)
    }

    /// Median ns per op of each peer timed, in first-seen order.
    pub fn medians(&self) -> Vec<(&'static str, f64)> {
        self.peers
            .iter()
            .filter_map(|(name, _, samples)| Some((*name, median(samples)?)))
            .collect()
    }
}

/// The median of `samples`, `None` if there are none.
pub fn median(samples: &[f64]) -> Option<f64> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied()
}

/// Nanoseconds with about three significant digits; `-` for NaN (a peer not timed).
pub fn fmt_ns(ns: f64) -> String {
    if ns.is_nan() {
        "-".to_owned()
    } else if ns < 10.0 {
        format!("{ns:.2}")
    } else if ns < 100.0 {
        format!("{ns:.1}")
    } else {
        format!("{ns:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<(Config, u64), String> {
        let mut pool = 0;
        let cfg = Config::new(31, 4, 100).parse(args.iter().map(|a| a.to_string()), |f, n| {
            (f == "--pool-mib").then(|| pool = n).is_some()
        })?;
        Ok((cfg, pool))
    }

    #[test]
    fn parses_flags() {
        let (cfg, pool) = parse(&["--batches", "3", "--batch-ms", "5", "--pool-mib", "8"]).unwrap();
        assert_eq!(
            (cfg.batches, cfg.batch, pool),
            (3, Duration::from_millis(5), 8)
        );
        assert_eq!(cfg.warm_up, Duration::from_millis(100));
        assert_eq!(parse(&[]).unwrap().0.batches, 31);
    }

    #[test]
    fn rejects_bad_flags() {
        assert_eq!(
            parse(&["--batches"]).unwrap_err(),
            "--batches needs a value"
        );
        assert_eq!(
            parse(&["--batches", "x"]).unwrap_err(),
            "--batches: not a number: x"
        );
        for args in [["--batches", "0"], ["--pool-mib", "0"], ["--other", "1"]] {
            let err = format!("unknown or zero argument {} {}", args[0], args[1]);
            assert_eq!(parse(&args).unwrap_err(), err);
        }
    }
}
