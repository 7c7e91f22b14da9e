//! The store's files and their mappings: the only `unsafe` of the store besides the reader's
//! unchecked archive access. Mappings are kept raw ([`MmapRaw`]); Rust references into them
//! exist only while the protocol keeps other processes from writing the bytes they cover.

#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions, Permissions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::prelude::rust_2024::*;
use std::sync::atomic::AtomicU64;

use memmap2::{MmapOptions, MmapRaw};

use super::StoreError;
use super::protocol::{Protocol, WORDS};

/// The store directory: the writer's alone to change (no other user can add, rename or remove
/// a file in it), its group's to read.
pub(crate) const DIR_MODE: u32 = 0o750;
/// `readers/`: every reader creates its slot's lock file here; sticky, so none can remove or
/// replace another's.
pub(crate) const READERS_DIR_MODE: u32 = 0o1770;
/// The state file: readers write their slots in it.
pub(crate) const STATE_MODE: u32 = 0o660;
/// Data files: written by the writer only, read by its group.
pub(crate) const DATA_MODE: u32 = 0o640;
/// Lock files: `writer.lock` is the writer's; a slot's is opened read-only by other readers.
pub(crate) const WRITER_LOCK_MODE: u32 = 0o600;
pub(crate) const SLOT_LOCK_MODE: u32 = 0o640;

/// Opens `path` read-only, refusing a symlink there and never blocking (on a FIFO put in a
/// file's place). Every store file opens without following a link (std adds `O_CLOEXEC`).
fn open_read(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Gives `file` at `path` exactly `mode`, whatever the umask it was created under.
fn chmod(file: &File, path: &Path, mode: u32) -> Result<(), StoreError> {
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(StoreError::io("chmod", path))
}

/// Gives `path` exactly `mode`; a symlink there is an error, not followed.
pub(crate) fn set_mode(path: &Path, mode: u32) -> Result<(), StoreError> {
    let file = open_read(path).map_err(StoreError::io("open", path))?;
    chmod(&file, path, mode)
}

/// Creates the directory `path` (and its parents) if needed, and gives it `mode`.
pub(crate) fn make_dir(path: &Path, mode: u32) -> Result<(), StoreError> {
    fs::create_dir_all(path).map_err(StoreError::io("create", path))?;
    set_mode(path, mode)
}

/// Opens the lock file of a reader slot for `flock`, creating it if missing. Read-only: a
/// lock file another reader made is theirs, and `flock` needs no write access.
pub(crate) fn open_slot_lock(path: &Path) -> Result<File, StoreError> {
    match open_read(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        opened => return opened.map_err(StoreError::io("open", path)),
    }
    let created = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(SLOT_LOCK_MODE)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path);
    match created {
        Ok(file) => chmod(&file, path, SLOT_LOCK_MODE).map(|()| file),
        // Another reader made it meanwhile.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            open_read(path).map_err(StoreError::io("open", path))
        }
        Err(e) => Err(StoreError::io("create", path)(e)),
    }
}

/// Opens `path` read-write without following a symlink there, creating it if `create`;
/// the file gets exactly `mode`.
pub(crate) fn open_rw(path: &Path, create: Create, mode: u32) -> Result<File, StoreError> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW);
    match create {
        Create::IfMissing => {
            options.create(true);
        }
        Create::Anew => {
            // A file left by a killed writer is removed, not reused: only a file this call
            // made can be trusted to be a plain file nobody else holds open.
            match fs::remove_file(path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::io("remove", path)(e)),
            }
            options.create_new(true);
        }
    }
    let file = options.open(path).map_err(StoreError::io("open", path))?;
    chmod(&file, path, mode).map(|()| file)
}

/// How [`open_rw`] treats a missing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Create {
    /// It is created.
    IfMissing,
    /// Whatever is there is removed and a new file created (`O_CREAT | O_EXCL`).
    Anew,
}

/// Makes `file` at least `len` bytes long with every block up to there allocated. A page of
/// a sparse file (as `set_len` leaves it) is allocated when first written, and through a
/// mapping on a full file system that write raises SIGBUS, which killed the daemon; allocated
/// first, a full file system is an error here (`ENOSPC`).
fn reserve(file: &File, path: &Path, len: u64) -> Result<(), StoreError> {
    let len = libc::off_t::try_from(len).map_err(|_| StoreError::TooLarge("file size"))?;
    // SAFETY: the descriptor is `file`'s, open (for writing) for the whole call, which passes
    // no memory; `posix_fallocate` never shortens a file.
    let code = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len) };
    match code {
        0 => Ok(()),
        errno => Err(StoreError::io("allocate", path)(
            io::Error::from_raw_os_error(errno),
        )),
    }
}

/// The state file of the store in `dir`.
pub(crate) fn state_path(dir: &Path) -> PathBuf {
    dir.join("state")
}

/// Data file of `copy` (0 or 1).
pub(crate) fn data_path(dir: &Path, copy: u64) -> PathBuf {
    dir.join(if copy.is_multiple_of(2) {
        "data_0"
    } else {
        "data_1"
    })
}

/// Lock file of reader slot `index`.
pub(crate) fn slot_lock_path(dir: &Path, index: usize) -> PathBuf {
    dir.join("readers").join(std::format!("{index:04}"))
}

/// Bytes of a state file.
pub(crate) const STATE_BYTES: u64 = (WORDS * 8) as u64;

/// The state file, mapped shared and read-write (readers write their slots).
#[derive(Debug)]
pub(crate) struct StateMap {
    map: MmapRaw,
    /// The mapped file's device and inode: a path naming another is a store made anew.
    identity: Identity,
}

/// A file's device and inode.
pub(crate) type Identity = (u64, u64);

/// The identity of the file at `path`, if there is one.
pub(crate) fn identity(path: &Path) -> Option<Identity> {
    fs::metadata(path).ok().as_ref().map(identity_of)
}

fn identity_of(meta: &fs::Metadata) -> Identity {
    (meta.dev(), meta.ino())
}

impl StateMap {
    /// Maps the state file at `path`, checking its size and header.
    pub(crate) fn open(path: &Path) -> Result<StateMap, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(StoreError::io("open", path))?;
        let actual = file.metadata().map_err(StoreError::io("stat", path))?.len();
        if actual != STATE_BYTES {
            return Err(StoreError::StateSize {
                path: path.to_owned(),
                actual,
                expected: STATE_BYTES,
            });
        }
        let state = StateMap::map(&file, path)?;
        Protocol::attach(state.words()).map_err(|reason| StoreError::StateCorrupt {
            path: path.to_owned(),
            reason,
        })?;
        Ok(state)
    }

    /// Creates a fresh state file at `path` (written aside and renamed into place, so no
    /// reader ever maps a half-made one).
    pub(crate) fn create(path: &Path) -> Result<StateMap, StoreError> {
        let tmp = path.with_extension("tmp");
        let file = open_rw(&tmp, Create::Anew, STATE_MODE)?;
        reserve(&file, &tmp, STATE_BYTES)?;
        let state = StateMap::map(&file, &tmp)?;
        Protocol::init(state.words()).ok_or(StoreError::StateCorrupt {
            path: tmp.clone(),
            reason: "state file too short",
        })?;
        fs::rename(&tmp, path).map_err(StoreError::io("rename", path))?;
        Ok(state)
    }

    fn map(file: &File, path: &Path) -> Result<StateMap, StoreError> {
        let meta = file.metadata().map_err(StoreError::io("stat", path))?;
        let map = MmapOptions::new()
            .len(STATE_BYTES as usize)
            .map_raw(file)
            .map_err(StoreError::io("map", path))?;
        Ok(StateMap {
            map,
            identity: identity_of(&meta),
        })
    }

    /// The mapped file's device and inode.
    pub(crate) fn identity(&self) -> Identity {
        self.identity
    }

    /// The state's words.
    #[inline]
    pub(crate) fn words(&self) -> &[AtomicU64] {
        // SAFETY: the mapping is page-aligned (so 8-aligned) and `STATE_BYTES` = `WORDS * 8`
        // long (checked on open, set on create), and lives as long as `self`. `AtomicU64` has
        // the size and alignment of `u64`, and every bit pattern is a valid value. Every
        // process touches these words only through atomics (this module's callers never
        // create a plain reference to the state bytes), so the accesses cannot race.
        unsafe { &*self.map.as_ptr().cast::<[AtomicU64; WORDS]>() }.as_slice()
    }
}

/// A data file mapped read-only by a reader.
#[derive(Debug)]
pub(crate) struct ReadMap {
    file: File,
    map: MmapRaw,
}

impl ReadMap {
    /// Maps the whole data file at `path`.
    pub(crate) fn open(path: &Path) -> Result<ReadMap, StoreError> {
        let file = open_read(path).map_err(StoreError::io("open", path))?;
        let len = file.metadata().map_err(StoreError::io("stat", path))?.len();
        if len == 0 {
            return Err(StoreError::Truncated {
                path: path.to_owned(),
                actual: 0,
                needed: super::format::HEADER as u64,
            });
        }
        let map = MmapOptions::new()
            .map_raw_read_only(&file)
            .map_err(StoreError::io("map", path))?;
        Ok(ReadMap { file, map })
    }

    /// True while the file is at least as long as the mapping. A file cut shorter under a
    /// mapping raises SIGBUS on access to the lost pages; the writer never shrinks its files,
    /// so only outside damage does this, and readers check before trusting a new version.
    pub(crate) fn intact(&self) -> bool {
        self.file
            .metadata()
            .is_ok_and(|meta| meta.len() >= self.map.len() as u64)
    }

    /// Bytes mapped.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The mapped bytes.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no process may write the file: the caller must be
    /// registered (protocol) on a generation this file holds, or hold a file no writer maps
    /// any more.
    #[inline]
    pub(crate) unsafe fn bytes(&self) -> &[u8] {
        // SAFETY: the mapping is `len()` bytes, readable, and lives as long as `self`; the
        // caller guarantees (this function's contract) that nothing writes it meanwhile.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr(), self.map.len()) }
    }
}

/// A data file mapped read-write by the writer.
#[derive(Debug)]
pub(crate) struct WriteMap {
    file: File,
    map: MmapRaw,
}

impl WriteMap {
    /// Opens (creating if needed) the data file at `path`, at least `len` bytes long, and
    /// maps it. `fresh` makes a new file in its place: the file is new to everybody.
    pub(crate) fn open(path: &Path, len: u64, fresh: bool) -> Result<WriteMap, StoreError> {
        let create = if fresh {
            Create::Anew
        } else {
            Create::IfMissing
        };
        let file = open_rw(path, create, DATA_MODE)?;
        let mut map = WriteMap::map(file, path)?;
        map.grow(path, len)?;
        Ok(map)
    }

    fn map(file: File, path: &Path) -> Result<WriteMap, StoreError> {
        reserve(&file, path, super::format::HEADER as u64)?;
        let map = MmapOptions::new()
            .map_raw(&file)
            .map_err(StoreError::io("map", path))?;
        Ok(WriteMap { file, map })
    }

    /// Makes the file at least `len` bytes (never shorter: readers may map the tail), its
    /// mapping as long, and every block of it allocated, before anything is written through
    /// the mapping. Called before each write: the file is stat'ed anew, since one cut short by
    /// someone else since it was mapped would raise SIGBUS at the first write past its end.
    pub(crate) fn grow(&mut self, path: &Path, len: u64) -> Result<(), StoreError> {
        let mapped = self.map.len() as u64;
        let size = self
            .file
            .metadata()
            .map_err(StoreError::io("stat", path))?
            .len();
        reserve(&self.file, path, len.max(mapped))?;
        if mapped >= len && size >= mapped {
            return Ok(());
        }
        let file = self
            .file
            .try_clone()
            .map_err(StoreError::io("open", path))?;
        *self = WriteMap::map(file, path)?;
        Ok(())
    }

    /// The mapped bytes, to write.
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no other process or thread may access the file: no
    /// reader is registered (protocol) on a generation of this copy since its file was last
    /// replaced, or the file is not in place yet.
    pub(crate) unsafe fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len()` bytes, writable, and lives as long as `self`, which
        // this borrows mutably; the caller guarantees exclusive access across processes.
        unsafe { std::slice::from_raw_parts_mut(self.map.as_mut_ptr(), self.map.len()) }
    }
}
