//! The feature store as `edgewised` publishes it: batches over HTTP, snapshot files in the
//! ingest directory, lookups over HTTP and the memcached-protocol socket, and this process
//! reading the mapped store directly, the way origin apps do.

use std::{
    io::{Read, Write},
    os::unix::net::UnixStream,
    path::{Path, PathBuf},
    thread,
    time::{Duration, Instant},
};

use edgewise::FeatureReader;
use edgewise_tests::{Daemon, http, http_authorized, http_request, sample, wait_until};

const SECRET: &str = "test-secret-0123456789abcdef";
const BEARER: &str = "Bearer test-secret-0123456789abcdef";

struct Setup {
    dir: PathBuf,
}

impl Setup {
    fn new(name: &str) -> Setup {
        let dir =
            std::env::temp_dir().join(format!("edgewise-features-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = format!(
            "[features]\ndir = {:?}\ningest_dir = {:?}\ningest_interval_ms = 20\nsocket = {:?}\n",
            dir.join("store"),
            dir.join("ingest"),
            dir.join("features.sock"),
        );
        std::fs::write(dir.join("edgewised.toml"), config).unwrap();
        Setup { dir }
    }

    fn start(&self) -> Daemon {
        let config = self.dir.join("edgewised.toml");
        Daemon::start_with_env(
            &["--config", config.to_str().unwrap()],
            &[("EDGEWISED_API_SECRET", SECRET)],
        )
    }

    fn store(&self) -> PathBuf {
        self.dir.join("store")
    }

    /// Drops a file into the ingest directory the safe way: written hidden, then renamed.
    fn drop_file(&self, name: &str, bytes: &[u8]) {
        let ingest = self.dir.join("ingest");
        let hidden = ingest.join(format!(".{name}"));
        std::fs::write(&hidden, bytes).unwrap();
        std::fs::rename(hidden, ingest.join(name)).unwrap();
    }
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn put(daemon: &Daemon, body: &str) -> (u16, String) {
    http_request(
        daemon.addr,
        "PUT",
        "/v1/features",
        &[
            ("Authorization", BEARER),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
}

fn get(daemon: &Daemon, table: &str, key: u64) -> (u16, String) {
    http_request(
        daemon.addr,
        "GET",
        &format!("/v1/features/{table}/{key}"),
        &[("Authorization", BEARER)],
        b"",
    )
}

/// What this process reads from the mapped store.
fn read(store: &Path, table: &str, key: u64) -> Option<(u64, Vec<f32>)> {
    let mut reader = FeatureReader::open(store).unwrap();
    let guard = reader.read().unwrap();
    let values = guard.table(table)?.get(key)?.to_vec();
    Some((guard.version(), values))
}

#[test]
fn batches_publish_versions_readers_in_other_processes_see() {
    let setup = Setup::new("put");
    let daemon = setup.start();
    assert_eq!(put(&daemon, "{}").0, 200);
    let unauthenticated = http(daemon.addr, "GET", "/v1/features/user/1");
    assert_eq!(unauthenticated.0, 401);

    let (status, body) = put(
        &daemon,
        r#"{"upserts":[{"table":"user","key":1,"values":[0.5,1.5]},{"table":"user","key":2,"values":[2,3]}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    let published: serde_json::Value = serde_json::from_str(&body).unwrap();
    let version = published["version"].as_u64().unwrap();
    assert_eq!(published["keys"], 2);
    assert_eq!(
        read(&setup.store(), "user", 1),
        Some((version, vec![0.5, 1.5]))
    );
    let (status, row) = get(&daemon, "user", 2);
    assert_eq!(status, 200);
    assert_eq!(
        row,
        format!(r#"{{"table":"user","key":2,"version":{version},"values":[2.0,3.0]}}"#)
    );
    assert_eq!(get(&daemon, "user", 3).0, 404);
    assert_eq!(get(&daemon, "nope", 1).0, 404);
    assert_eq!(get(&daemon, "user", 0).0, 404);
    assert_eq!(
        http_request(
            daemon.addr,
            "GET",
            "/v1/features/user/x",
            &[("Authorization", BEARER)],
            b""
        )
        .0,
        400
    );

    // Invalid batches publish nothing.
    for bad in [
        r#"{"upserts":[{"table":"user","key":3,"values":[1]}]}"#,
        r#"{"upserts":[{"table":"user","key":3,"values":[]}]}"#,
        r#"{"upserts":[{"table":"a b","key":3,"values":[1,2]}]}"#,
        r#"{"upserts":[{"table":"user","key":-3,"values":[1,2]}]}"#,
        r#"{"upserts":[{"table":"user","key":3,"values":[1,2],"extra":1}]}"#,
        "not json",
    ] {
        let (status, reason) = put(&daemon, bad);
        assert_eq!(status, 400, "{bad}: {reason}");
        assert!(reason.contains("error"), "{reason}");
    }
    assert_eq!(read(&setup.store(), "user", 1).unwrap().0, version);

    let (status, body) = put(&daemon, r#"{"deletes":[{"table":"user","key":1}]}"#);
    assert_eq!(status, 200, "{body}");
    assert_eq!(read(&setup.store(), "user", 1), None);
    let (_, metrics) = http_authorized(daemon.addr, "/metrics");
    assert!(metrics.contains("edgewise_features_keys 1"), "{metrics}");
    assert!(
        metrics.contains("edgewise_features_refused_total 3"),
        "{metrics}"
    );
}

/// The secret is checked before the body is read: an unauthenticated upload is refused at its
/// headers, not after up to 16 MiB held in memory (the daemon used to wait for the body).
#[test]
fn the_store_keeps_its_modes_under_any_umask() {
    use std::os::unix::fs::PermissionsExt;
    for umask in ["077", "000"] {
        let setup = Setup::new(&format!("umask-{umask}"));
        let config = setup.dir.join("edgewised.toml");
        let args = ["--config", config.to_str().unwrap()];
        let daemon = Daemon::start_with_umask(&args, &[("EDGEWISED_API_SECRET", SECRET)], umask);
        for version in 1..=2 {
            let body = format!(r#"{{"upserts":[{{"table":"t","key":1,"values":[{version}]}}]}}"#);
            assert_eq!(put(&daemon, &body).0, 200);
        }
        assert!(read(&setup.store(), "t", 1).is_some());
        let store = setup.store();
        for (name, expected) in [
            ("", 0o750),
            ("readers", 0o1770),
            ("state", 0o660),
            ("data_0", 0o640),
            ("data_1", 0o640),
        ] {
            let mode = std::fs::metadata(store.join(name))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o7777, expected, "{name:?} under umask {umask}");
        }
    }
}

#[test]
fn a_damaged_published_file_is_found_and_published_again() {
    let setup = Setup::new("verify");
    let config = setup.dir.join("edgewised.toml");
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--set",
        "features.verify_interval_secs=1",
    ];
    let mut daemon = Daemon::start_with_env(&args, &[("EDGEWISED_API_SECRET", SECRET)]);
    let body = r#"{"upserts":[{"table":"t","key":1,"values":[1,2,3,4]}]}"#;
    assert_eq!(put(&daemon, body).0, 200);
    let (version, values) = read(&setup.store(), "t", 1).unwrap();
    assert_eq!(values, vec![1.0, 2.0, 3.0, 4.0]);
    // Both copies damaged behind the daemon's back, past their headers.
    for copy in ["data_0", "data_1"] {
        let path = setup.store().join(copy);
        let mut bytes = std::fs::read(&path).unwrap();
        for byte in &mut bytes[64..200] {
            *byte ^= 0x5a;
        }
        std::fs::write(&path, &bytes).unwrap();
    }
    daemon.wait_for_log("publishing the snapshot again", Duration::from_secs(10));
    // Until the publish lands, a new reader may find the damaged version (names included).
    wait_until(Duration::from_secs(5), || {
        let Ok(mut reader) = FeatureReader::open(&setup.store()) else {
            return false;
        };
        reader.read().is_ok_and(|guard| guard.version() > version)
    });
    let (_, values) = read(&setup.store(), "t", 1).unwrap();
    assert_eq!(values, vec![1.0, 2.0, 3.0, 4.0]);
    let (_, page) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(sample(&page, "edgewise_features_damaged_total"), Some(1.0));
}

#[test]
fn an_unauthenticated_upload_is_refused_before_its_body() {
    let setup = Setup::new("unauthenticated");
    let daemon = setup.start();
    let mut stream = std::net::TcpStream::connect(daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let head = "PUT /v1/features HTTP/1.1\r\nHost: x\r\nContent-Length: 16000000\r\n\r\n";
    stream.write_all(head.as_bytes()).unwrap();
    let mut status = [0u8; 12];
    stream
        .read_exact(&mut status)
        .expect("no answer before the body");
    assert_eq!(&status, b"HTTP/1.1 401");
}

#[test]
fn snapshot_files_are_ingested_or_rejected_with_a_reason() {
    let setup = Setup::new("ingest");
    let daemon = setup.start();
    setup.drop_file("ip.csv", b"key,f0,f1,f2\n10,1,2,3\n11,4,5,6\n");
    wait_until(Duration::from_secs(10), || {
        read(&setup.store(), "ip", 11).is_some()
    });
    assert_eq!(read(&setup.store(), "ip", 10).unwrap().1, [1.0, 2.0, 3.0]);
    let version = read(&setup.store(), "ip", 10).unwrap().0;
    let done = || {
        std::fs::read_dir(setup.dir.join("ingest/done"))
            .unwrap()
            .count()
    };
    wait_until(Duration::from_secs(10), || done() == 1);

    setup.drop_file("ip.csv", b"10,1,2,3\n11,4,5\n");
    let error_file = setup.dir.join("ingest/rejected/ip.csv.error");
    wait_until(Duration::from_secs(10), || error_file.exists());
    let reason = std::fs::read_to_string(error_file).unwrap();
    assert!(reason.contains("line 2"), "{reason}");
    assert_eq!(
        read(&setup.store(), "ip", 10).unwrap().0,
        version,
        "the last good version serves"
    );

    // The native archive replaces everything.
    let mut snapshot = edgewise::FeatureSnapshot::default();
    snapshot.table_mut("model").rows.insert(7, vec![0.25; 64]);
    setup.drop_file("all.ewfs", &snapshot.to_archive().unwrap());
    wait_until(Duration::from_secs(10), || {
        read(&setup.store(), "model", 7).is_some()
    });
    assert_eq!(read(&setup.store(), "ip", 10), None);
    drop(daemon);
}

/// Whoever can write the ingest directory can point the daemon at nothing else: a hard link to
/// a file outside it is rejected unread, and its `.error` says so without a byte of the file.
#[test]
fn a_hard_link_to_a_secret_is_rejected_unread() {
    let setup = Setup::new("hardlink");
    let mut daemon = setup.start();
    let secret = setup.dir.join("secret.csv");
    std::fs::write(&secret, "7,0.123456\n").unwrap();
    let ingest = setup.dir.join("ingest");
    wait_until(Duration::from_secs(10), || ingest.join("rejected").exists());
    std::fs::hard_link(&secret, ingest.join("stolen.csv")).unwrap();
    let logged = daemon.wait_for_log("rejected", Duration::from_secs(10));
    assert!(logged.contains("hard link"), "{logged}");
    let error_file = ingest.join("rejected/stolen.csv.error");
    wait_until(Duration::from_secs(10), || error_file.exists());
    let reason = std::fs::read_to_string(&error_file).unwrap();
    assert!(reason.contains("hard link"), "{reason}");
    assert_eq!(read(&setup.store(), "stolen", 7), None);
    daemon.signal("TERM");
    let (_, log) = daemon.wait(Duration::from_secs(20));
    assert!(!log.join("\n").contains("0.123456"));
}

#[test]
fn the_socket_speaks_memcached_and_a_restart_resumes() {
    let setup = Setup::new("socket");
    let daemon = setup.start();
    let (status, _) = put(
        &daemon,
        r#"{"upserts":[{"table":"user","key":42,"values":[1.0,-2.0]}]}"#,
    );
    assert_eq!(status, 200);

    let mut socket = UnixStream::connect(setup.dir.join("features.sock")).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    socket.write_all(b"get user:42 user:43\r\n").unwrap();
    let mut expected = b"VALUE user:42 0 8\r\n".to_vec();
    expected.extend_from_slice(&1.0f32.to_le_bytes());
    expected.extend_from_slice(&(-2.0f32).to_le_bytes());
    expected.extend_from_slice(b"\r\nEND\r\n");
    let mut reply = vec![0; expected.len()];
    socket.read_exact(&mut reply).unwrap();
    assert_eq!(reply, expected);

    let version = read(&setup.store(), "user", 42).unwrap().0;
    drop(socket);
    drop(daemon);
    let daemon = setup.start();
    assert_eq!(
        read(&setup.store(), "user", 42).unwrap().0,
        version,
        "still served after the restart"
    );
    let (status, body) = put(
        &daemon,
        r#"{"upserts":[{"table":"user","key":43,"values":[3,4]}]}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (_, row) = get(&daemon, "user", 42);
    assert!(
        row.contains(r#""values":[1.0,-2.0]"#),
        "earlier rows survive the restart: {row}"
    );
    assert!(read(&setup.store(), "user", 43).unwrap().0 > version);
}

/// A restart over a store whose current data file is damaged (cut short, or a flipped byte)
/// resumes from the version before it, which the other copy holds, and publishes it again for
/// readers. The daemon refused to start ("reading the last published features"), and under
/// systemd restarted in a loop, with the previous version intact beside it.
#[test]
fn a_restart_over_a_damaged_current_version_resumes_from_the_one_before() {
    for damage in ["truncate", "flip"] {
        let setup = Setup::new(&format!("damaged-{damage}"));
        let daemon = setup.start();
        let put_row = |daemon: &Daemon, key: u64| {
            let body =
                format!(r#"{{"upserts":[{{"table":"user","key":{key},"values":[{key}]}}]}}"#);
            assert_eq!(put(daemon, &body).0, 200);
        };
        put_row(&daemon, 1);
        put_row(&daemon, 2);
        let before_last = read(&setup.store(), "user", 1).unwrap().0;
        put_row(&daemon, 3);
        drop(daemon);
        // The current version is in the copy whose header names the later generation.
        let generation = |copy: &str| {
            let bytes = std::fs::read(setup.store().join(copy)).unwrap();
            u64::from_le_bytes(bytes[8..16].try_into().unwrap())
        };
        let current = ["data_0", "data_1"]
            .into_iter()
            .max_by_key(|c| generation(c))
            .unwrap();
        let path = setup.store().join(current);
        match damage {
            "truncate" => std::fs::write(&path, b"").unwrap(),
            _ => {
                // Within the archive (the header gives its length): the file may be longer.
                let mut bytes = std::fs::read(&path).unwrap();
                let len = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
                bytes[64 + len / 2] ^= 0x40;
                std::fs::write(&path, bytes).unwrap();
            }
        }

        let daemon = setup.start();
        let (status, row) = get(&daemon, "user", 2);
        assert_eq!(status, 200, "{damage}: {row}");
        assert_eq!(
            get(&daemon, "user", 3).0,
            404,
            "{damage}: lost with its version"
        );
        let (version, values) = read(&setup.store(), "user", 2).unwrap();
        assert!(
            version > before_last + 1,
            "{damage}: published again as {version}"
        );
        assert_eq!(values, [2.0]);
        put_row(&daemon, 4);
        assert_eq!(read(&setup.store(), "user", 4).unwrap().1, [4.0]);
    }
}

#[test]
fn shutdown_finishes_a_publish_in_progress() {
    let setup = Setup::new("shutdown");
    let mut daemon = setup.start();
    // Big enough that parsing and publishing it take a while in a debug build.
    let mut csv = String::new();
    for key in 1..=200_000u64 {
        csv.push_str(&format!("{key},{key}.5,1,2,3,4,5,6,7\n"));
    }
    setup.drop_file("big.csv", csv.as_bytes());
    daemon.wait_for_log("ingesting a feature snapshot file", Duration::from_secs(20));
    daemon.signal("TERM");
    let (status, log) = daemon.wait(Duration::from_secs(60));
    assert!(status.success(), "{status}; log:\n{}", log.join("\n"));
    let published = log
        .iter()
        .position(|l| l.contains("feature snapshot file published"));
    let stopped = log.iter().position(|l| l.contains("stopped"));
    assert!(
        matches!((published, stopped), (Some(p), Some(s)) if p < s),
        "the publish must finish before the daemon stops:\n{}",
        log.join("\n")
    );
    let (_, values) = read(&setup.store(), "big", 200_000).unwrap();
    assert_eq!(values, [200_000.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    // Filed away, so a restart does not ingest it again.
    assert!(!setup.dir.join("ingest/big.csv").exists());
}

/// A good file the store fails to publish stays in the ingest directory and goes out once the
/// store works again. It was filed as rejected, beside an error, while its change stayed in
/// memory and went out with the next publish.
#[test]
fn a_file_the_store_fails_to_publish_is_tried_again_not_rejected() {
    let setup = Setup::new("retry");
    let daemon = setup.start();
    // The next version goes to copy 0, written aside as data_0.tmp when data_0 is missing.
    let _ = std::fs::remove_file(setup.store().join("data_0"));
    let blocker = setup.store().join("data_0.tmp");
    std::fs::create_dir(&blocker).unwrap();
    setup.drop_file("users.csv", b"1,0.5\n");
    let failed = || {
        let page = http_authorized(daemon.addr, "/metrics").1;
        page.lines()
            .any(|l| l.starts_with("edgewise_features_publish_errors_total ") && !l.ends_with(" 0"))
    };
    wait_until(Duration::from_secs(10), failed);
    assert!(!setup.dir.join("ingest/rejected/users.csv").exists());
    assert!(setup.dir.join("ingest/users.csv").exists());
    assert_eq!(read(&setup.store(), "users", 1), None);

    std::fs::remove_dir(&blocker).unwrap();
    wait_until(Duration::from_secs(10), || {
        read(&setup.store(), "users", 1).is_some_and(|(_, v)| v == [0.5])
    });
    let done = setup.dir.join("ingest/done");
    wait_until(Duration::from_secs(10), || {
        std::fs::read_dir(&done).unwrap().any(|e| {
            let name = e.unwrap().file_name();
            name.to_string_lossy().starts_with("users.csv.v")
        })
    });
}

/// The socket serves at most `features.socket_max_connections` at once: the client over the
/// cap waits until another closes (each connection held a task and a descriptor, without end).
#[test]
fn the_socket_caps_its_connections() {
    let setup = Setup::new("socket-cap");
    let config = setup.dir.join("edgewised.toml");
    let daemon = Daemon::start_with_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--set",
            "features.socket_max_connections=1",
        ],
        &[("EDGEWISED_API_SECRET", SECRET)],
    );
    let path = setup.dir.join("features.sock");
    let version = |socket: &mut UnixStream, wait: Duration| {
        socket.set_read_timeout(Some(wait)).unwrap();
        socket.write_all(b"version\r\n").unwrap();
        let mut reply = [0u8; 8];
        matches!(socket.read(&mut reply), Ok(n) if reply[..n].starts_with(b"VERSION"))
    };
    let mut first = UnixStream::connect(&path).unwrap();
    assert!(version(&mut first, Duration::from_secs(5)));
    let mut second = UnixStream::connect(&path).unwrap();
    assert!(!version(&mut second, Duration::from_millis(500)));
    drop(first);
    let mut reply = [0u8; 8];
    second
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let n = second.read(&mut reply).unwrap();
    assert!(reply[..n].starts_with(b"VERSION"), "{:?}", &reply[..n]);
    drop(second);

    let (status, page) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(status, 200);
    assert_eq!(
        sample(&page, "edgewise_features_socket_connections_max"),
        Some(1.0)
    );
    let full = sample(&page, "edgewise_features_socket_connections_full_total");
    assert!(full >= Some(1.0), "{page}");
}

/// A file that is not a socket at `features.socket` stops the start and is left alone: it was
/// removed whatever it was (a typo there deleted that file).
#[test]
fn the_socket_path_never_removes_another_file() {
    let setup = Setup::new("socket-path");
    let precious = setup.dir.join("features.sock");
    std::fs::write(&precious, "not a socket").unwrap();
    let config = setup.dir.join("edgewised.toml");
    let mut child = std::process::Command::new(edgewise_tests::daemon_bin())
        .args([
            "--config",
            config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .env("EDGEWISED_API_SECRET", SECRET)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // It used to start (and serve on): stopped after a while, it fails below.
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("is not a socket"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "not a socket");
}

/// A store on a full file system refuses the publish with an error; the daemon stays up and
/// the last version keeps serving. Its data files were sparse and written through a mapping,
/// and the page that found no block raised SIGBUS: the daemon died (exit 135) mid-request.
/// Needs a 1 MiB tmpfs, so root; skipped (with a line saying so) elsewhere.
#[test]
fn a_full_file_system_fails_the_publish_not_the_daemon() {
    let setup = Setup::new("enospc");
    let store = setup.store();
    std::fs::create_dir_all(&store).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&store)
        .output()
        .is_ok_and(|o| o.status.success());
    if !mounted {
        eprintln!("skipped: cannot mount a 1 MiB tmpfs here (not root?)");
        return;
    }
    let _unmount = Unmount(store.clone());
    let daemon = setup.start();
    let small = r#"{"upserts":[{"table":"t","key":1,"values":[1]}]}"#;
    let (status, body) = put(&daemon, small);
    assert_eq!(status, 200, "{body}");
    // ~1.2 MB of floats: more than the file system holds.
    let row = vec!["0.5"; 512].join(",");
    let upserts: Vec<String> = (0..600)
        .map(|k| format!(r#"{{"table":"big","key":{k},"values":[{row}]}}"#))
        .collect();
    let (status, body) = put(
        &daemon,
        &format!(r#"{{"upserts":[{}]}}"#, upserts.join(",")),
    );
    assert!(status >= 500, "{status} {body}");
    assert!(body.contains("No space left"), "{body}");
    assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);
    let (status, row) = get(&daemon, "t", 1);
    assert_eq!(status, 200, "{row}");
}

/// Unmounts a test's tmpfs, whatever the test's outcome.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}
