//! What resets did: per reset ([`ResetReport`]) and summed ([`WorkspaceStats`]).

/// Counters of one workspace, or of a pool once [merged](WorkspaceStats::merge).
///
/// `bytes_zeroed / bytes_full_clear` is the share of memory writes the watermark leaves; in
/// `Shadow` mode both are equal and `peak_watermark` and the verification counters say whether
/// switching to `Watermark` is safe.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkspaceStats {
    /// Resets (requests ended).
    pub resets: u64,
    /// Bytes the resets zeroed.
    pub bytes_zeroed: u64,
    /// Bytes the resets would have zeroed clearing everything.
    pub bytes_full_clear: u64,
    /// Sampled verifications run.
    pub verifications: u64,
    /// Verifications that found a non-zero byte above the watermark. Anything but 0 is a bug
    /// in the tracking.
    pub failures: u64,
    /// Requests that ran out of room at least once.
    pub overflows: u64,
    /// Highest watermark any request reached.
    pub peak_watermark: usize,
}

impl WorkspaceStats {
    /// Adds `other`'s counters (the peak is the larger one), to sum over a pool.
    pub fn merge(&mut self, other: &WorkspaceStats) {
        self.resets += other.resets;
        self.bytes_zeroed += other.bytes_zeroed;
        self.bytes_full_clear += other.bytes_full_clear;
        self.verifications += other.verifications;
        self.failures += other.failures;
        self.overflows += other.overflows;
        self.peak_watermark = self.peak_watermark.max(other.peak_watermark);
    }

    pub(crate) fn record(&mut self, report: &ResetReport, size: usize) {
        self.resets += 1;
        self.bytes_zeroed += report.zeroed as u64;
        self.bytes_full_clear += size as u64;
        self.overflows += u64::from(report.overflowed);
        self.peak_watermark = self.peak_watermark.max(report.watermark);
    }
}

/// What one reset did. The caller logs [`failure`](Self::failure) (the core has no logger).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResetReport {
    /// Bytes zeroed (from offset 0).
    pub zeroed: usize,
    /// The request's high watermark.
    pub watermark: usize,
    /// Whether the request ran out of room.
    pub overflowed: bool,
    /// Whether this reset was sampled and verified the buffer above the watermark.
    pub verified: bool,
    /// The first failed verification of the request, if any (at this reset or at a sampled
    /// operation during it); the whole buffer was zeroed.
    pub failure: Option<VerifyFailure>,
}

/// A verification found a non-zero byte above the watermark: the tracking missed a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifyFailure {
    /// Offset of the first non-zero byte found.
    pub offset: usize,
    /// The watermark at the time.
    pub watermark: usize,
    /// Found by the check at reset (else by a sampled operation during the request).
    pub at_reset: bool,
}
