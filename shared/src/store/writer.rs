//! The one writer of a store.

#![allow(unsafe_code)]

use std::fs::{self, File};
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::prelude::rust_2024::*;
use std::string::ToString;
use std::time::{Duration, Instant};

use rkyv::rancor;
use rkyv::ser::writer::Buffer;

use super::files::{self, Create, StateMap, WriteMap};
use super::format::{HEADER, Header};
use super::index;
use super::protocol::Protocol;
use super::schema::ArchivedFeatureSnapshot;
use super::{FeatureSnapshot, StoreError};

/// How a [`FeatureWriter`] waits for readers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterOptions {
    /// How long a publish waits for readers still on the copy it is about to overwrite. A
    /// crashed reader (registered, never released) delays a publish by at most this.
    pub grace: Duration,
    /// Pause between two looks at the reader slots while waiting.
    pub poll: Duration,
    /// After the grace period: write the new version into a fresh file renamed over the
    /// copy (true, the default; readers still on the old file keep reading it, intact), or
    /// fail the publish with [`StoreError::GracePeriodExceeded`] (false).
    pub replace_stuck: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            grace: Duration::from_millis(100),
            poll: Duration::from_micros(50),
            replace_stuck: true,
        }
    }
}

impl WriterOptions {
    /// The defaults: 100 ms grace, polled every 50 µs, stuck copies replaced.
    pub fn new() -> WriterOptions {
        WriterOptions::default()
    }

    /// With a grace period of `grace`.
    pub fn with_grace(self, grace: Duration) -> WriterOptions {
        WriterOptions { grace, ..self }
    }

    /// Polling every `poll`.
    pub fn with_poll(self, poll: Duration) -> WriterOptions {
        WriterOptions { poll, ..self }
    }

    /// Whether to replace a copy readers are stuck on (see [`WriterOptions::replace_stuck`]).
    pub fn with_replace_stuck(self, replace_stuck: bool) -> WriterOptions {
        WriterOptions {
            replace_stuck,
            ..self
        }
    }
}

/// What a publish did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PublishReport {
    /// The snapshot version now served.
    pub version: u64,
    /// The store's generation (publishes since the store was made).
    pub generation: u64,
    /// Archive bytes, header included.
    pub bytes: u64,
    /// Time from the call to the switch, waiting included.
    pub duration: Duration,
    /// Time spent waiting for readers.
    pub waited: Duration,
    /// Readers still on the copy when the grace period ended (0 if they all left).
    pub stuck_readers: usize,
    /// True if the copy's file was replaced rather than overwritten (new file, or readers
    /// stuck past the grace period).
    pub replaced: bool,
}

/// Publishes snapshots into a store directory for [`FeatureReader`](super::FeatureReader)s in
/// any process. One writer per directory (a lock file enforces it); the lock dies with the
/// process, so a restarted writer takes over and continues after the last good version.
#[derive(Debug)]
pub struct FeatureWriter {
    dir: PathBuf,
    _lock: File,
    state: StateMap,
    copies: [Option<WriteMap>; 2],
    version: u64,
    options: WriterOptions,
}

impl FeatureWriter {
    /// Opens the store in `dir` for writing, creating the directory and its state file if
    /// needed. An existing state file must be intact ([`StoreError::StateSize`],
    /// [`StoreError::StateCorrupt`]); an unfinished publish of a killed writer is simply
    /// redone by the next [`FeatureWriter::publish`].
    ///
    /// The directory and its files get the store's permission modes, whatever the umask and
    /// whatever they had: the directory and data files are the writer's to change and its
    /// group's to read; readers write only the state file and their lock files.
    pub fn open(dir: &Path, options: WriterOptions) -> Result<FeatureWriter, StoreError> {
        files::make_dir(dir, files::DIR_MODE)?;
        files::make_dir(&dir.join("readers"), files::READERS_DIR_MODE)?;
        let lock_path = dir.join("writer.lock");
        let lock = files::open_rw(&lock_path, Create::IfMissing, files::WRITER_LOCK_MODE)?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => return Err(StoreError::WriterLocked(lock_path)),
            Err(fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", &lock_path)(e)),
        }
        let state_path = files::state_path(dir);
        let state = if state_path.exists() {
            files::set_mode(&state_path, files::STATE_MODE)?;
            StateMap::open(&state_path)?
        } else {
            StateMap::create(&state_path)?
        };
        for copy in [0, 1] {
            let path = files::data_path(dir, copy);
            if path.exists() {
                files::set_mode(&path, files::DATA_MODE)?;
            }
        }
        let current = Protocol::over(state.words()).current();
        let version = published_version(dir, current).unwrap_or(0);
        Ok(FeatureWriter {
            dir: dir.to_owned(),
            _lock: lock,
            state,
            copies: [None, None],
            version,
            options,
        })
    }

    /// Version of the snapshot last published (0 if none, or if the current data file is
    /// unreadable).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Checks the current version's data file whole: the archive's checksum and the table
    /// index. Readers check only the header and the index of a new version, so damage done to
    /// a file after it was published (a disk error, a process with write access) is found
    /// here, by whoever calls this (the daemon, periodically), and repaired by publishing the
    /// snapshot again. `Ok(None)` if nothing is published.
    pub fn verify(&self) -> Result<Option<u64>, StoreError> {
        let current = Protocol::over(self.state.words()).current();
        if current == 0 {
            return Ok(None);
        }
        let path = files::data_path(&self.dir, current % 2);
        let map = files::ReadMap::open(&path)?;
        // SAFETY: `current`'s copy is not written until the next publish, which needs
        // `&mut self`; the writer lock keeps other writers out.
        let bytes = unsafe { map.bytes() };
        let corrupt = |reason| StoreError::DataCorrupt {
            path: path.clone(),
            reason,
        };
        let header = Header::decode(bytes).map_err(corrupt)?;
        if header.generation != current {
            return Err(corrupt(
                "the file holds another generation than the state names",
            ));
        }
        super::format::body(&path, bytes, &header)?;
        index::read(bytes, header.len, header.index_len).map_err(corrupt)?;
        Ok(Some(header.version))
    }

    /// The newest version the store's files hold intact: the current one, or, if its file is
    /// damaged, the one before it, which the other copy keeps until the next publish. `None`
    /// if nothing was published; the current version's error if neither copy is intact.
    ///
    /// Readers have no good version to read while the current one is damaged: a writer
    /// resuming from the one before publishes it again, as a version above
    /// [`FeatureWriter::version`].
    pub fn last_intact(&self) -> Result<Option<FeatureSnapshot>, StoreError> {
        let current = Protocol::over(self.state.words()).current();
        if current == 0 {
            return Ok(None);
        }
        let damaged = match read_copy(&self.dir, current) {
            Ok(snapshot) => return Ok(Some(snapshot)),
            Err(error) => error,
        };
        match current > 1 {
            true => read_copy(&self.dir, current - 1)
                .map(Some)
                .map_err(|_| damaged),
            false => Err(damaged),
        }
    }

    /// Publishes `snapshot`: writes it into the copy readers are not on and switches them
    /// over. Its version must exceed [`FeatureWriter::version`]. On any error the previous
    /// version keeps being served.
    pub fn publish(&mut self, snapshot: &FeatureSnapshot) -> Result<PublishReport, StoreError> {
        let start = Instant::now();
        let protocol = Protocol::over(self.state.words());
        let current = protocol.current();
        if current > 0 && snapshot.version <= self.version {
            return Err(StoreError::VersionNotIncreasing {
                new: snapshot.version,
                published: self.version,
            });
        }
        let generation = current + 1;
        let copy = generation % 2;
        let size = snapshot
            .size_bound()
            .and_then(|n| {
                n.checked_add(HEADER)?
                    .checked_add(index::bound(snapshot.tables.len())?)
            })
            .ok_or(StoreError::TooLarge("archive size overflows"))? as u64;
        protocol.begin(generation);
        let (waited, stuck_readers) = self.wait(generation);
        if stuck_readers > 0 && !self.options.replace_stuck {
            return Err(StoreError::GracePeriodExceeded {
                readers: stuck_readers,
                grace: self.options.grace,
            });
        }
        let path = files::data_path(&self.dir, copy);
        let replaced = stuck_readers > 0 || !path.exists();
        let bytes = if replaced {
            self.write_fresh(copy, generation, snapshot, size)?
        } else {
            self.write_in_place(copy, generation, snapshot, size)?
        };
        Protocol::over(self.state.words()).publish(generation);
        self.version = snapshot.version;
        Ok(PublishReport {
            version: snapshot.version,
            generation,
            bytes,
            duration: start.elapsed(),
            waited,
            stuck_readers,
            replaced,
        })
    }

    /// Polls until no reader is on copy `generation % 2` or the grace period is over; the time
    /// waited and the readers left.
    fn wait(&self, generation: u64) -> (Duration, usize) {
        let protocol = Protocol::over(self.state.words());
        let start = Instant::now();
        loop {
            let readers = protocol.readers_on(generation);
            let waited = start.elapsed();
            if readers == 0 || waited >= self.options.grace {
                return (waited, readers);
            }
            std::thread::sleep(self.options.poll.min(self.options.grace - waited));
        }
    }

    fn write_in_place(
        &mut self,
        copy: u64,
        generation: u64,
        snapshot: &FeatureSnapshot,
        size: u64,
    ) -> Result<u64, StoreError> {
        let path = files::data_path(&self.dir, copy);
        let map = match &mut self.copies[copy as usize] {
            Some(map) => {
                map.grow(&path, size)?;
                map
            }
            slot => slot.insert(WriteMap::open(&path, size, false)?),
        };
        write_archive(map, generation, snapshot)
    }

    /// Writes the copy as a new file beside the old one and renames it into place: readers
    /// still on the old file keep it, untouched.
    fn write_fresh(
        &mut self,
        copy: u64,
        generation: u64,
        snapshot: &FeatureSnapshot,
        size: u64,
    ) -> Result<u64, StoreError> {
        let path = files::data_path(&self.dir, copy);
        let tmp = path.with_extension("tmp");
        self.copies[copy as usize] = None;
        let mut map = WriteMap::open(&tmp, size, true)?;
        let bytes = write_archive(&mut map, generation, snapshot)?;
        fs::rename(&tmp, &path).map_err(StoreError::io("rename", &path))?;
        // Only now: until the rename, the old file is the one in place, and readers on it
        // must still be waited for.
        Protocol::over(self.state.words()).set_replaced(copy, generation);
        self.copies[copy as usize] = Some(map);
        Ok(bytes)
    }
}

/// Serializes `snapshot` straight into the mapped file ([`write_into`]).
fn write_archive(
    map: &mut WriteMap,
    generation: u64,
    snapshot: &FeatureSnapshot,
) -> Result<u64, StoreError> {
    // SAFETY: the caller waited until no reader is registered on a generation of this copy
    // since its file was last replaced (`Protocol::readers_on` after `Protocol::begin`, so no
    // reader can newly register on it), or the file is a fresh one nobody else has opened;
    // the writer lock keeps other writers out.
    let bytes = unsafe { map.bytes_mut() };
    write_into(bytes, generation, snapshot)
}

/// Writes `snapshot` into `file` (a data file's bytes, 64-byte aligned): the archive, then the
/// table index after it, then the header. The bytes written.
pub(crate) fn write_into(
    file: &mut [u8],
    generation: u64,
    snapshot: &FeatureSnapshot,
) -> Result<u64, StoreError> {
    let base = file.as_ptr();
    let (head, rest) = file.split_at_mut(HEADER.min(file.len()));
    // A killed writer leaves no header that matches the half-written body.
    head.fill(0);
    let archive_len =
        rkyv::api::high::to_bytes_in::<_, rancor::Error>(snapshot, Buffer::from(&mut *rest))
            .map_err(|e| StoreError::Serialize(e.to_string()))?
            .len();
    let archive = &rest[..archive_len];
    let mut header = Header::of(snapshot, generation, archive);
    // SAFETY: these bytes are what rkyv's serializer wrote for `snapshot` just now, at a
    // 64-byte aligned offset, and nothing else writes them meanwhile (the caller's contract):
    // a valid archive of `FeatureSnapshot`.
    let archived = unsafe { rkyv::access_unchecked::<ArchivedFeatureSnapshot>(archive) };
    let table_index = index::encode(base, archived);
    let at = index::offset(archive_len as u64).and_then(|at| usize::try_from(at).ok());
    let target = at
        .and_then(|at| file.get_mut(at..at.checked_add(table_index.len())?))
        .ok_or(StoreError::TooLarge(
            "table index past the file's reserved size",
        ))?;
    target.copy_from_slice(&table_index);
    header.index_len = table_index.len() as u64;
    file[..HEADER].copy_from_slice(&header.encode());
    Ok(HEADER as u64 + header.len + header.index_len)
}

/// The snapshot of `generation`, read and checked whole from the data file that holds it.
fn read_copy(dir: &Path, generation: u64) -> Result<FeatureSnapshot, StoreError> {
    let path = files::data_path(dir, generation % 2);
    let bytes = fs::read(&path).map_err(StoreError::io("read", &path))?;
    let (header, snapshot) = super::format::read_archive(&path, &bytes)?;
    if header.generation != generation {
        return Err(StoreError::DataCorrupt {
            path,
            reason: "the file holds another generation than the state file names",
        });
    }
    Ok(snapshot)
}

/// The snapshot version in the header of the data file holding `generation`.
fn published_version(dir: &Path, generation: u64) -> Option<u64> {
    let mut head = [0u8; HEADER];
    File::open(files::data_path(dir, generation % 2))
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    let header = Header::decode(&head).ok()?;
    (header.generation == generation && generation > 0).then_some(header.version)
}
