//! Request workspaces: a fixed-size scratch arena reused request after request, scrubbed when
//! each request ends so that nothing one request wrote (tokens, cookies, user headers) is ever
//! readable by the next.
//!
//! Varnish gives each request such a workspace and zeroes all of it afterwards; Fastly tracked
//! the high watermark (the furthest byte a request could have written) and zeroed only up to it,
//! after a shadow phase proved with sampled re-reads above the watermark that the tracking never
//! missed a byte. This module does the same, in three [`ScrubMode`]s: `Full`, `Shadow` (track
//! and verify, still zero everything) and `Watermark` (zero to the watermark only).
//!
//! # Lifetimes do the scrubbing bookkeeping
//!
//! [`Workspace::begin`] opens a [`RequestScope`], which scrubs the workspace when it is dropped or
//! [reset](RequestScope::reset). Memory comes from an [`Arena`] borrowed from the scope; every
//! slice it hands out borrows the scope, so the borrow checker rejects any use of request memory
//! after the scrub:
//!
//! ```compile_fail,E0505
//! let mut ws = edgewise::Workspace::new(4096);
//! let mut scope = ws.begin();
//! let mut arena = scope.arena();
//! let token = arena.copy(b"secret").unwrap();
//! let _ = scope.reset(); // the request ends ...
//! token[0] = 1; // ... and its memory is out of reach
//! ```
//!
//! The arena is a safe bump allocator: it owns the unused tail of the buffer as one `&mut [u8]`
//! and hands out pieces with `split_at_mut`: no `unsafe` (the crate denies it outside the
//! feature store and one cache hint).
//! A [snapshot](Arena::snapshot) is an arena over a reborrow of that tail: what it allocates is
//! dead when it is dropped, and the parent's untouched tail is the rollback.
//!
//! # The watermark
//!
//! Every allocation and every byte a reservation exposes for writing raises the watermark
//! before the memory is handed out, and nothing lowers it until the reset: not a rollback
//! (rolled-back bytes may still hold data), not a short commit. `Watermark` mode zeroes
//! `[0, watermark)` only. Sampled verification (default: one reset in
//! [`DEFAULT_VERIFY_ONE_IN`], chosen by a seeded PRNG that runs the same in Wasm) re-reads
//! everything above the watermark before zeroing, and on a non-zero byte zeroes everything.
//!
//! # Use in the worker and the daemon
//!
//! One workspace per concurrent request: a Worker isolate keeps a small stack of them in a
//! `thread_local` (a request pops one, and pushes it back when its scope is done, so requests
//! interleaving at `.await`s never share one); the daemon keeps a `Mutex<Vec<Workspace>>` pool.
//! A [`RequestScope`] may be held across `.await` (everything in it is `Send`), and dropping it
//! on any path, errors included, scrubs. Sum pool counters with [`WorkspaceStats::merge`].
//!
//! # Errors are reported, not logged
//!
//! The core is `no_std` and has no logger. A failed verification is counted in
//! [`WorkspaceStats::failures`] and returned in [`ResetReport::failure`] (also kept as
//! [`Workspace::last_report`] when the scope was simply dropped); the worker and the daemon log
//! it.
//!
//! # Example
//!
//! ```
//! use core::fmt::Write as _;
//! use edgewise::{ScrubMode, Workspace, WorkspaceConfig};
//!
//! let config = WorkspaceConfig::new(64 * 1024).with_mode(ScrubMode::Watermark);
//! let mut ws = Workspace::with_config(config);
//! for key in ["a", "b"] {
//!     let mut scope = ws.begin();
//!     let mut arena = scope.arena();
//!     let mut cmd = arena.writer();
//!     write!(cmd, "get {key}\r\n").unwrap();
//!     let cmd: &mut [u8] = cmd.commit().unwrap();
//!     assert_eq!(cmd, format!("get {key}\r\n").as_bytes());
//!     let report = scope.reset();
//!     assert!(report.failure.is_none());
//! }
//! assert!(ws.is_scrubbed());
//! assert_eq!(ws.stats().resets, 2);
//! ```

mod arena;
mod stats;
mod verify;
mod writer;

#[cfg(test)]
mod tests;

use alloc::{boxed::Box, vec};
use core::fmt;

pub use arena::Arena;
pub use stats::{ResetReport, VerifyFailure, WorkspaceStats};
pub use writer::{ArenaWriter, WorkspaceOverflow};

use verify::Sampler;

/// Size of a Varnish request workspace (two 256 KiB regions), the default here.
pub const DEFAULT_WORKSPACE_SIZE: usize = 512 * 1024;

/// Fastly's shadow-mode sampling rate: one verification per 20,000 sampled events.
pub const DEFAULT_VERIFY_ONE_IN: u32 = 20_000;

/// How a reset scrubs the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScrubMode {
    /// Zero the whole buffer at every reset; the watermark is still tracked, for the metrics.
    Full,
    /// Zero the whole buffer, and verify samples as `Watermark` would: proves the tracking on
    /// real traffic before it is trusted.
    Shadow,
    /// Zero only below the high watermark. A sampled verification that finds a non-zero byte
    /// above it zeroes everything.
    Watermark,
}

impl ScrubMode {
    /// The mode's name as configuration spells it: `full`, `shadow` or `watermark`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScrubMode::Full => "full",
            ScrubMode::Shadow => "shadow",
            ScrubMode::Watermark => "watermark",
        }
    }

    /// Parses a name from [`ScrubMode::as_str`], ignoring ASCII case.
    pub fn from_name(name: &str) -> Option<ScrubMode> {
        [ScrubMode::Full, ScrubMode::Shadow, ScrubMode::Watermark]
            .into_iter()
            .find(|mode| mode.as_str().eq_ignore_ascii_case(name))
    }

    fn verifies(self) -> bool {
        self != ScrubMode::Full
    }
}

impl fmt::Display for ScrubMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How to build a [`Workspace`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkspaceConfig {
    /// Buffer size in bytes.
    pub size: usize,
    /// How resets scrub.
    pub mode: ScrubMode,
    /// Verify about one in this many resets (and operations, with `verify_operations`); 0
    /// never verifies.
    pub verify_one_in: u32,
    /// Count operations (allocations, reservations, commits, snapshots) as sampled events too,
    /// as Fastly did, not only resets. Off by default: a check costs a read of everything above
    /// the watermark whatever triggered it, so with operations counted its share of a request
    /// grows with the request's operation count, while a check at reset already sees every
    /// byte a request wrote outside the tracking (before it is zeroed). Operation checks only
    /// find such a byte earlier, at the operation that follows the stray write.
    pub verify_operations: bool,
    /// Seed of the sampling PRNG: runs are reproducible, and a pool can give each workspace its
    /// own seed so they do not sample in lockstep.
    pub seed: u64,
}

impl WorkspaceConfig {
    /// `size` bytes, [`ScrubMode::Shadow`] (where a rollout starts), verification at
    /// [`DEFAULT_VERIFY_ONE_IN`].
    pub fn new(size: usize) -> WorkspaceConfig {
        WorkspaceConfig {
            size,
            mode: ScrubMode::Shadow,
            verify_one_in: DEFAULT_VERIFY_ONE_IN,
            verify_operations: false,
            seed: 0x5eed_0fed_6e71_5eed,
        }
    }

    /// With another scrub mode.
    pub fn with_mode(mut self, mode: ScrubMode) -> WorkspaceConfig {
        self.mode = mode;
        self
    }

    /// With another sampling rate; 0 turns verification off.
    pub fn with_verify_one_in(mut self, one_in: u32) -> WorkspaceConfig {
        self.verify_one_in = one_in;
        self
    }

    /// Whether operations count as sampled events, besides resets.
    pub fn with_verify_operations(mut self, on: bool) -> WorkspaceConfig {
        self.verify_operations = on;
        self
    }

    /// With another PRNG seed.
    pub fn with_seed(mut self, seed: u64) -> WorkspaceConfig {
        self.seed = seed;
        self
    }
}

impl Default for WorkspaceConfig {
    /// [`DEFAULT_WORKSPACE_SIZE`] bytes, otherwise as [`WorkspaceConfig::new`].
    fn default() -> WorkspaceConfig {
        WorkspaceConfig::new(DEFAULT_WORKSPACE_SIZE)
    }
}

/// A fixed-size scratch buffer reused by one request after another.
///
/// Between requests the whole buffer is zero. A request opens a [`RequestScope`] with
/// [`Workspace::begin`], allocates through [`RequestScope::arena`], and the scope scrubs the
/// buffer when it ends, on every path out of the request.
pub struct Workspace {
    buf: Box<[u8]>,
    tracker: Tracker,
    /// A scope was opened and has not been reset: set while a request runs, and still set if a
    /// scope was leaked with `mem::forget`, which the next `begin` (or drop) then scrubs.
    in_request: bool,
    last: ResetReport,
}

/// Per-request bookkeeping, shared by every arena of the request.
#[derive(Debug)]
pub(crate) struct Tracker {
    mode: ScrubMode,
    /// One past the furthest byte the request may have written; never lowered before reset.
    watermark: usize,
    overflow: bool,
    /// First failed verification of this request, found by a sampled operation.
    failure: Option<VerifyFailure>,
    sampler: Sampler,
    sample_operations: bool,
    stats: WorkspaceStats,
}

impl Tracker {
    /// Moves the watermark up to `end`; returns the previous watermark.
    #[inline]
    pub(crate) fn raise(&mut self, end: usize) -> usize {
        let old = self.watermark;
        self.watermark = old.max(end);
        old
    }

    pub(crate) fn watermark(&self) -> usize {
        self.watermark
    }

    pub(crate) fn mark_overflow(&mut self) {
        self.overflow = true;
    }

    pub(crate) fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Counts a reset; true when it is sampled for verification.
    #[inline]
    fn sample_reset(&mut self) -> bool {
        self.mode.verifies() && self.sampler.tick()
    }

    /// Counts an operation, if operations are sampled; true when it is sampled.
    #[inline]
    pub(crate) fn sample_operation(&mut self) -> bool {
        self.sample_operations && self.sample_reset()
    }

    /// Verifies that `above` (the buffer from the watermark to its end, which starts at offset
    /// `at`) is zero. Out of line: it runs once in thousands of operations.
    #[cold]
    #[inline(never)]
    pub(crate) fn verify(&mut self, above: &mut [u8], at: usize, at_reset: bool) -> bool {
        self.stats.verifications += 1;
        let Some(dirty) = verify::first_nonzero(above) else {
            return true;
        };
        self.stats.failures += 1;
        let failure = VerifyFailure {
            offset: at + dirty,
            watermark: self.watermark,
            at_reset,
        };
        self.failure.get_or_insert(failure);
        // Whatever is up there is outside the tracking; it must not wait for the reset.
        above.fill(0);
        false
    }
}

impl Workspace {
    /// A workspace of `size` bytes with the default configuration ([`ScrubMode::Shadow`]).
    pub fn new(size: usize) -> Workspace {
        Workspace::with_config(WorkspaceConfig::new(size))
    }

    /// A workspace as configured. The buffer is allocated zeroed, once.
    pub fn with_config(config: WorkspaceConfig) -> Workspace {
        Workspace {
            buf: vec![0u8; config.size].into_boxed_slice(),
            tracker: Tracker {
                mode: config.mode,
                watermark: 0,
                overflow: false,
                failure: None,
                sampler: Sampler::new(config.verify_one_in, config.seed),
                sample_operations: config.verify_operations,
                stats: WorkspaceStats::default(),
            },
            in_request: false,
            last: ResetReport::default(),
        }
    }

    /// Starts a request. The returned scope scrubs the workspace when it is dropped or reset, so
    /// early returns and `?` still scrub.
    pub fn begin(&mut self) -> RequestScope<'_> {
        if self.in_request {
            // The last scope was leaked: scrub what it left before anyone else sees it.
            self.reset();
        }
        self.in_request = true;
        RequestScope { ws: self }
    }

    /// Runs `f` as one request: `f` gets the request's arena, and the workspace is scrubbed when
    /// `f` returns (or unwinds). Nothing `f` returns can borrow request memory.
    pub fn scoped<R>(&mut self, f: impl FnOnce(&mut Arena<'_>) -> R) -> R {
        let mut scope = self.begin();
        f(&mut scope.arena())
    }

    /// Ends the current request, if any, and scrubs the workspace as its mode says. Also safe to
    /// call between requests (it then has nothing to clear in `Watermark` mode).
    ///
    /// Taking `&mut self` is what keeps request memory from outliving this call: every slice an
    /// arena handed out borrows the workspace.
    pub fn reset(&mut self) -> ResetReport {
        let report = self.scrub();
        self.tracker.stats.record(&report, self.buf.len());
        self.tracker.watermark = 0;
        self.tracker.overflow = false;
        self.tracker.failure = None;
        self.in_request = false;
        self.last = report;
        report
    }

    fn scrub(&mut self) -> ResetReport {
        let len = self.buf.len();
        let t = &mut self.tracker;
        let watermark = t.watermark.min(len);
        let verified = t.sample_reset();
        if verified {
            // Before zeroing: in Shadow mode the clear would hide exactly what is looked for.
            let above = self.buf.get_mut(watermark..).unwrap_or_default();
            t.verify(above, watermark, true);
        }
        let failure = t.failure;
        let clear_to = match t.mode {
            ScrubMode::Watermark if failure.is_none() => watermark,
            _ => len,
        };
        if let Some(used) = self.buf.get_mut(..clear_to) {
            used.fill(0);
        }
        ResetReport {
            zeroed: clear_to,
            watermark,
            overflowed: t.overflow,
            verified,
            failure,
        }
    }

    /// The scrub mode.
    pub fn mode(&self) -> ScrubMode {
        self.tracker.mode
    }

    /// Changes the scrub mode; takes effect at the next reset. Safe at any time: every mode
    /// leaves the whole buffer zero after a reset, which is all `Watermark` relies on.
    pub fn set_mode(&mut self, mode: ScrubMode) {
        self.tracker.mode = mode;
    }

    /// Changes the sampling rate (0 turns verification off), e.g. to sample more densely for a
    /// while during a shadow rollout.
    pub fn set_verify_one_in(&mut self, one_in: u32) {
        self.tracker.sampler.set_rate(one_in);
    }

    /// Buffer size in bytes.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Counters since the workspace was built.
    pub fn stats(&self) -> WorkspaceStats {
        self.tracker.stats
    }

    /// What the last reset did, including one run by a dropped [`RequestScope`].
    pub fn last_report(&self) -> ResetReport {
        self.last
    }

    /// Whether the whole buffer is zero, read in full with the verification loop. For tests,
    /// audits and debug assertions; true between requests.
    pub fn is_scrubbed(&self) -> bool {
        verify::is_zero(&self.buf)
    }
}

impl Default for Workspace {
    /// A [`DEFAULT_WORKSPACE_SIZE`] workspace in [`ScrubMode::Shadow`].
    fn default() -> Workspace {
        Workspace::with_config(WorkspaceConfig::default())
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        if self.in_request {
            // A leaked scope: do not hand request data back to the allocator.
            self.buf.fill(0);
            core::hint::black_box(&self.buf);
        }
    }
}

impl fmt::Debug for Workspace {
    // Never the contents: they are other people's secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workspace")
            .field("size", &self.buf.len())
            .field("mode", &self.tracker.mode)
            .field("watermark", &self.tracker.watermark)
            .field("in_request", &self.in_request)
            .field("stats", &self.tracker.stats)
            .finish()
    }
}

/// One request's use of a [`Workspace`]: scrubs it when dropped or [reset](Self::reset).
///
/// Allocate through [`RequestScope::arena`]. Everything allocated borrows the scope, so the
/// compiler proves it dead before the scrub runs.
pub struct RequestScope<'ws> {
    ws: &'ws mut Workspace,
}

impl<'ws> RequestScope<'ws> {
    /// An arena over the whole buffer. Each call starts again at offset 0: whatever an earlier
    /// arena of this scope handed out is dead by then (this call borrows the scope mutably), so
    /// its room is reused; the watermark keeps covering it, and reused bytes are zeroed as they
    /// are handed out again.
    pub fn arena(&mut self) -> Arena<'_> {
        Arena::new(&mut self.ws.buf, &mut self.ws.tracker)
    }

    /// Ends the request: scrubs the workspace and reports what was done. Dropping the scope does
    /// the same and keeps the report as [`Workspace::last_report`].
    pub fn reset(self) -> ResetReport {
        // Drop sees `in_request` cleared and does nothing more.
        self.ws.reset()
    }

    /// The request's high watermark so far.
    pub fn watermark(&self) -> usize {
        self.ws.tracker.watermark
    }

    /// Whether an allocation or a write failed for want of room during this request.
    pub fn overflowed(&self) -> bool {
        self.ws.tracker.overflow
    }
}

impl Drop for RequestScope<'_> {
    fn drop(&mut self) {
        if self.ws.in_request {
            self.ws.reset();
        }
    }
}

impl fmt::Debug for RequestScope<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RequestScope")
            .field("workspace", &self.ws)
            .finish()
    }
}
