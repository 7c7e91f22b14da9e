//! Feature snapshots pulled from object storage by real `edgewised` processes, from a real S3
//! API server (s3proxy), published by `edgewised snapshot push`: a fleet converging on one
//! version, and every way a source can fail leaving the last good version serving.

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::Arc,
    time::{Duration, Instant},
};

use arrow_array::{ArrayRef, Float32Array, RecordBatch, StringArray, UInt64Array};
use edgewise::FeatureReader;
use edgewise_tests::{
    Daemon, SECRET, ScratchDir, daemon_bin, http_authorized,
    s3proxy::{Relay, S3Proxy, pause},
    sample, scratch_dir, wait_until,
};
use parquet::arrow::ArrowWriter;
use sha2::{Digest, Sha256};

const WAIT: Duration = Duration::from_secs(30);

/// A daemon's configuration pulling `s3://features/fleet` through `endpoint`.
fn config(dir: &Path, name: &str, endpoint: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "[features]\ndir = {:?}\nverify_interval_secs = 0\n\n[features.source]\n\
         url = \"s3://features/fleet\"\npoll_interval_secs = 1\npoll_jitter_ms = 200\n\
         request_timeout_ms = 1000\nretry_max_secs = 1\n\
         options = {{ aws_endpoint = {endpoint:?}, aws_allow_http = \"true\", \
         aws_region = \"us-east-1\" }}\n",
        dir.join(name),
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn start(dir: &Path, name: &str, endpoint: &str, secret_key: &str) -> Daemon {
    let config = config(dir, name, endpoint);
    Daemon::start_with_env(
        &["--config", config.to_str().unwrap()],
        &[
            ("EDGEWISED_API_SECRET", SECRET),
            ("AWS_ACCESS_KEY_ID", edgewise_tests::s3proxy::ACCESS_KEY),
            ("AWS_SECRET_ACCESS_KEY", secret_key),
        ],
    )
}

/// `edgewised snapshot push` of `file` to the fleet's prefix; the manifest's version.
fn push(s3: &S3Proxy, file: &Path, table: Option<&str>) -> u64 {
    let mut command = Command::new(daemon_bin());
    command
        .args(["snapshot", "push", "--source", "s3://features/fleet"])
        .arg(file)
        .envs(s3.env());
    if let Some(table) = table {
        command.args(["--table", table]);
    }
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "push failed: {stderr}");
    let manifest: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    manifest["version"].as_u64().unwrap()
}

/// The version a daemon's store serves, as an origin app reads it.
fn version(store: &Path) -> u64 {
    FeatureReader::open(store)
        .and_then(|mut r| r.read().map(|g| g.version()))
        .unwrap_or(0)
}

fn row(store: &Path, table: &str, key: u64) -> Option<Vec<f32>> {
    let mut reader = FeatureReader::open(store).unwrap();
    let guard = reader.read().unwrap();
    guard.table(table)?.get(key).map(<[f32]>::to_vec)
}

fn metric(daemon: &Daemon, series: &str) -> f64 {
    let (_, page) = http_authorized(daemon.addr, "/metrics");
    sample(&page, series).unwrap_or_else(|| panic!("no {series} in\n{page}"))
}

fn errors(daemon: &Daemon, reason: &str) -> f64 {
    metric(
        daemon,
        &format!("edgewise_features_source_errors_total{{reason=\"{reason}\"}}"),
    )
}

/// The feature check's detail on `/readyz`, which must pass: a failing source does not make
/// the daemon unready while it serves a version.
fn readiness(daemon: &Daemon) -> String {
    let (status, body) = http_authorized(daemon.addr, "/readyz");
    assert_eq!(status, 200, "{body}");
    let body: serde_json::Value = serde_json::from_str(&body).unwrap();
    body["checks"]["features"]["detail"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A Parquet file written by pyarrow: `key` (uint64) and `features` (list<float32>).
fn pyarrow_file(path: &Path, rows: &[(u64, [f32; 2])]) {
    let python_path = std::env::var("EDGEWISE_PYTHONPATH")
        .unwrap_or_else(|_| format!("{}/../.edgewise/python", env!("CARGO_MANIFEST_DIR")));
    let keys: Vec<String> = rows.iter().map(|(k, _)| k.to_string()).collect();
    let values: Vec<String> = rows
        .iter()
        .map(|(_, v)| format!("[{}, {}]", v[0], v[1]))
        .collect();
    let script = format!(
        "import pyarrow as pa, pyarrow.parquet as pq\n\
         t = pa.table({{'key': pa.array([{}], pa.uint64()), \
         'features': pa.array([{}], pa.list_(pa.float32()))}})\n\
         pq.write_table(t, {:?})\n",
        keys.join(", "),
        values.join(", "),
        path.to_str().unwrap()
    );
    let output = Command::new("python3")
        .args(["-c", &script])
        .env("PYTHONPATH", python_path)
        .output()
        .expect("running python3");
    assert!(
        output.status.success(),
        "pyarrow (scripts/setup.sh --test installs it): {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A Parquet file written by the `parquet` crate: `table`, `key`, `f0`, `f1`.
fn crate_file(path: &Path, rows: &[(&str, u64, [f32; 2])]) {
    let column = |i: usize| -> ArrayRef {
        Arc::new(Float32Array::from_iter_values(rows.iter().map(|r| r.2[i])))
    };
    let batch = RecordBatch::try_from_iter([
        (
            "table",
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.0))) as ArrayRef,
        ),
        (
            "key",
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.1))),
        ),
        ("f0", column(0)),
        ("f1", column(1)),
    ])
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// A CSV snapshot of `rows` rows of 64 features, about 1 KB a row.
fn big_csv(path: &Path, rows: u64, seed: u64) {
    let mut text = String::new();
    for key in 0..rows {
        text.push_str(&key.to_string());
        for f in 0..64u64 {
            let v = ((key * 64 + f + seed).wrapping_mul(2_654_435_761) % 1_000_000) as f32 / 7.0;
            text.push_str(&format!(",{v}"));
        }
        text.push('\n');
    }
    std::fs::write(path, text).unwrap();
}

/// Puts `bytes` as snapshot object `object` and a manifest naming it with `sha256`.
fn put_manifest(s3: &S3Proxy, version: u64, object: &str, bytes: Vec<u8>, sha256: &str) {
    let size = bytes.len();
    s3.put(&format!("fleet/{object}"), bytes);
    let manifest = serde_json::json!({
        "format": 1, "version": version, "object": object, "size": size,
        "sha256": sha256, "table": "t", "created_unix_ms": 0,
    });
    s3.put("fleet/latest.json", manifest.to_string().into_bytes());
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn scratch(name: &str) -> ScratchDir {
    scratch_dir(&format!("source-{name}"))
}

#[test]
fn three_daemons_pulling_one_manifest_publish_the_same_version() {
    let s3 = S3Proxy::start("fleet");
    let dir = scratch("fleet");
    let first = dir.join("users.parquet");
    pyarrow_file(&first, &[(1, [1.0, 2.0]), (2, [3.0, 4.0])]);
    assert_eq!(push(&s3, &first, None), 1);

    let secret = edgewise_tests::s3proxy::SECRET_KEY;
    let daemons: Vec<Daemon> = ["a", "b", "c"]
        .iter()
        .map(|name| start(&dir, name, &s3.endpoint(), secret))
        .collect();
    let stores: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| dir.join(n)).collect();
    wait_until(WAIT, || stores.iter().all(|s| version(s) == 1));
    for store in &stores {
        assert_eq!(row(store, "users", 2), Some(vec![3.0, 4.0]));
    }

    // The second snapshot spreads its rows over two tables and drops `users`.
    let second = dir.join("second.parquet");
    crate_file(&second, &[("ads", 7, [0.5, 0.25]), ("geo", 7, [9.0, 8.0])]);
    let pushed = Instant::now();
    assert_eq!(push(&s3, &second, None), 2);
    wait_until(WAIT, || stores.iter().all(|s| version(s) == 2));
    eprintln!("push to three daemons serving: {:?}", pushed.elapsed());
    for store in &stores {
        assert_eq!(row(store, "ads", 7), Some(vec![0.5, 0.25]));
        assert_eq!(row(store, "geo", 7), Some(vec![9.0, 8.0]));
        assert_eq!(row(store, "users", 2), None);
    }
    for daemon in &daemons {
        assert_eq!(metric(daemon, "edgewise_features_source_version"), 2.0);
        assert_eq!(
            metric(daemon, "edgewise_features_source_updates_total"),
            2.0
        );
        wait_until(WAIT, || {
            readiness(daemon).contains("source: manifest version 2")
        });
    }
    // Idle polls are answered 304 and publish nothing.
    let polls = metric(&daemons[0], "edgewise_features_source_polls_total");
    wait_until(WAIT, || {
        metric(&daemons[0], "edgewise_features_source_polls_total") >= polls + 2.0
    });
    assert_eq!(version(&stores[0]), 2);
    assert_eq!(errors(&daemons[0], "unreachable"), 0.0);
}

#[test]
fn a_bad_snapshot_or_manifest_leaves_the_last_good_version_serving() {
    let s3 = S3Proxy::start("refusals");
    let dir = scratch("refusals");
    let good = dir.join("t.csv");
    std::fs::write(&good, "1,1.5\n2,2.5\n").unwrap();
    assert_eq!(push(&s3, &good, None), 1);
    let secret = edgewise_tests::s3proxy::SECRET_KEY;
    let daemon = start(&dir, "d", &s3.endpoint(), secret);
    let store = dir.join("d");
    wait_until(WAIT, || version(&store) == 1);

    // A corrupted object: the bytes differ from the manifest's hash.
    let bytes = b"1,9\n2,9\n".to_vec();
    let mut spoiled = bytes.clone();
    spoiled[2] = b'8';
    put_manifest(&s3, 2, "snapshots/corrupt.csv", spoiled, &sha256(&bytes));
    wait_until(WAIT, || errors(&daemon, "refused") >= 1.0);
    assert!(
        readiness(&daemon).contains("SHA-256"),
        "{}",
        readiness(&daemon)
    );
    // Refused, it is not fetched again: later polls are 304s.
    let downloaded = metric(&daemon, "edgewise_features_source_downloaded_bytes_total");
    let polls = metric(&daemon, "edgewise_features_source_polls_total");
    wait_until(WAIT, || {
        metric(&daemon, "edgewise_features_source_polls_total") >= polls + 2.0
    });
    assert_eq!(
        metric(&daemon, "edgewise_features_source_downloaded_bytes_total"),
        downloaded
    );
    assert_eq!(errors(&daemon, "refused"), 1.0);

    // A manifest naming an object that is not there.
    let manifest = serde_json::json!({
        "format": 1, "version": 3, "object": "snapshots/gone.csv", "size": 8,
        "sha256": sha256(b"gone"), "table": "t",
    });
    s3.put("fleet/latest.json", manifest.to_string().into_bytes());
    wait_until(WAIT, || errors(&daemon, "missing") >= 2.0);
    assert!(readiness(&daemon).contains("(missing)"));

    // An intact object that does not decode: the row and column are named.
    let nan = b"1,1\n2,nan\n".to_vec();
    let hash = sha256(&nan);
    put_manifest(&s3, 4, "snapshots/nan.csv", nan, &hash);
    wait_until(WAIT, || readiness(&daemon).contains("line 2, field 1"));
    // And a manifest that is not one.
    s3.put("fleet/latest.json", b"{\"format\": 1".to_vec());
    wait_until(WAIT, || readiness(&daemon).contains("not a manifest"));

    assert_eq!(version(&store), 1);
    assert_eq!(row(&store, "t", 2), Some(vec![2.5]));

    // Wrong credentials: nothing is published, the daemon is still ready with what it has.
    let denied = start(&dir, "denied", &s3.endpoint(), "not-the-secret");
    wait_until(WAIT, || errors(&denied, "denied") >= 1.0);
    assert!(readiness(&denied).contains("(denied)"));
    assert_eq!(version(&dir.join("denied")), 0);

    // A push does not guess past a manifest it cannot read.
    let next = dir.join("t2.csv");
    std::fs::write(&next, "1,7\n").unwrap();
    let output = Command::new(daemon_bin())
        .args(["snapshot", "push", "--source", "s3://features/fleet"])
        .arg(&next)
        .envs(s3.env())
        .output()
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("fix or delete it"));

    // The next good manifest is taken.
    put_manifest(
        &s3,
        5,
        "snapshots/good.csv",
        b"1,7\n".to_vec(),
        &sha256(b"1,7\n"),
    );
    wait_until(WAIT, || version(&store) == 5);
    assert_eq!(row(&store, "t", 1), Some(vec![7.0]));
    // `/readyz` answers from a round at most a second old.
    wait_until(WAIT, || {
        readiness(&daemon).ends_with("source: manifest version 5")
    });
}

#[test]
fn a_store_killed_or_stalled_mid_download_leaves_the_last_good_version_serving() {
    let mut s3 = S3Proxy::start("faults");
    let dir = scratch("faults");
    // Answers at 4 MB/s: a 16 MB snapshot takes seconds, time to act in the middle.
    let relay = Relay::start(s3.addr(), 4 << 20);
    let small = dir.join("t.csv");
    std::fs::write(&small, "1,1\n").unwrap();
    push(&s3, &small, None);
    let secret = edgewise_tests::s3proxy::SECRET_KEY;
    let daemon = start(&dir, "d", &relay.endpoint(), secret);
    let store = dir.join("d");
    wait_until(WAIT, || version(&store) == 1);

    // Killed mid-download.
    let big = dir.join("big.csv");
    big_csv(&big, 16_000, 1);
    let before = relay.forwarded();
    let v2 = push(&s3, &big, Some("t"));
    wait_until(WAIT, || relay.forwarded() > before + (1 << 20));
    s3.kill();
    wait_until(WAIT, || {
        errors(&daemon, "truncated") + errors(&daemon, "unreachable") >= 1.0
    });
    assert_eq!(version(&store), 1);
    assert_eq!(row(&store, "t", 1), Some(vec![1.0]));
    s3.restart();
    wait_until(Duration::from_secs(60), || version(&store) == v2);
    assert_eq!(row(&store, "t", 15_999).map(|r| r.len()), Some(64));

    // Stalled mid-download: the chunk deadline ends it; continued, the retry succeeds.
    big_csv(&big, 16_000, 2);
    let before = relay.forwarded();
    let unreachable = errors(&daemon, "unreachable");
    let v3 = push(&s3, &big, Some("t"));
    wait_until(WAIT, || relay.forwarded() > before + (1 << 20));
    pause(s3.pid(), true);
    wait_until(WAIT, || errors(&daemon, "unreachable") > unreachable);
    assert_eq!(version(&store), v2);
    assert!(readiness(&daemon).contains("(unreachable)"));
    pause(s3.pid(), false);
    wait_until(Duration::from_secs(60), || version(&store) == v3);
}

/// A store used before the source was configured, or changed since its last manifest, takes
/// the current manifest at start; a restart that finds the store as it left it downloads
/// nothing.
#[test]
fn a_daemon_takes_the_manifest_unless_its_store_still_serves_it() {
    let s3 = S3Proxy::start("restart");
    let dir = scratch("restart");
    let store = dir.join("d");
    // The store, as a daemon without a source left it: version 5.
    let mut writer = edgewise::FeatureWriter::open(&store, Default::default()).unwrap();
    let mut old = edgewise::FeatureTable::new("old");
    old.rows.insert(1, vec![5.0]);
    let snapshot = edgewise::FeatureSnapshot {
        version: 5,
        created_unix_ms: 0,
        tables: vec![old],
    };
    writer.publish(&snapshot).unwrap();
    drop(writer);
    let file = dir.join("t.csv");
    std::fs::write(&file, "1,1.5\n").unwrap();
    assert_eq!(push(&s3, &file, Some("users")), 1);

    let secret = edgewise_tests::s3proxy::SECRET_KEY;
    let daemon = start(&dir, "d", &s3.endpoint(), secret);
    wait_until(WAIT, || row(&store, "users", 1).is_some());
    assert_eq!(version(&store), 6, "published above the store's version");
    assert_eq!(row(&store, "old", 1), None, "the source owns the store");
    // The source counts the publish after the store shows it.
    wait_until(WAIT, || {
        metric(&daemon, "edgewise_features_source_version") == 1.0
    });
    drop(daemon);

    let daemon = start(&dir, "d", &s3.endpoint(), secret);
    wait_until(WAIT, || {
        metric(&daemon, "edgewise_features_source_polls_total") >= 2.0
    });
    assert_eq!(
        metric(&daemon, "edgewise_features_source_updates_total"),
        0.0
    );
    assert_eq!(metric(&daemon, "edgewise_features_source_version"), 1.0);
    assert_eq!(version(&store), 6);
    assert!(readiness(&daemon).contains("source: manifest version 1"));
}
