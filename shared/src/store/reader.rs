//! Readers: wait-free access to the current snapshot, in place.

#![allow(unsafe_code)]

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::prelude::rust_2024::*;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use super::StoreError;
use super::files::{self, ReadMap, StateMap};
use super::forks;
use super::format::Header;
use super::index::{self, TableIndex};
use super::protocol::{EnterError, Protocol, SLOTS};

/// Registration attempts per read before giving up with [`StoreError::Overrun`]: each failed
/// attempt means the writer finished a whole publish and began the next one in between two of
/// the reader's instructions.
const ENTER_TRIES: u32 = 8;

/// A copy's version, its header and table index checked for one generation.
#[derive(Debug)]
struct Valid {
    generation: u64,
    version: u64,
    created_unix_ms: u64,
    tables: Vec<TableIndex>,
}

/// Reads the snapshots a [`FeatureWriter`](super::FeatureWriter) publishes, from any process.
///
/// A reader owns one slot of the state file (of 1024) for as long as it lives, held by a lock
/// on a small file, so a crashed reader's slot is reclaimed by the next reader to open. Use one
/// reader per thread: it is `Send`, not `Sync`, and [`FeatureReader::read`] takes `&mut self`.
/// A reader inherited through `fork()` claims a slot of its own at the child's first read.
///
/// [`FeatureReader::read`] is wait-free: it stores its slot, loads two words and compares, with
/// no lock and no system call, except the first time it sees a new version, when it maps the
/// data file if needed and checks its header and table index (O(tables), no pass over the
/// data), and one read in 1,024, which `stat`s the state file to follow a store directory made
/// anew. Lookups are bounds-checked against the mapping: damaged bytes give wrong answers or
/// none, never a read outside it.
#[derive(Debug)]
pub struct FeatureReader {
    dir: PathBuf,
    state: StateMap,
    slot: usize,
    _slot_lock: File,
    /// [`forks::count`] when the slot was claimed: a different count now means this is a
    /// forked child holding its parent's slot.
    forks: u64,
    copies: [Option<Arc<ReadMap>>; 2],
    valid: [Option<Valid>; 2],
    /// Generation of the newest version validated.
    good: Option<u64>,
    /// A newer generation that failed validation, and why; served around while it is current.
    refused: Option<(u64, StoreError)>,
    /// Reads so far, wrapping: every [`FOLLOW_EVERY`]th checks the store was not made anew.
    reads: u32,
}

/// Reads between two checks that the store's state file is still the one mapped (a `stat`,
/// ~1 µs: a few nanoseconds a read).
const FOLLOW_EVERY: u32 = 1024;

/// What went wrong loading a generation.
enum Load {
    /// The writer already replaced the copy by a newer generation: register again.
    Moved,
    /// The generation's data is damaged.
    Bad(StoreError),
}

impl From<StoreError> for Load {
    fn from(e: StoreError) -> Self {
        Load::Bad(e)
    }
}

impl FeatureReader {
    /// Opens the store in `dir` for reading. The writer must have created it
    /// ([`StoreError::Io`] on a missing state file); nothing needs to be published yet.
    pub fn open(dir: &Path) -> Result<FeatureReader, StoreError> {
        let forks = forks::count();
        let state = StateMap::open(&files::state_path(dir))?;
        let (slot, lock) = claim_slot(dir, &state)?;
        Ok(FeatureReader {
            dir: dir.to_owned(),
            state,
            slot,
            _slot_lock: lock,
            forks,
            copies: [None, None],
            valid: [None, None],
            good: None,
            refused: None,
            reads: 0,
        })
    }

    /// The store directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Ends the registration a [`FeatureGuard::keep`] left: the writer may then overwrite
    /// what was read through that guard. A reader with no registration does nothing.
    pub fn release(&mut self) {
        if self.owns_slot() {
            self.release_slot();
        }
    }

    /// The current snapshot, until the guard is dropped (hold it for microseconds, not
    /// seconds: the writer waits for it, for its grace period at most).
    ///
    /// If the newest version fails validation (damaged file), the guard serves the last good
    /// version when it is still intact and [`FeatureGuard::refused`] says why; otherwise the
    /// error is returned. The refusal is remembered: a bad version is validated once.
    pub fn read(&mut self) -> Result<FeatureGuard<'_>, StoreError> {
        if !self.owns_slot() {
            self.claim_own_slot()?;
        }
        self.reads = self.reads.wrapping_add(1);
        if self.reads.is_multiple_of(FOLLOW_EVERY) {
            self.follow_if_made_anew();
        }
        let mut moved = 0;
        let (generation, error) = loop {
            let generation = self.enter()?;
            let copy = (generation % 2) as usize;
            if self.valid[copy]
                .as_ref()
                .is_some_and(|v| v.generation == generation)
            {
                return Ok(self.guard(generation, None));
            }
            if let Some((refused, _)) = &self.refused
                && *refused == generation
            {
                break (generation, None);
            }
            match self.load(generation) {
                Ok(()) => {
                    self.good = Some(generation);
                    self.refused = None;
                    return Ok(self.guard(generation, None));
                }
                Err(Load::Moved) if moved < ENTER_TRIES => moved += 1,
                Err(Load::Moved) => {
                    self.release_slot();
                    return Err(StoreError::Overrun(moved));
                }
                Err(Load::Bad(e)) => break (generation, Some(e)),
            }
        };
        self.fall_back(generation, error)
    }

    /// Reopens the store if its directory was removed and made anew: this reader's mapping
    /// keeps the old, unlinked state file, whose version never changes again, and served its
    /// last version for as long as the process lived. Until the new store opens (a writer
    /// making it), the old version keeps serving.
    fn follow_if_made_anew(&mut self) {
        let now = files::identity(&files::state_path(&self.dir));
        if now.is_some_and(|id| id != self.state.identity())
            && let Ok(fresh) = FeatureReader::open(&self.dir)
        {
            *self = fresh;
        }
    }

    /// Serves the last good version instead of `generation`, which failed with `error` (or
    /// earlier, with the remembered refusal).
    fn fall_back(
        &mut self,
        generation: u64,
        error: Option<StoreError>,
    ) -> Result<FeatureGuard<'_>, StoreError> {
        if let Some(error) = error {
            self.refused = Some((generation, error));
        }
        let good = self.good.filter(|&good| {
            let valid = &self.valid[(good % 2) as usize];
            valid.as_ref().is_some_and(|v| v.generation == good) && self.register(good)
        });
        match good {
            Some(good) => {
                let refused = self.refused.as_ref().map(|(_, e)| e);
                Ok(self.guard(good, refused))
            }
            None => {
                self.release_slot();
                Err(self
                    .refused
                    .take()
                    .map_or(StoreError::Overrun(0), |(_, e)| e))
            }
        }
    }

    /// Whether this process claimed the slot (a forked child inherits its parent's).
    fn owns_slot(&self) -> bool {
        self.forks == forks::count()
    }

    /// In a forked child: claims a slot of its own, leaving the parent's word alone. The
    /// inherited lock's descriptor is closed; the parent's still holds the lock.
    fn claim_own_slot(&mut self) -> Result<(), StoreError> {
        let (slot, lock) = claim_slot(&self.dir, &self.state)?;
        (self.slot, self._slot_lock, self.forks) = (slot, lock, forks::count());
        Ok(())
    }

    fn slot_word(&self) -> Option<&AtomicU64> {
        Protocol::over(self.state.words()).slot(self.slot)
    }

    fn enter(&self) -> Result<u64, StoreError> {
        let protocol = Protocol::over(self.state.words());
        let slot = protocol
            .slot(self.slot)
            .ok_or(StoreError::NoReaderSlot(SLOTS))?;
        protocol.enter(slot, ENTER_TRIES).map_err(|e| match e {
            EnterError::Empty => StoreError::NothingPublished(self.dir.clone()),
            EnterError::Overrun(n) => StoreError::Overrun(n),
        })
    }

    fn register(&self, generation: u64) -> bool {
        let protocol = Protocol::over(self.state.words());
        protocol
            .slot(self.slot)
            .is_some_and(|slot| protocol.register(slot, generation))
    }

    fn release_slot(&self) {
        if let Some(slot) = self.slot_word() {
            Protocol::release(slot);
        }
    }

    /// Maps (again, if the file was replaced or grew) and validates `generation`'s copy; the
    /// reader is registered on `generation`.
    fn load(&mut self, generation: u64) -> Result<(), Load> {
        let copy = generation % 2;
        let path = files::data_path(&self.dir, copy);
        let index = copy as usize;
        self.valid[index] = None;
        for remapped in [false, true] {
            if remapped || !self.copies[index].as_ref().is_some_and(|m| m.intact()) {
                self.copies[index] = None;
                self.copies[index] = Some(Arc::new(ReadMap::open(&path)?));
            }
            let Some(map) = &self.copies[index] else {
                continue;
            };
            // SAFETY: registered on `generation`, whose copy this path holds (or held: a
            // replaced file is never written again), so nothing writes the mapping.
            let bytes = unsafe { map.bytes() };
            let header = match Header::decode(bytes) {
                Ok(header) => header,
                Err(_) if !remapped => continue,
                Err(reason) => return Err(Load::Bad(corrupt(&path, reason))),
            };
            if header.generation > generation {
                // The file was replaced since: this mapping is out of date, or we are late.
                if remapped {
                    return Err(Load::Moved);
                }
                continue;
            }
            let needed = index::offset(header.len).and_then(|at| at.checked_add(header.index_len));
            let needed = needed.unwrap_or(u64::MAX);
            if header.generation < generation || needed > map.len() as u64 {
                // Stale mapping of a replaced file, or the file grew: map it again.
                if !remapped {
                    continue;
                }
                if header.generation < generation {
                    return Err(Load::Bad(corrupt(
                        &path,
                        "data file holds an older generation than the state names",
                    )));
                }
                return Err(Load::Bad(StoreError::Truncated {
                    path,
                    actual: map.len() as u64,
                    needed,
                }));
            }
            let tables = index::read(bytes, header.len, header.index_len)
                .map_err(|reason| Load::Bad(corrupt(&path, reason)))?;
            self.valid[index] = Some(Valid {
                generation,
                version: header.version,
                created_unix_ms: header.created_unix_ms,
                tables,
            });
            return Ok(());
        }
        Err(Load::Moved)
    }

    /// A guard on `generation`, which is checked and registered.
    fn guard<'r>(&'r self, generation: u64, refused: Option<&'r StoreError>) -> FeatureGuard<'r> {
        let index = (generation % 2) as usize;
        let view = match (&self.copies[index], &self.valid[index]) {
            (Some(map), Some(valid)) => Some(View {
                // SAFETY: registered on `generation` (see `load`), so nothing writes the
                // mapping while the guard lives.
                file: unsafe { map.bytes() },
                map,
                valid,
            }),
            _ => None,
        };
        FeatureGuard {
            view,
            slot: self.slot_word(),
            refused,
        }
    }
}

impl Drop for FeatureReader {
    fn drop(&mut self) {
        if self.owns_slot() {
            self.release_slot();
        }
    }
}

fn corrupt(path: &Path, reason: &'static str) -> StoreError {
    StoreError::DataCorrupt {
        path: path.to_owned(),
        reason,
    }
}

/// The first reader slot whose lock file nobody holds; the lock is the claim. A crashed
/// reader may have left its registration in the slot's word: it is cleared.
fn claim_slot(dir: &Path, state: &StateMap) -> Result<(usize, File), StoreError> {
    for index in 0..SLOTS {
        let path = files::slot_lock_path(dir, index);
        let file = files::open_slot_lock(&path)?;
        match file.try_lock() {
            Ok(()) => {
                if let Some(word) = Protocol::over(state.words()).slot(index) {
                    Protocol::release(word);
                }
                return Ok((index, file));
            }
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => return Err(StoreError::io("lock", &path)(e)),
        }
    }
    Err(StoreError::NoReaderSlot(SLOTS))
}

/// One consistent version of the store, read in place. The writer does not overwrite it while
/// the guard lives (for its grace period at most; past that, it writes a new file and this
/// guard keeps the old one, still intact).
///
/// What is read through a guard borrows the guard, not the reader: once the guard is dropped
/// the writer may overwrite those bytes in place, so a vector read through a guard that is
/// gone would change under its reader. Keep the guard while reading:
///
/// ```no_run
/// # fn f(reader: &mut edgewise::FeatureReader) -> Result<(), edgewise::StoreError> {
/// let guard = reader.read()?;
/// let features = guard.table("user").and_then(|t| t.get(7));
/// println!("{features:?}");
/// # Ok(()) }
/// ```
///
/// and not past the guard, a temporary dropped at the end of the first line here:
///
/// ```compile_fail
/// # fn f(reader: &mut edgewise::FeatureReader) -> Result<(), edgewise::StoreError> {
/// let features = reader.read()?.table("user").and_then(|t| t.get(7));
/// println!("{features:?}");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct FeatureGuard<'r> {
    /// Always set on a guard handed out (`Option` only so that a broken invariant reads as an
    /// empty snapshot, not a panic).
    view: Option<View<'r>>,
    slot: Option<&'r AtomicU64>,
    refused: Option<&'r StoreError>,
}

/// A registered version: its mapped file and the reader's checked index of it.
#[derive(Debug, Clone, Copy)]
struct View<'r> {
    file: &'r [u8],
    map: &'r Arc<ReadMap>,
    valid: &'r Valid,
}

/// A version's file kept mapped after its guard, and its reader, are gone: for bindings whose
/// values outlive a call (a Python buffer). The bytes stay readable while it lives; they stay
/// unchanged only while the reader's registration lasts ([`FeatureGuard::keep`]).
#[derive(Debug, Clone)]
pub struct Mapping {
    _map: Arc<ReadMap>,
}

impl<'r> FeatureGuard<'r> {
    /// The snapshot's version.
    #[inline]
    pub fn version(&self) -> u64 {
        self.view.map_or(0, |v| v.valid.version)
    }

    /// When the snapshot was made, milliseconds since the Unix epoch.
    pub fn created_unix_ms(&self) -> u64 {
        self.view.map_or(0, |v| v.valid.created_unix_ms)
    }

    /// The table called `name`, for as long as this guard lives.
    #[inline]
    pub fn table(&self, name: &str) -> Option<TableRef<'_>> {
        let view = self.view?;
        let index = view.valid.tables.iter().find(|t| &*t.name == name)?;
        Some(TableRef {
            file: view.file,
            index,
        })
    }

    /// Every table with its name, for as long as this guard lives.
    pub fn tables(&self) -> impl Iterator<Item = (&str, TableRef<'_>)> {
        self.view.into_iter().flat_map(|view| {
            view.valid.tables.iter().map(move |index| {
                let table = TableRef {
                    file: view.file,
                    index,
                };
                (&*index.name, table)
            })
        })
    }

    /// Why a newer version than this one was refused (damaged data), if one was: the guard
    /// then serves the last good version.
    pub fn refused(&self) -> Option<&StoreError> {
        self.refused
    }

    /// Keeps this version's file mapped for as long as the [`Mapping`] lives: what was read
    /// through the guard stays readable, not unchanged (see [`Mapping`]).
    pub fn mapping(&self) -> Option<Mapping> {
        self.view.map(|v| Mapping {
            _map: Arc::clone(v.map),
        })
    }

    /// Ends the guard but keeps its registration: the bytes read through it (as pointers, since
    /// the borrows end here) stay mapped and unchanged until the reader's next
    /// [`FeatureReader::read`] or [`FeatureReader::release`]. Meanwhile the writer waits for
    /// them as for a guard, its grace period at most, then writes a new file and leaves them
    /// intact. For bindings that hand pointers out across calls (the C ABI); Rust code keeps
    /// the guard instead.
    pub fn keep(self) {
        core::mem::forget(self);
    }
}

impl Drop for FeatureGuard<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            Protocol::release(slot);
        }
    }
}

/// A table of a [`FeatureGuard`]'s snapshot, borrowing the guard.
#[derive(Debug, Clone, Copy)]
pub struct TableRef<'r> {
    file: &'r [u8],
    index: &'r TableIndex,
}

impl<'r> TableRef<'r> {
    /// The vector of `key`, in place in the mapped file (no copy).
    #[inline]
    pub fn get(&self, key: u64) -> Option<&'r [f32]> {
        self.index.get(self.file, key)
    }

    /// Keys in the table.
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// True if the table has no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every key and its vector, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &'r [f32])> + use<'r> {
        self.index.iter(self.file)
    }
}
