//! The feature store across processes: readers in child processes see a writer's publishes,
//! and a writer killed (SIGKILL) at random instants mid-publish leaves readers on the last good
//! version, with a restarted writer continuing after it.
//!
//! Children are this test binary itself, run with `STORE_CHILD=<role>` on the `child` test, or
//! a `fork()` of it.
#![cfg(feature = "store")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use edgewise::{
    FeatureGuard, FeatureReader, FeatureSnapshot, FeatureTable, FeatureWriter, WriterOptions,
};

const TABLE: &str = "stamped";

/// Keys and floats per vector of the writer child's snapshots: big enough (2 MiB) that a
/// publish takes milliseconds (debug build), so kills land inside one.
const KEYS: u64 = 8192;
const DIMS: usize = 64;

fn stamped(version: u64) -> FeatureSnapshot {
    let mut table = FeatureTable::new(TABLE);
    table.rows = (0..KEYS).map(|k| (k, vec![version as f32; DIMS])).collect();
    FeatureSnapshot {
        version,
        created_unix_ms: version,
        tables: vec![table],
    }
}

/// Every vector equals the version: one whole snapshot, no mix.
fn check(guard: &FeatureGuard<'_>) {
    let table = guard.table(TABLE).expect("table");
    assert_eq!(table.len() as u64, KEYS);
    let version = guard.version() as f32;
    for key in (0..KEYS).step_by(97) {
        let row = table.get(key).expect("key");
        assert!(
            row.iter().all(|&f| f == version),
            "mixed versions at key {key}"
        );
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("edgewise-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn spawn(role: &str, dir: &Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("STORE_CHILD", role)
        .env("STORE_DIR", dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap()
}

/// `open()`, retried for a few seconds: the store may not exist yet, and a lock file can stay
/// held for a moment by a process another test thread is forking (the descriptor is closed on
/// exec).
fn retry<T>(mut open: impl FnMut() -> Result<T, edgewise::StoreError>) -> T {
    let start = Instant::now();
    loop {
        match open() {
            Ok(t) => return t,
            Err(e) if start.elapsed() > Duration::from_secs(5) => panic!("{e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// The child processes' entry point; a no-op in a normal test run.
#[test]
fn child() {
    let (Ok(role), Ok(dir)) = (std::env::var("STORE_CHILD"), std::env::var("STORE_DIR")) else {
        return;
    };
    let dir = PathBuf::from(dir);
    match role.as_str() {
        // Publishes back to back until killed, continuing after what is there.
        "writer" => {
            let options = WriterOptions::default().with_grace(Duration::from_millis(20));
            let mut writer = retry(|| FeatureWriter::open(&dir, options));
            loop {
                writer.publish(&stamped(writer.version() + 1)).unwrap();
            }
        }
        // Reads for a second; fails (panics) on a torn or backwards read; needs to see at
        // least two versions.
        "reader" => {
            let mut reader = retry(|| FeatureReader::open(&dir));
            let (start, mut last, mut versions) = (Instant::now(), 0, 0);
            while start.elapsed() < Duration::from_secs(1) || versions < 2 {
                let Ok(guard) = reader.read() else { continue };
                check(&guard);
                assert!(guard.version() >= last, "went backwards");
                versions += usize::from(guard.version() != last);
                last = guard.version();
                assert!(start.elapsed() < Duration::from_secs(30), "writer stalled");
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn readers_in_other_processes_see_publishes() {
    let dir = temp_dir("procs");
    let mut writer_child = spawn("writer", &dir);
    let readers: Vec<Child> = (0..2).map(|_| spawn("reader", &dir)).collect();
    for mut reader in readers {
        assert!(reader.wait().unwrap().success(), "reader process failed");
    }
    writer_child.kill().unwrap();
    writer_child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_writer_killed_mid_publish_leaves_the_last_good_version() {
    let dir = temp_dir("kill");
    let mut writer = FeatureWriter::open(&dir, WriterOptions::default()).unwrap();
    writer.publish(&stamped(1)).unwrap();
    drop(writer);
    let mut reader = FeatureReader::open(&dir).unwrap();
    let mut last = 1;
    // Pseudo-random kill instants (xorshift), 20-300 ms into the writer's life (which starts
    // with the test binary's own start-up).
    let mut seed = 0x2545_f491_4f6c_dd1d_u64 ^ u64::from(std::process::id());
    for _ in 0..10 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = spawn("writer", &dir);
        let wait = Duration::from_millis(20 + seed % 280);
        let start = Instant::now();
        while start.elapsed() < wait {
            let guard = reader.read().unwrap();
            check(&guard);
            assert!(guard.version() >= last);
            last = guard.version();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        let guard = reader.read().unwrap();
        assert!(guard.refused().is_none(), "{:?}", guard.refused());
        check(&guard);
        assert!(guard.version() >= last);
        last = guard.version();
    }
    // A restarted writer continues after the last good version.
    let mut writer = FeatureWriter::open(&dir, WriterOptions::default()).unwrap();
    assert_eq!(writer.version(), last);
    writer.publish(&stamped(last + 1)).unwrap();
    assert_eq!(reader.read().unwrap().version(), last + 1);
    assert!(last > 1, "the writer children published");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A row read through a kept guard of version 1, and the writer that will publish over it (with
/// a short grace, so publishes do not wait long for the kept registration).
struct Kept {
    dir: PathBuf,
    writer: FeatureWriter,
    reader: FeatureReader,
    row: (*const f32, usize),
}

impl Kept {
    fn new(name: &str) -> Kept {
        let dir = temp_dir(name);
        let options = WriterOptions::default().with_grace(Duration::from_millis(20));
        let mut writer = FeatureWriter::open(&dir, options).unwrap();
        writer.publish(&stamped(1)).unwrap();
        let mut reader = FeatureReader::open(&dir).unwrap();
        let guard = reader.read().unwrap();
        let row = guard.table(TABLE).unwrap().get(7).unwrap();
        let row = (row.as_ptr(), row.len());
        guard.keep();
        Kept {
            dir,
            writer,
            reader,
            row,
        }
    }

    /// Publishes versions 2 and 3: the second lands on the kept copy, and past the grace
    /// writes a new file if the registration holds. Then the kept bytes must be intact.
    fn publish_over_and_check(&mut self) {
        self.writer.publish(&stamped(2)).unwrap();
        self.writer.publish(&stamped(3)).unwrap();
        // SAFETY: what is under test: the kept registration keeps these bytes mapped and
        // unchanged until the reader's next read or release.
        let kept = unsafe { std::slice::from_raw_parts(self.row.0, self.row.1) };
        assert!(kept.iter().all(|&f| f == 1.0), "{kept:?}");
    }

    /// Releases the row; the reader then reads version 3.
    fn release(mut self) {
        self.reader.release();
        let guard = self.reader.read().unwrap();
        assert_eq!(guard.version(), 3);
        check(&guard);
        drop(guard);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The C ABI's contract: bytes read through a kept guard stay mapped and unchanged while the
/// writer publishes over their copy, until the reader releases them.
#[test]
fn a_kept_guard_keeps_its_bytes_until_released() {
    let mut kept = Kept::new("kept");
    kept.publish_over_and_check();
    kept.release();
}

/// A forked child inherits its parent's reader (an app preloaded before its workers fork): the
/// child's reads, release and exit leave the parent's kept registration alone.
#[test]
fn a_forked_child_leaves_its_parents_registration_alone() {
    let mut kept = Kept::new("forked");
    // SAFETY: the child reads the store, releases, drops the reader and exits without
    // returning into the test harness; glibc keeps malloc usable after fork.
    match unsafe { libc::fork() } {
        0 => {
            let Kept {
                mut reader, writer, ..
            } = kept;
            let read = reader.read().map(|guard| guard.version());
            reader.release();
            drop(reader);
            // The writer and its lock are the parent's: the child leaves them alone.
            std::mem::forget(writer);
            // SAFETY: ends the child at once, as a forked worker's exit would.
            unsafe { libc::_exit(if matches!(read, Ok(1)) { 0 } else { 1 }) }
        }
        -1 => panic!("fork: {}", std::io::Error::last_os_error()),
        child => {
            let mut status = 0;
            // SAFETY: waits for the child just forked; `status` is a valid out pointer.
            assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "child: {status:#x}"
            );
        }
    }
    kept.publish_over_and_check();
    kept.release();
}
