//! Why a store operation failed.

use std::path::PathBuf;
use std::prelude::rust_2024::*;
use std::string::String;
use std::time::Duration;

/// Why the feature store refused an operation.
///
/// A reader that refuses a new version keeps serving the last good one where it can (see
/// [`FeatureGuard::refused`](super::FeatureGuard::refused)); these errors say why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file system call failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        /// What was being done, e.g. "open", "map", "rename".
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The store exists but no snapshot was ever published into it.
    #[error("nothing published yet in {}", .0.display())]
    NothingPublished(PathBuf),
    /// The state file does not have the size of the layout this build speaks.
    #[error("state file {} is {actual} bytes, expected {expected}", path.display())]
    StateSize {
        /// The state file.
        path: PathBuf,
        /// Its size.
        actual: u64,
        /// The size of the layout.
        expected: u64,
    },
    /// The state file's header is not ours or is damaged.
    #[error("state file {}: {reason}", path.display())]
    StateCorrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// An archive's header is damaged or belongs to another version than the state names.
    #[error("{}: {reason}", path.display())]
    DataCorrupt {
        /// The data file (or `<archive>` for bytes given in memory).
        path: PathBuf,
        /// What is wrong.
        reason: &'static str,
    },
    /// An archive is shorter than its header says.
    #[error("{} truncated: holds {actual} bytes, the archive needs {needed}", path.display())]
    Truncated {
        /// The data file (or `<archive>`).
        path: PathBuf,
        /// Bytes present.
        actual: u64,
        /// Bytes the header promises.
        needed: u64,
    },
    /// An archive's bytes do not hash to the checksum its header records.
    #[error("{}: checksum mismatch (header {expected:016x}, data {actual:016x})", path.display())]
    Checksum {
        /// The data file (or `<archive>`).
        path: PathBuf,
        /// Checksum in the header.
        expected: u64,
        /// Checksum of the bytes.
        actual: u64,
    },
    /// An archive's checksum matched but its structure failed rkyv's validation (bytecheck).
    #[error("{}: archive failed validation: {reason}", path.display())]
    Invalid {
        /// The data file (or `<archive>`).
        path: PathBuf,
        /// rkyv's message.
        reason: String,
    },
    /// The writer published so fast that the reader could not register on a version before the
    /// next one started overwriting it, this many times in a row. The read did nothing; retry.
    #[error("reader overrun by the writer {0} times in a row")]
    Overrun(u32),
    /// Readers stayed on the copy to be overwritten past the grace period, and the writer was
    /// told not to replace the copy's file (see [`WriterOptions`](super::WriterOptions)).
    #[error("{readers} reader(s) still on the copy after the grace period of {grace:?}")]
    GracePeriodExceeded {
        /// Readers still registered.
        readers: usize,
        /// The grace period.
        grace: Duration,
    },
    /// Another writer holds the store's lock.
    #[error("another writer holds {}", .0.display())]
    WriterLocked(PathBuf),
    /// Every reader slot of the state file is held by a live reader.
    #[error("all {0} reader slots are taken")]
    NoReaderSlot(usize),
    /// A snapshot's version must be above the published one, so versions never go backwards.
    #[error("snapshot version {new} is not above the published version {published}")]
    VersionNotIncreasing {
        /// The version offered.
        new: u64,
        /// The version published.
        published: u64,
    },
    /// A snapshot exceeds a limit of the archive layout.
    #[error("snapshot too large: {0}")]
    TooLarge(&'static str),
    /// rkyv failed to serialize (other than for room, which the writer handles).
    #[error("serialization failed: {0}")]
    Serialize(String),
}

impl StoreError {
    pub(crate) fn io(
        op: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| StoreError::Io { op, path, source }
    }
}
