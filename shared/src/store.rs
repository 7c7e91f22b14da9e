//! The feature store: ML feature tables published by one process (the daemon) and read by
//! many others (origin apps) through memory-mapped files, in place, without locks or system
//! calls on the read path. The design follows Cloudflare's bliss / mmap-sync and fixes its
//! known flaws (read from its source: readers never verify the checksum, and never re-check the
//! version after registering).
//!
//! # Files
//!
//! A store is a directory: `state` (the synchronization words, see the protocol below, and one
//! reader slot per reader on its own cache line), `data_0` and `data_1` (two copies, each the
//! [archive format](FeatureSnapshot::to_archive): a 64-byte header with the full xxh3-64
//! checksum, then the rkyv 0.8 archive, then the table index), `writer.lock` and `readers/NNNN` (lock files: the one
//! writer, and the claim on each reader slot; the OS drops a lock when its process dies).
//!
//! # Protocol
//!
//! Publish number `g` (the *generation*) goes to copy `g % 2`. The writer announces `g`, waits
//! until no reader is registered on that copy (polling every [`WriterOptions::poll`], for at
//! most [`WriterOptions::grace`]), serializes the snapshot straight into the mapped copy, and
//! switches `current` to `g`. A reader stores the generation it is about to read into its own
//! slot and then checks that the writer has not announced a generation of the same copy since;
//! if it has, it retries on the newer one. Sequentially consistent atomics on both sides make
//! either the reader see the announcement or the writer see the slot (mmap-sync's readers do
//! not re-check, and can be handed a copy being overwritten).
//!
//! Readers past the grace period (stalled, or crashed while registered) are not overwritten:
//! the writer writes the new version into a fresh file and renames it over the copy. Their
//! mapping keeps the old file, intact, and later publishes ignore their stale slots. So no
//! reader ever sees torn bytes, and no reader delays the writer longer than the grace period.
//!
//! A reader checks each new version's header and table index once, in O(tables) (`index`),
//! and bounds-checks every lookup against what it checked: damaged bytes give wrong answers or
//! none, never a read outside the mapping. A version whose header or index fails is refused
//! and the last good version is served while it is intact ([`FeatureGuard::refused`] says
//! why). The archive's checksum is the writer's to check ([`FeatureWriter::verify`]). A killed
//! writer leaves `current` on the last good version; a restarted writer continues.
//!
//! A data file cut shorter while a reader maps it would raise SIGBUS in that reader (the OS
//! gives no other signal); the writer never shrinks its files (and grows back one cut short
//! before writing through its mapping), and readers check the file size before trusting a new
//! version. The writer allocates every block of a file before writing through its mapping, so
//! that a full file system is an error (`ENOSPC`), not a SIGBUS. Files are not fsynced: a store is shared memory between
//! processes, and after a machine crash a torn file fails its checksum.
//!
//! # Example
//!
//! ```
//! use edgewise::{FeatureReader, FeatureSnapshot, FeatureTable, FeatureWriter, WriterOptions};
//!
//! let dir = std::env::temp_dir().join(format!("edgewise-store-doc-{}", std::process::id()));
//! let mut writer = FeatureWriter::open(&dir, WriterOptions::default())?;
//! let mut table = FeatureTable::new("ip");
//! table.rows.insert(42, vec![0.5, 1.5]);
//! let snapshot = FeatureSnapshot { version: 1, created_unix_ms: 0, tables: vec![table] };
//! writer.publish(&snapshot)?;
//!
//! // In another process:
//! let mut reader = FeatureReader::open(&dir)?;
//! let guard = reader.read()?;
//! assert_eq!(guard.table("ip").and_then(|t| t.get(42)), Some(&[0.5, 1.5][..]));
//! # drop(guard);
//! # drop(reader);
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), edgewise::StoreError>(())
//! ```

mod error;
mod files;
mod forks;
mod format;
mod index;
mod protocol;
mod reader;
mod schema;
mod writer;

#[cfg(test)]
mod tests;

pub use error::StoreError;
pub use reader::{FeatureGuard, FeatureReader, Mapping, TableRef};
pub use schema::{FeatureSnapshot, FeatureTable};
pub use writer::{FeatureWriter, PublishReport, WriterOptions};
