//! The real `edgewised` binary: start, serve, shut down.

use std::{
    io::{Read, Write},
    process::Command,
    time::Duration,
};

use edgewise_tests::{Daemon, daemon_bin, http, http_request, sample, scratch_dir, wait_until};

const EXIT_WAIT: Duration = Duration::from_secs(20);

#[test]
fn serves_healthz_and_exits_cleanly_on_sigterm() {
    let mut daemon = Daemon::start(&[]);
    let (status, body) = http(daemon.addr, "GET", "/healthz");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""status":"ok""#), "{body}");

    daemon.signal("TERM");
    daemon.wait_for_log("SIGTERM received", EXIT_WAIT);
    let (status, log) = daemon.wait(EXIT_WAIT);
    assert!(
        status.success(),
        "exit status {status}; log:\n{}",
        log.join("\n")
    );
    assert!(log.iter().any(|l| l.contains("stopped")), "{log:?}");
}

#[test]
fn exits_cleanly_on_sigint() {
    let daemon = Daemon::start(&[]);
    daemon.signal("INT");
    let (status, log) = daemon.wait(EXIT_WAIT);
    assert!(
        status.success(),
        "exit status {status}; log:\n{}",
        log.join("\n")
    );
    assert!(log.iter().any(|l| l.contains("SIGINT received")), "{log:?}");
}

#[test]
fn unknown_routes_are_404_and_wrong_methods_405() {
    let daemon = Daemon::start(&[]);
    assert_eq!(http(daemon.addr, "GET", "/nope").0, 404);
    assert_eq!(http(daemon.addr, "POST", "/healthz").0, 405);
}

#[test]
fn reads_a_config_file_and_flags_override_it() {
    let dir = scratch_dir("config");
    let path = dir.join("edgewised.toml");
    // The file asks for JSON logs on a fixed port; the flags Daemon::start passes (text logs,
    // port 0) must win, or the daemon would not be found listening.
    std::fs::write(
        &path,
        "[server]\nlisten = \"127.0.0.1:1\"\n[log]\nformat = \"json\"\n",
    )
    .unwrap();
    let daemon = Daemon::start(&["--config", path.to_str().unwrap()]);
    assert_ne!(daemon.addr.port(), 1);
    assert_eq!(http(daemon.addr, "GET", "/healthz").0, 200);
}

#[test]
fn bad_config_fails_fast_with_a_clear_error() {
    let dir = scratch_dir("bad-config");
    let path = dir.join("edgewised.toml");
    std::fs::write(&path, "[server]\nlisen = \"127.0.0.1:0\"\n").unwrap();
    let out = Command::new(daemon_bin())
        .args(["--config", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("parsing config file"), "{stderr}");
    assert!(stderr.contains("lisen"), "{stderr}");
}

#[test]
fn check_config_validates_without_serving() {
    let dir = scratch_dir("check-config");
    let good = dir.join("good.toml");
    std::fs::write(&good, "[server]\nshutdown_grace_secs = 2\n").unwrap();
    let out = Command::new(daemon_bin())
        .args(["check-config", good.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("shutdown_grace_secs: 2"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));

    // Plain HTTP off this machine: refused unless allowed, and then warned about.
    let public = dir.join("public.toml");
    std::fs::write(&public, "[server]\nlisten = \"0.0.0.0:7878\"\n").unwrap();
    let out = Command::new(daemon_bin())
        .args(["check-config", public.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("[server.tls]"), "{stderr}");
    let out = Command::new(daemon_bin())
        .args(["check-config", public.to_str().unwrap()])
        .args(["--set", "server.allow_plain_http=true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the API listens in plain HTTP on 0.0.0.0:7878"),
        "{stderr}"
    );

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[log]\nformat = \"xml\"\n").unwrap();
    let out = Command::new(daemon_bin())
        .args(["check-config", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("xml"));

    // What serve refuses, the check refuses: it passed these, and the unit's ExecStart then
    // failed, restarted by systemd in a loop.
    let filter = dir.join("filter.toml");
    std::fs::write(&filter, "[log]\nfilter = \"edgewise_daemon=verbose\"\n").unwrap();
    let unreadable = dir.join("missing-secret.toml");
    let secret = dir.join("no-such-secret");
    std::fs::write(&unreadable, format!("[api]\nsecret_file = {secret:?}\n")).unwrap();
    let short = dir.join("short-secret");
    std::fs::write(&short, "abc12\n").unwrap();
    let short_config = dir.join("short.toml");
    std::fs::write(&short_config, format!("[api]\nsecret_file = {short:?}\n")).unwrap();
    for (config, reason) in [
        (&filter, "invalid log filter"),
        (&unreadable, "no-such-secret"),
        (&short_config, "at least 16 characters"),
    ] {
        let out = Command::new(daemon_bin())
            .args(["check-config", config.to_str().unwrap()])
            .env_remove("EDGEWISED_API_SECRET")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{config:?} passed");
        assert!(stderr.contains(reason), "{stderr}");
    }
}

/// A variable that is not UTF-8 elsewhere in the environment is none of the daemon's business:
/// `std::env::vars` panicked on it at start. One of its own is refused by name.
#[test]
fn a_non_utf8_environment_is_read_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch_dir("non-utf8");
    let config = dir.join("edgewised.toml");
    std::fs::write(&config, "").unwrap();
    let latin1 = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let check = |name: &str| {
        Command::new(daemon_bin())
            .args(["check-config", config.to_str().unwrap()])
            .env(name, latin1)
            .output()
            .unwrap()
    };
    let out = check("SOME_UNRELATED");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = check("EDGEWISED__LOG__FILTER");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("EDGEWISED__LOG__FILTER is not UTF-8"),
        "{stderr}"
    );
}

#[test]
fn listen_conflict_is_reported() {
    let first = Daemon::start(&[]);
    let taken = first.addr.to_string();
    let out = Command::new(daemon_bin())
        .args(["--listen", &taken])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("binding {taken}")), "{stderr}");
}

#[test]
fn help_lists_the_flags_and_the_subcommand() {
    let out = Command::new(daemon_bin()).arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "check-config",
        "--config",
        "--set <KEY=VALUE>",
        "--listen",
        "--memcached",
        "--hosts-file",
        "--features-dir",
        "EDGEWISED_LISTEN",
    ] {
        assert!(help.contains(expected), "{expected} missing from:\n{help}");
    }
}

#[test]
fn sigterm_lets_an_in_flight_request_finish() {
    // Authenticated: a request without the secret is answered 401 from its headers and its
    // connection closed, so it was never in flight, and writing the rest of its body raced the
    // reset of that close (a broken pipe in CI).
    let secret = "in-flight-secret-0123456789abcdef";
    let mut daemon = Daemon::start_with_env(&[], &[("EDGEWISED_API_SECRET", secret)]);
    let mut stream = std::net::TcpStream::connect(daemon.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let hex = "ab".repeat(32);
    let body = format!(r#"{{"token_type":2,"token_key_id":"{hex}","nonce":"{hex}"}}"#);
    let body = body.as_bytes();
    let head = format!(
        "POST /v1/tokens/redeem HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..10]).unwrap();
    // The request is in flight (its body half sent) when the signal arrives: waited for, as a
    // daemon yet to read it closes the connection on the signal.
    let in_flight = || {
        let bearer = format!("Bearer {secret}");
        let (_, page) = http_request(
            daemon.addr,
            "GET",
            "/metrics",
            &[("Authorization", &bearer)],
            b"",
        );
        // The scrape counts itself.
        sample(&page, "edgewise_http_requests_in_flight") == Some(2.0)
    };
    wait_until(EXIT_WAIT, in_flight);
    daemon.signal("TERM");
    daemon.wait_for_log("SIGTERM received", EXIT_WAIT);
    std::thread::sleep(Duration::from_millis(200));
    stream.write_all(&body[10..]).unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    // Redeemed, not dropped: the handler needed the whole body to answer.
    assert!(text.starts_with("HTTP/1.1 200"), "{text:?}");
    assert!(text.contains(r#"{"outcome":"fresh"}"#), "{text:?}");
    let (status, log) = daemon.wait(EXIT_WAIT);
    assert!(status.success(), "{status}; log:\n{}", log.join("\n"));
}
