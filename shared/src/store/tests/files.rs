//! The store on real files (Miri cannot map files: these are ignored there).

use std::fs;
use std::path::{Path, PathBuf};
use std::prelude::rust_2024::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use super::stamped;
use crate::store::format::HEADER as HEADER_BYTES;
use crate::store::*;

/// A fresh directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("edgewise-store-{name}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn quick() -> WriterOptions {
    WriterOptions::default().with_grace(Duration::from_millis(30))
}

/// Every vector of every table of the guard equals its version.
fn assert_stamped(guard: &FeatureGuard<'_>) {
    let version = guard.version() as f32;
    let mut vectors = 0;
    for (_, table) in guard.tables() {
        for (_, row) in table.iter() {
            assert!(row.iter().all(|&f| f == version), "mixed versions");
            vectors += 1;
        }
    }
    assert!(vectors > 0);
}

/// Flips a bit of the file's byte `at` (in place: the same file, as a disk error would).
fn flip_byte(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= 0x40;
    fs::write(path, bytes).unwrap();
}

#[test]
#[cfg_attr(miri, ignore)]
fn publish_then_read() {
    let dir = TempDir::new("basic");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    assert!(matches!(
        reader.read(),
        Err(StoreError::NothingPublished(_))
    ));
    let report = writer.publish(&stamped(1, 2, 50, 8)).unwrap();
    assert_eq!((report.version, report.generation), (1, 1));
    assert!(report.replaced, "first file is new");
    {
        let guard = reader.read().unwrap();
        assert_eq!(guard.version(), 1);
        assert_eq!(guard.created_unix_ms(), 1_700_000_000_001);
        assert_eq!(guard.table("t1").unwrap().len(), 50);
        assert!(guard.table("nope").is_none());
        assert!(guard.refused().is_none());
        assert_stamped(&guard);
    }
    for version in 2..6 {
        let report = writer
            .publish(&stamped(version, 2, 50 + version, 8))
            .unwrap();
        assert_eq!(report.stuck_readers, 0);
        let guard = reader.read().unwrap();
        assert_eq!(guard.version(), version);
        assert_eq!(guard.table("t0").unwrap().len() as u64, 50 + version);
        assert_stamped(&guard);
    }
    assert!(
        !writer.publish(&stamped(6, 1, 5, 2)).unwrap().replaced,
        "in place"
    );
    let err = writer.publish(&stamped(6, 1, 5, 2)).unwrap_err();
    assert!(matches!(
        err,
        StoreError::VersionNotIncreasing {
            new: 6,
            published: 6
        }
    ));
}

#[test]
#[cfg_attr(miri, ignore)]
fn a_second_writer_is_refused_and_a_restarted_one_continues() {
    let dir = TempDir::new("restart");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(7, 1, 10, 4)).unwrap();
    assert!(matches!(
        FeatureWriter::open(&dir.0, quick()),
        Err(StoreError::WriterLocked(_))
    ));
    drop(writer);
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    assert_eq!(writer.version(), 7);
    assert_eq!(writer.publish(&stamped(8, 1, 10, 4)).unwrap().generation, 2);
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    assert_eq!(reader.read().unwrap().version(), 8);
}

/// Where the table index of the data file at `path` starts.
fn index_at(path: &Path) -> usize {
    let bytes = fs::read(path).unwrap();
    let header = crate::store::format::Header::decode(&bytes).unwrap();
    crate::store::index::offset(header.len).unwrap() as usize
}

#[test]
#[cfg_attr(miri, ignore)]
fn damage_to_the_data_is_found_by_verify_and_never_crashes_a_reader() {
    let dir = TempDir::new("verify");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    assert_eq!(writer.verify().unwrap(), None);
    writer.publish(&stamped(1, 2, 100, 8)).unwrap();
    assert_eq!(writer.verify().unwrap(), Some(1));
    assert_stamped(&reader.read().unwrap());
    // Every byte of the archive overwritten once the reader has read the version: it does not
    // look again, and gets wrong answers or none, nothing worse.
    let path = dir.0.join("data_1");
    let end = index_at(&path);
    let mut bytes = fs::read(&path).unwrap();
    for (i, byte) in bytes[HEADER_BYTES..end].iter_mut().enumerate() {
        *byte = (i as u8).wrapping_mul(0x9d) ^ 0xff;
    }
    fs::write(&path, &bytes).unwrap();
    {
        let guard = reader.read().unwrap();
        assert_eq!(guard.version(), 1);
        for (_, table) in guard.tables() {
            for key in 0..1000u64 {
                let _ = table.get(key.wrapping_mul(0x9e37_79b9_7f4a_7c15));
            }
            let _ = table.iter().count();
        }
    }
    let error = writer.verify().unwrap_err();
    assert!(matches!(error, StoreError::Checksum { .. }), "{error}");
    // Published again, the snapshot is whole.
    writer.publish(&stamped(2, 2, 100, 8)).unwrap();
    assert_eq!(writer.verify().unwrap(), Some(2));
    assert_stamped(&reader.read().unwrap());
}

#[test]
#[cfg_attr(miri, ignore)]
fn damaged_new_versions_are_refused_and_the_last_good_one_served() {
    let dir = TempDir::new("damaged");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    writer.publish(&stamped(1, 1, 100, 8)).unwrap();
    assert_eq!(reader.read().unwrap().version(), 1);

    // Version 2 goes to data_0; flip a byte of its table index.
    writer.publish(&stamped(2, 1, 100, 8)).unwrap();
    flip_byte(&dir.0.join("data_0"), index_at(&dir.0.join("data_0")) + 9);
    for _ in 0..2 {
        let guard = reader.read().unwrap();
        assert_eq!(guard.version(), 1, "last good version");
        assert_stamped(&guard);
        assert!(matches!(
            guard.refused(),
            Some(StoreError::DataCorrupt { .. })
        ));
    }
    // A good version 3 (data_1) heals.
    writer.publish(&stamped(3, 1, 100, 8)).unwrap();
    let guard = reader.read().unwrap();
    assert_eq!(guard.version(), 3);
    assert!(guard.refused().is_none());
    drop(guard);

    // Truncated: version 4 in data_0, cut short.
    writer.publish(&stamped(4, 1, 100, 8)).unwrap();
    let file = fs::OpenOptions::new()
        .write(true)
        .open(dir.0.join("data_0"))
        .unwrap();
    file.set_len(1000).unwrap();
    let guard = reader.read().unwrap();
    assert_eq!(guard.version(), 3);
    assert!(
        matches!(guard.refused(), Some(StoreError::Truncated { .. })),
        "{:?}",
        guard.refused()
    );
    drop(guard);

    // A damaged header.
    writer.publish(&stamped(5, 1, 100, 8)).unwrap();
    let mut reader2 = FeatureReader::open(&dir.0).unwrap();
    flip_byte(&dir.0.join("data_1"), 20);
    let err = reader2.read().unwrap_err();
    assert!(matches!(err, StoreError::DataCorrupt { .. }), "{err}");
}

#[test]
#[cfg_attr(miri, ignore)]
fn bad_state_files_are_reported() {
    let dir = TempDir::new("state");
    assert!(matches!(
        FeatureReader::open(&dir.0),
        Err(StoreError::Io { .. })
    ));
    drop(FeatureWriter::open(&dir.0, quick()).unwrap());
    let state = dir.0.join("state");
    let good = fs::read(&state).unwrap();
    fs::write(&state, &good[..good.len() - 8]).unwrap();
    assert!(matches!(
        FeatureReader::open(&dir.0),
        Err(StoreError::StateSize { .. })
    ));
    assert!(matches!(
        FeatureWriter::open(&dir.0, quick()),
        Err(StoreError::StateSize { .. })
    ));
    let mut bad = good.clone();
    bad[0] ^= 1;
    fs::write(&state, &bad).unwrap();
    let err = FeatureReader::open(&dir.0).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "state file {}: not a feature store state file (bad magic)",
            state.display()
        )
    );
    fs::write(&state, &good).unwrap();
    assert!(FeatureReader::open(&dir.0).is_ok());
}

/// A guard held past the grace period: the writer replaces the copy's file and the guard keeps
/// reading the old one, intact. A crashed reader (never released) delays one publish only.
#[test]
#[cfg_attr(miri, ignore)]
fn stuck_readers_delay_the_writer_at_most_the_grace_period() {
    let dir = TempDir::new("stuck");
    let grace = Duration::from_millis(40);
    let mut writer =
        FeatureWriter::open(&dir.0, WriterOptions::default().with_grace(grace)).unwrap();
    writer.publish(&stamped(1, 1, 200, 16)).unwrap();
    let mut slow = FeatureReader::open(&dir.0).unwrap();
    let guard = slow.read().unwrap();
    let row = guard.table("t0").unwrap().get(0).unwrap();
    writer.publish(&stamped(2, 1, 200, 16)).unwrap();
    let report = writer.publish(&stamped(3, 1, 200, 16)).unwrap();
    assert_eq!(report.stuck_readers, 1);
    assert!(report.replaced);
    assert!(report.waited >= grace);
    assert!(row.iter().all(|&f| f == 1.0), "old file intact");
    assert_stamped(&guard);
    // The stale slot is on the replaced file: the next publish to that copy does not wait.
    writer.publish(&stamped(4, 1, 200, 16)).unwrap();
    let report = writer.publish(&stamped(5, 1, 200, 16)).unwrap();
    assert_eq!((report.stuck_readers, report.replaced), (0, false));
    assert!(report.waited < grace);
    drop(guard);
    assert_eq!(slow.read().unwrap().version(), 5);

    // A crashed reader: registered, never released, its slot lock leaked.
    let mut crashed = FeatureReader::open(&dir.0).unwrap();
    std::mem::forget(crashed.read().unwrap());
    std::mem::forget(crashed);
    writer.publish(&stamped(6, 1, 200, 16)).unwrap();
    let report = writer.publish(&stamped(7, 1, 200, 16)).unwrap();
    assert_eq!(report.stuck_readers, 1);
    let report = writer.publish(&stamped(9, 1, 200, 16)).unwrap();
    assert!(report.waited < grace);

    let strict = WriterOptions::default()
        .with_grace(grace)
        .with_replace_stuck(false);
    drop(writer);
    let mut writer = FeatureWriter::open(&dir.0, strict).unwrap();
    let guard = slow.read().unwrap();
    writer.publish(&stamped(10, 1, 200, 16)).unwrap();
    let err = writer.publish(&stamped(11, 1, 200, 16)).unwrap_err();
    assert!(
        matches!(err, StoreError::GracePeriodExceeded { readers: 1, .. }),
        "{err}"
    );
    assert_stamped(&guard);
}

/// Reader threads against a writer publishing back to back: every read is one complete
/// version, and versions never go backwards. Each reader reads before the first publish and
/// after the last, so that each sees at least two versions however the threads are scheduled
/// (one started late on a loaded machine saw only the last).
#[test]
#[cfg_attr(miri, ignore)]
fn reader_threads_see_whole_versions_in_order() {
    const READERS: usize = 3;
    let dir = TempDir::new("threads");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(1, 2, 300, 16)).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // Each reader says when it has read once; a channel, not a barrier, so that a reader
    // failing first fails the test instead of leaving it waiting.
    let (started, first_reads) = mpsc::channel();
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (dir, done) = (dir.0.clone(), Arc::clone(&done));
            let started = started.clone();
            thread::spawn(move || {
                let mut reader = FeatureReader::open(&dir).unwrap();
                let (mut last, mut seen) = (0, 0);
                loop {
                    let finished = done.load(Ordering::Acquire);
                    let version = {
                        let guard = reader.read().unwrap();
                        assert_stamped(&guard);
                        guard.version()
                    };
                    assert!(version >= last, "went backwards");
                    if version != last {
                        seen += 1;
                    }
                    if seen == 1 && last == 0 {
                        started.send(()).unwrap();
                    }
                    last = version;
                    if finished {
                        return seen;
                    }
                }
            })
        })
        .collect();
    for _ in 0..READERS {
        first_reads
            .recv_timeout(Duration::from_secs(30))
            .expect("a reader never read");
    }
    for version in 2..200 {
        writer.publish(&stamped(version, 2, 300, 16)).unwrap();
    }
    done.store(true, Ordering::Release);
    for reader in readers {
        assert!(reader.join().unwrap() > 1, "saw publishes");
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn files_grow_and_shrinking_snapshots_keep_working() {
    let dir = TempDir::new("grow");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    for (version, keys) in [
        (1, 10),
        (2, 10),
        (3, 5000),
        (4, 5000),
        (5, 3),
        (6, 20_000),
        (7, 1),
    ] {
        writer.publish(&stamped(version, 1, keys, 8)).unwrap();
        let guard = reader.read().unwrap();
        assert_eq!(guard.version(), version);
        assert_eq!(guard.table("t0").unwrap().len() as u64, keys);
        assert_stamped(&guard);
    }
}

/// A data file cut short by someone else after the writer mapped it is grown back before the
/// writer writes through its mapping: it wrote past the file's end and died of SIGBUS.
#[test]
#[cfg_attr(miri, ignore)]
fn a_copy_cut_short_behind_the_writers_back_is_grown_back() {
    let dir = TempDir::new("cut");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    for version in 1..=2 {
        writer.publish(&stamped(version, 2, 500, 8)).unwrap();
    }
    // Generation 3 goes to copy 1, in place: the writer has it mapped.
    fs::OpenOptions::new()
        .write(true)
        .open(files::data_path(&dir.0, 1))
        .unwrap()
        .set_len(0)
        .unwrap();
    writer.publish(&stamped(3, 2, 500, 8)).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    let guard = reader.read().unwrap();
    assert_eq!(guard.version(), 3);
    assert_stamped(&guard);
}

/// The newest intact version: the current one, else the one before it in the other copy,
/// else the current one's error.
#[test]
#[cfg_attr(miri, ignore)]
fn last_intact_falls_back_to_the_other_copy_once() {
    let dir = TempDir::new("intact");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    assert_eq!(writer.last_intact().unwrap(), None);
    for version in 1..=3 {
        writer.publish(&stamped(version, 1, 50, 4)).unwrap();
    }
    assert_eq!(writer.last_intact().unwrap().unwrap().version, 3);
    // Generation 3 is in copy 1.
    fs::write(files::data_path(&dir.0, 1), b"").unwrap();
    assert_eq!(writer.last_intact().unwrap(), Some(stamped(2, 1, 50, 4)));
    flip_byte(&files::data_path(&dir.0, 0), 100);
    let err = writer.last_intact().unwrap_err();
    assert!(
        err.to_string().contains("data_1"),
        "the current copy's error: {err}"
    );
}

/// A reader follows a store directory removed and made anew (within 1,024 reads): it kept the
/// old, unlinked state file mapped and served its last version for as long as it lived.
#[test]
#[cfg_attr(miri, ignore)]
fn readers_follow_a_store_made_anew() {
    let dir = TempDir::new("anew");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(2, 1, 10, 2)).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    assert_eq!(reader.read().unwrap().version(), 2);
    drop(writer);
    fs::remove_dir_all(&dir.0).unwrap();
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(10, 1, 10, 2)).unwrap();
    let versions: Vec<u64> = (0..1024)
        .map(|_| reader.read().unwrap().version())
        .collect();
    assert_eq!(versions.last(), Some(&10), "{:?}", &versions[1000..]);
    let guard = reader.read().unwrap();
    assert_stamped(&guard);
}

/// The permission bits of `path` (not following a symlink).
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
#[cfg_attr(miri, ignore)]
fn files_get_the_permission_model_whatever_they_had() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("modes");
    let loose = |path: &Path| fs::set_permissions(path, fs::Permissions::from_mode(0o777));
    {
        let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
        writer.publish(&stamped(1, 1, 5, 2)).unwrap();
        writer.publish(&stamped(2, 1, 5, 2)).unwrap();
    }
    // A store an older daemon, or a careless operator, left open to every user.
    for name in ["", "readers", "state", "data_0", "data_1", "writer.lock"] {
        loose(&dir.0.join(name)).unwrap();
    }
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(3, 1, 5, 2)).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    assert_eq!(reader.read().unwrap().version(), 3);
    for (name, expected) in [
        ("", 0o750),
        ("readers", 0o1770),
        ("state", 0o660),
        ("data_0", 0o640),
        ("data_1", 0o640),
        ("writer.lock", 0o600),
        ("readers/0000", 0o640),
    ] {
        assert_eq!(mode(&dir.0.join(name)), expected, "{name:?}");
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn the_writer_never_writes_through_a_symlink_in_the_store() {
    let dir = TempDir::new("symlinks");
    let victim = TempDir::new("symlinks-victim");
    fs::create_dir_all(&victim.0).unwrap();
    let secret = victim.0.join("secret");
    fs::write(&secret, b"keep me").unwrap();
    let secret_mode = mode(&secret);
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    writer.publish(&stamped(1, 1, 5, 2)).unwrap();
    // A stale temporary file that is a link: removed, and a new file made in its place.
    std::os::unix::fs::symlink(&secret, dir.0.join("data_0.tmp")).unwrap();
    writer.publish(&stamped(2, 1, 5, 2)).unwrap();
    assert_eq!(fs::read(&secret).unwrap(), b"keep me");
    drop(writer);
    // A data file replaced by a link: the writer refuses it rather than write through it.
    fs::remove_file(dir.0.join("data_1")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.0.join("data_1")).unwrap();
    let error = FeatureWriter::open(&dir.0, quick()).unwrap_err();
    assert!(error.to_string().contains("data_1"), "{error}");
    assert_eq!(fs::read(&secret).unwrap(), b"keep me");
    assert_eq!(mode(&secret), secret_mode, "the link's target was chmod'ed");
}

#[test]
#[cfg_attr(miri, ignore)]
fn bytes_changing_under_a_reader_never_crash_it() {
    use std::os::unix::fs::FileExt;
    let dir = TempDir::new("live-damage");
    let mut writer = FeatureWriter::open(&dir.0, quick()).unwrap();
    let mut reader = FeatureReader::open(&dir.0).unwrap();
    writer.publish(&stamped(1, 2, 2000, 16)).unwrap();
    assert_stamped(&reader.read().unwrap());
    let path = dir.0.join("data_1");
    let len = fs::metadata(&path).unwrap().len();
    let stop = Arc::new(AtomicBool::new(false));
    // Another process with write access, or a failing disk: random bytes anywhere in the file
    // (header and index included) while the reader reads the version it already checked.
    let vandal = {
        let stop = Arc::clone(&stop);
        let file = fs::OpenOptions::new().write(true).open(&path).unwrap();
        thread::spawn(move || {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            while !stop.load(Ordering::Relaxed) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                file.write_all_at(&x.to_le_bytes(), x % (len - 8)).unwrap();
            }
        })
    };
    let start = std::time::Instant::now();
    let mut lookups = 0u64;
    while start.elapsed() < Duration::from_millis(300) {
        let guard = reader.read().unwrap();
        for (_, table) in guard.tables() {
            for key in 0..2000u64 {
                if let Some(row) = table.get(key.wrapping_mul(0x9e37_79b9_7f4a_7c15)) {
                    lookups += row.len() as u64;
                }
            }
            lookups += table.iter().count() as u64;
        }
    }
    stop.store(true, Ordering::Relaxed);
    vandal.join().unwrap();
    assert!(lookups > 0);
    assert!(writer.verify().is_err(), "the damage is found");
}
