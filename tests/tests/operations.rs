//! Operating the real `edgewised`: readiness, per-endpoint metrics, request deadlines, and
//! settings given without a config file.

use std::{
    io::{Read, Write},
    net::TcpStream,
    process::Command,
    time::{Duration, Instant},
};

use edgewise_tests::{
    Daemon, Memcached, SECRET, daemon_bin, http, http_authorized, http_request, sample,
};

#[test]
fn readyz_reports_each_dependency_and_follows_memcached() {
    let mut memcached = Memcached::start(&[]);
    let daemon = Daemon::start_with_secret(&["--memcached", &memcached.addr()]);
    let (status, body) = http_authorized(daemon.addr, "/readyz");
    assert_eq!(status, 200, "{body}");
    for expected in [
        r#""status":"ready""#,
        r#""tokens":{"ok":true"#,
        "up",
        r#""hosts":{"ok":true,"detail":"not configured"}"#,
        r#""serving":{"ok":true"#,
    ] {
        assert!(body.contains(expected), "{expected} in {body}");
    }

    memcached.kill();
    let (status, body) = readyz_until(&daemon, 503);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""status":"not ready""#), "{body}");
    assert!(body.contains(r#""tokens":{"ok":false"#), "{body}");
    assert!(body.contains("down"), "{body}");
    // Alive all the same: liveness must not restart a daemon whose memcached is away.
    assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);

    memcached.restart();
    let (status, body) = readyz_until(&daemon, 200);
    assert_eq!(status, 200, "{body}");
}

/// `/readyz` polled until it answers `status` (it reuses a round of checks for a second), or
/// its last answer after five seconds.
fn readyz_until(daemon: &Daemon, status: u16) -> (u16, String) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let answer = http_authorized(daemon.addr, "/readyz");
        if answer.0 == status || Instant::now() > deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn readyz_probes_share_their_memcached_checks() {
    let memcached = Memcached::start(&[]);
    let daemon = Daemon::start(&["--memcached", &memcached.addr()]);
    assert_eq!(http(daemon.addr, "GET", "/readyz").0, 200);
    // Past that round's reuse: the probes below need a new one, and start it together.
    std::thread::sleep(Duration::from_millis(1100));
    let before = memcached.stat("total_connections");
    let probes: Vec<_> = (0..64)
        .map(|_| std::thread::spawn(move || http(daemon.addr, "GET", "/readyz").0))
        .collect();
    for probe in probes {
        assert_eq!(probe.join().unwrap(), 200);
    }
    // Each round of checks opens one connection; the stats poller may open one more, and this
    // read is counted too. Each probe opened its own before: 64 more.
    let opened = memcached.stat("total_connections") - before;
    assert!(
        opened <= 4,
        "64 probes opened {opened} connections to memcached"
    );
}

/// The API listens where workers reach it, on the internet: without the bearer secret,
/// `/metrics` is refused and `/readyz` says ready or not, without naming servers or errors.
#[test]
fn metrics_and_readiness_details_need_the_secret() {
    let memcached = Memcached::start(&[]);
    let daemon = Daemon::start_with_secret(&["--memcached", &memcached.addr()]);
    assert_eq!(http(daemon.addr, "GET", "/metrics").0, 401);
    let (status, body) = http(daemon.addr, "GET", "/readyz");
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ready"}"#));
    let (status, body) = http_authorized(daemon.addr, "/readyz");
    assert_eq!(status, 200);
    assert!(body.contains(&memcached.addr()), "{body}");
    assert_eq!(http_authorized(daemon.addr, "/metrics").0, 200);
    assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);
}

#[test]
fn readyz_with_the_embedded_store_is_ready() {
    let daemon = Daemon::start_with_secret(&[]);
    let (status, body) = http_authorized(daemon.addr, "/readyz");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("embedded store"), "{body}");
}

#[test]
fn metrics_count_requests_per_endpoint_and_status_class() {
    let daemon = Daemon::start_with_secret(&[]);
    for _ in 0..3 {
        assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);
    }
    assert_eq!(http(daemon.addr, "GET", "/v1/hosts").0, 401);
    assert_eq!(http(daemon.addr, "GET", "/no/such/route").0, 404);
    assert_eq!(http(daemon.addr, "DELETE", "/readyz").0, 405);
    let (status, page) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(status, 200);
    let count = |endpoint: &str, code: &str| {
        let series =
            format!(r#"edgewise_http_requests_total{{endpoint="{endpoint}",code="{code}"}}"#);
        sample(&page, &series).unwrap_or_else(|| panic!("{series} missing:\n{page}"))
    };
    assert_eq!(count("/healthz", "2xx"), 3.0);
    assert_eq!(count("/v1/hosts", "4xx"), 1.0);
    assert_eq!(count("/readyz", "4xx"), 1.0);
    assert_eq!(count("other", "4xx"), 1.0);
    assert_eq!(count("/v1/tokens/redeem", "2xx"), 0.0);
    let latency = r#"edgewise_http_request_duration_seconds_count{endpoint="/healthz"}"#;
    assert_eq!(sample(&page, latency), Some(3.0), "{page}");
    let bucket = r#"edgewise_http_request_duration_seconds_bucket{endpoint="/healthz",le="+Inf"}"#;
    assert_eq!(sample(&page, bucket), Some(3.0), "{page}");
    // The scrape itself is in flight while the page is rendered.
    assert_eq!(sample(&page, "edgewise_http_requests_in_flight"), Some(1.0));
}

#[test]
fn a_request_trickling_its_body_is_cut_off_with_408() {
    let secret = SECRET;
    let daemon = Daemon::start_with_env(
        &["--set", "server.request_timeout_ms=300"],
        &[("EDGEWISED_API_SECRET", secret)],
    );
    let mut stream = TcpStream::connect(daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    // Authenticated (a request without the secret is refused before its body), promises 100
    // bytes, sends 10 and stalls.
    let head = format!(
        "POST /v1/tokens/redeem HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\nContent-Length: 100\r\n\r\n{{\"token_ty"
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut response = Vec::new();
    // The daemon answers and closes the connection: read_to_end returns.
    stream.read_to_end(&mut response).unwrap();
    let elapsed = started.elapsed();
    let text = String::from_utf8_lossy(&response);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(
        text.to_ascii_lowercase().contains("connection: close"),
        "{text}"
    );
    assert!(elapsed >= Duration::from_millis(250), "{elapsed:?}");

    let (_, page) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(
        sample(&page, "edgewise_http_request_timeouts_total"),
        Some(1.0),
        "{page}"
    );
    // A prompt request on a new connection is unaffected.
    let (status, _) = http_request(daemon.addr, "GET", "/healthz", &[], b"");
    assert_eq!(status, 200);
}

/// A client trickling its header lines is cut off once `header_timeout_ms` passes, and a
/// stopping daemon does not wait on it: the deadline started only once the headers were in,
/// so such a connection stayed open as long as the client kept sending, and one held a SIGTERM
/// for the whole grace period.
#[test]
fn a_client_trickling_its_headers_is_cut_off() {
    let daemon = Daemon::start(&[
        "--set",
        "server.header_timeout_ms=300",
        "--set",
        "server.shutdown_grace_secs=20",
    ]);
    let mut stream = TcpStream::connect(daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(50)))
        .unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let started = Instant::now();
    let closed = loop {
        if started.elapsed() > Duration::from_secs(5) {
            break false;
        }
        // A header line every 100 ms, never the blank line that ends them.
        if stream.write_all(b"X-Slow: 1\r\n").is_err() {
            break true;
        }
        let mut byte = [0u8; 1];
        match stream.read(&mut byte) {
            Ok(0) => break true,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(closed, "a trickling client still connected after 5 s");

    let mut half = TcpStream::connect(daemon.addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    daemon.signal("TERM");
    let stopping = Instant::now();
    let (status, _) = daemon.wait(Duration::from_secs(15));
    assert!(status.success(), "{status}");
    assert!(
        stopping.elapsed() < Duration::from_secs(15),
        "a half-sent request held the stop"
    );
}

/// Whether `stream` gets an answer's first bytes within `wait`.
fn answered_within(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut head = [0u8; 12];
    matches!(stream.read(&mut head), Ok(n) if n > 0 && head.starts_with(b"HTTP/1.1 200"))
}

/// Past `server.max_connections` the daemon stops accepting: a client opening connections
/// without end could run it out of file descriptors. The client over the cap waits in the
/// backlog until a connection closes, by its client or by the idle timeout
/// (`header_timeout_ms`).
#[test]
fn connections_past_the_cap_wait_for_one_to_close() {
    let daemon = Daemon::start_with_secret(&[
        "--set",
        "server.max_connections=2",
        "--set",
        "server.header_timeout_ms=1500",
    ]);
    let get = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    let idle = || TcpStream::connect(daemon.addr).unwrap();
    let (first, _second) = (idle(), idle());
    std::thread::sleep(Duration::from_millis(100));
    let mut third = TcpStream::connect(daemon.addr).unwrap();
    third.write_all(get).unwrap();
    assert!(!answered_within(&mut third, Duration::from_millis(500)));
    drop(first);
    assert!(answered_within(&mut third, Duration::from_secs(5)));

    // Two idle connections again, left open: the idle timeout frees their slots.
    let (_a, _b) = (idle(), idle());
    std::thread::sleep(Duration::from_millis(100));
    let mut waiting = TcpStream::connect(daemon.addr).unwrap();
    waiting.write_all(get).unwrap();
    let started = Instant::now();
    assert!(answered_within(&mut waiting, Duration::from_secs(10)));
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "answered before a slot freed"
    );
    drop((third, waiting));

    let (status, page) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(status, 200);
    assert_eq!(
        sample(&page, "edgewise_http_connections_max"),
        Some(2.0),
        "{page}"
    );
    let full = sample(&page, "edgewise_http_connections_full_total").unwrap_or(0.0);
    assert!(full >= 2.0, "{page}");
    let open = sample(&page, "edgewise_http_connections_open").unwrap_or(0.0);
    assert!((1.0..=2.0).contains(&open), "{page}");
}

#[test]
fn any_setting_can_come_from_the_environment_or_set() {
    let dir = std::env::temp_dir().join(format!("edgewise-ops-set-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("edgewised.toml");
    std::fs::write(&path, "[tokens.memcached]\ntimeout_ms = 80\n").unwrap();
    let check = |env: &[(&str, &str)], args: &[&str]| {
        Command::new(daemon_bin())
            .arg("check-config")
            .arg(&path)
            .args(args)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let out = check(
        &[("EDGEWISED__TOKENS__MEMCACHED__TIMEOUT_MS", "55")],
        &["--set", "workspace.verify_one_in=7"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("timeout_ms: 55"), "{stdout}");
    assert!(stdout.contains("verify_one_in: 7"), "{stdout}");

    let out = check(&[("EDGEWISED__SERVER__LISEN", "1")], &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("lisen"), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}
