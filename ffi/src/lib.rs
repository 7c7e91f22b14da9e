//! The C ABI of the edgewise feature store reader (`include/edgewise.h`): origin apps in C,
//! or in any language with a C FFI (Python ctypes, Go cgo, PHP FFI, LuaJIT), read the vectors
//! `edgewised` publishes in place, as Rust apps do with `edgewise::FeatureReader`.
//!
//! Ownership and threads:
//! - `ew_reader_open` returns a reader the caller owns and frees with `ew_reader_close`. A
//!   reader holds one of the store's 1024 reader slots while open.
//! - A reader is used by one thread at a time (it may move between threads); give each
//!   thread its own reader.
//! - The vector `ew_reader_get` returns points into the store's mapped file, not a copy: it
//!   stays valid and unchanged until the next call on that reader, `ew_reader_release` or
//!   `ew_reader_close`. Until then the daemon's publishes wait for it (its grace period at
//!   most, then they write a new file and leave it intact): release promptly.
//! - Every function returns an `EwStatus`; on an error `ew_last_error()` describes it, valid
//!   on the calling thread until its next failing call. No panic crosses the boundary: one
//!   is reported as `EW_STATUS_PANIC`.

use std::{
    cell::RefCell,
    ffi::{CStr, CString, OsStr, c_char},
    os::unix::ffi::OsStrExt,
    panic::{AssertUnwindSafe, catch_unwind},
    path::Path,
    ptr,
};

use edgewise::{FeatureReader, StoreError};

/// What a call did.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EwStatus {
    /// Done.
    Ok = 0,
    /// No such table, or no such key in it: not an error.
    NotFound = 1,
    /// A null pointer, or a table name that is not UTF-8.
    InvalidArgument = -1,
    /// The store could not be opened or read (missing directory, permissions).
    Io = -2,
    /// The writer has not published a version yet.
    NothingPublished = -3,
    /// The published version is damaged, and no earlier one is intact.
    Damaged = -4,
    /// Every reader slot is taken, or the writer kept overtaking this reader: retry.
    Busy = -5,
    /// A bug: the library panicked. The reader should be closed.
    Panic = -99,
}

/// A reader of one store: opaque to C.
#[derive(Debug)]
pub struct EwReader {
    reader: FeatureReader,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs `call`, turning its error or panic into a status and the thread's last error.
fn status(call: impl FnOnce() -> Result<EwStatus, (EwStatus, String)>) -> EwStatus {
    let outcome = catch_unwind(AssertUnwindSafe(call))
        .unwrap_or_else(|_| Err((EwStatus::Panic, "edgewise_ffi panicked".to_owned())));
    match outcome {
        Ok(status) => status,
        Err((status, message)) => {
            let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
            // `try_with`: during the thread's teardown the message is dropped, not a panic.
            let _ = LAST_ERROR.try_with(|last| *last.borrow_mut() = message);
            status
        }
    }
}

fn invalid(what: &str) -> (EwStatus, String) {
    (EwStatus::InvalidArgument, what.to_owned())
}

fn store_error(error: StoreError) -> (EwStatus, String) {
    let status = match &error {
        StoreError::NothingPublished(_) => EwStatus::NothingPublished,
        StoreError::Overrun(_) | StoreError::NoReaderSlot(_) => EwStatus::Busy,
        StoreError::Io { .. } => EwStatus::Io,
        _ => EwStatus::Damaged,
    };
    (status, error.to_string())
}

/// Opens the store in directory `dir` (a NUL-terminated path) and stores a new reader in
/// `*out`; on error `*out` is NULL.
///
/// # Safety
/// `dir` is NULL or a NUL-terminated string; `out` is NULL or points to writable memory for a
/// pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ew_reader_open(dir: *const c_char, out: *mut *mut EwReader) -> EwStatus {
    status(|| {
        if out.is_null() {
            return Err(invalid("out is NULL"));
        }
        // SAFETY: `out` is not NULL and points to writable memory (the caller's contract).
        unsafe { *out = ptr::null_mut() };
        if dir.is_null() {
            return Err(invalid("dir is NULL"));
        }
        // SAFETY: `dir` is a NUL-terminated string (the caller's contract).
        let dir = unsafe { CStr::from_ptr(dir) };
        let path = Path::new(OsStr::from_bytes(dir.to_bytes()));
        let reader = FeatureReader::open(path).map_err(store_error)?;
        // SAFETY: as above.
        unsafe { *out = Box::into_raw(Box::new(EwReader { reader })) };
        Ok(EwStatus::Ok)
    })
}

/// Looks up `key` in the table named by the `table_len` bytes at `table` (UTF-8, no NUL
/// needed). Found: `*values` points to `*len` floats in the store, valid until the next call on
/// this reader, `ew_reader_release` or `ew_reader_close`, and the status is `EW_STATUS_OK`.
/// Absent: `EW_STATUS_NOT_FOUND`, `*values` NULL and `*len` 0.
///
/// # Safety
/// `reader` is NULL or a reader from `ew_reader_open` not yet closed, used by no other thread
/// during the call; `table` points to `table_len` readable bytes (or is NULL with `table_len`
/// 0); `values` and `len` are NULL or point to writable memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ew_reader_get(
    reader: *mut EwReader,
    table: *const u8,
    table_len: usize,
    key: u64,
    values: *mut *const f32,
    len: *mut usize,
) -> EwStatus {
    status(|| {
        if values.is_null() || len.is_null() {
            return Err(invalid("values or len is NULL"));
        }
        // SAFETY: both point to writable memory (the caller's contract).
        unsafe {
            *values = ptr::null();
            *len = 0;
        }
        // SAFETY: a live reader no other thread uses (the caller's contract).
        let reader = unsafe { reader.as_mut() }.ok_or_else(|| invalid("reader is NULL"))?;
        let name: &[u8] = match (table.is_null(), table_len) {
            (true, 0) => &[],
            (true, _) => return Err(invalid("table is NULL")),
            // SAFETY: `table` points to `table_len` readable bytes (the caller's contract).
            (false, _) => unsafe { std::slice::from_raw_parts(table, table_len) },
        };
        let name = std::str::from_utf8(name).map_err(|_| invalid("table is not UTF-8"))?;
        let guard = reader.reader.read().map_err(store_error)?;
        let Some(found) = guard.table(name).and_then(|t| t.get(key)) else {
            return Ok(EwStatus::NotFound);
        };
        // SAFETY: as above.
        unsafe {
            *values = found.as_ptr();
            *len = found.len();
        }
        // The vector stays in place until the reader's next read or release.
        guard.keep();
        Ok(EwStatus::Ok)
    })
}

/// Stores the version the reader serves now in `*version`.
///
/// # Safety
/// As `ew_reader_get` for `reader`; `version` is NULL or points to writable memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ew_reader_version(reader: *mut EwReader, version: *mut u64) -> EwStatus {
    status(|| {
        if version.is_null() {
            return Err(invalid("version is NULL"));
        }
        // SAFETY: a live reader no other thread uses (the caller's contract).
        let reader = unsafe { reader.as_mut() }.ok_or_else(|| invalid("reader is NULL"))?;
        let now = reader.reader.read().map_err(store_error)?.version();
        // SAFETY: `version` points to writable memory (the caller's contract).
        unsafe { *version = now };
        Ok(EwStatus::Ok)
    })
}

/// Lets the writer overwrite the vector the last `ew_reader_get` returned (which must not be
/// read after this). NULL is ignored.
///
/// # Safety
/// `reader` is NULL or a live reader no other thread uses during the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ew_reader_release(reader: *mut EwReader) {
    // SAFETY: a live reader no other thread uses (the caller's contract).
    if let Some(reader) = unsafe { reader.as_mut() } {
        reader.reader.release();
    }
}

/// Closes a reader and frees it. NULL is ignored.
///
/// # Safety
/// `reader` is NULL or a reader from `ew_reader_open`, closed once, used by no other thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ew_reader_close(reader: *mut EwReader) {
    if !reader.is_null() {
        // SAFETY: `reader` came from `Box::into_raw` in `ew_reader_open` and is freed once.
        drop(unsafe { Box::from_raw(reader) });
    }
}

/// What the calling thread's last failing call said: a NUL-terminated string, valid until
/// that thread's next failing call; empty if none failed.
#[unsafe(no_mangle)]
pub extern "C" fn ew_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|last| last.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}
