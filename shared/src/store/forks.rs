//! How many times this process is a fork's child: a reader's slot belongs to the process that
//! claimed it, and a child that inherits the reader must claim a slot of its own before
//! touching one (a child storing or releasing its parent's slot word would let the writer
//! overwrite what the parent is reading).
#![allow(unsafe_code)]

use std::sync::{
    Once,
    atomic::{AtomicU64, Ordering},
};

static FORKS: AtomicU64 = AtomicU64::new(0);

/// Runs in the child after `fork()`; async-signal-safe (one atomic add).
extern "C" fn count_fork() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// The count now, watching forks from the first call on (every reader calls this when it
/// opens, so forks that matter are counted).
pub(crate) fn count() -> u64 {
    static WATCH: Once = Once::new();
    WATCH.call_once(|| {
        // Miri does not run `fork`; there is nothing to watch.
        #[cfg(not(miri))]
        // SAFETY: registers a handler that only increments an atomic, which is safe to run
        // in a forked child of a multithreaded process. A failure (ENOMEM) leaves forks
        // uncounted, as they were before the first reader.
        unsafe {
            libc::pthread_atfork(None, None, Some(count_fork));
        }
    });
    FORKS.load(Ordering::Relaxed)
}
