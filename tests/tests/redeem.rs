//! `POST /v1/tokens/redeem` on the real `edgewised` binary, backed by a real memcached.

use std::{
    net::SocketAddr,
    sync::atomic::{AtomicU64, Ordering},
    thread,
    time::Duration,
};

use edgewise_tests::{Daemon, Memcached, http, http_authorized, http_request};

const SECRET: &str = "test-secret-0123456789abcdef";

fn start(memcached: &Memcached) -> Daemon {
    Daemon::start_with_env(
        &["--memcached", &memcached.addr()],
        &[("EDGEWISED_API_SECRET", SECRET)],
    )
}

/// A redemption body for a token no other request uses.
fn body() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let nonce = format!("{:016x}{:048x}", std::process::id(), n);
    format!(
        r#"{{"token_type":2,"token_key_id":"{}","nonce":"{nonce}"}}"#,
        "ab".repeat(32)
    )
}

fn redeem(daemon: &Daemon, body: &str) -> (u16, String) {
    redeem_at(daemon.addr, body)
}

fn redeem_at(addr: SocketAddr, body: &str) -> (u16, String) {
    let auth = format!("Bearer {SECRET}");
    http_request(
        addr,
        "POST",
        "/v1/tokens/redeem",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
        ],
        body.as_bytes(),
    )
}

#[test]
fn first_redemption_is_fresh_and_every_replay_spent() {
    let memcached = Memcached::start(&[]);
    let daemon = start(&memcached);
    let token = body();
    assert_eq!(
        redeem(&daemon, &token),
        (200, r#"{"outcome":"fresh"}"#.into())
    );
    for _ in 0..3 {
        assert_eq!(
            redeem(&daemon, &token),
            (200, r#"{"outcome":"spent"}"#.into())
        );
    }
    let (status, metrics) = http_authorized(daemon.addr, "/metrics");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("edgewise_token_redemptions_total{outcome=\"fresh\"} 1\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("edgewise_token_redemptions_total{outcome=\"spent\"} 3\n"),
        "{metrics}"
    );
    assert!(
        metrics.contains("edgewise_memcached_evictions{server="),
        "{metrics}"
    );
}

#[test]
fn a_thousand_concurrent_http_redemptions_of_one_token_yield_one_fresh() {
    let memcached = Memcached::start(&[]);
    // What is tested is exactly one winner, not latency: the default 100 ms memcached deadline
    // answered some of the 1,000 with 503 on a loaded 2-core CI machine (a fresh-clone run of
    // `.ci/run`, 2026-11-23), which is the deadline working, not a double spend.
    let daemon = Daemon::start_with_env(
        &[
            "--memcached",
            &memcached.addr(),
            "--set",
            "tokens.memcached.timeout_ms=5000",
        ],
        &[("EDGEWISED_API_SECRET", SECRET)],
    );
    let token = body();
    let addr = daemon.addr;
    let outcomes: Vec<String> = thread::scope(|scope| {
        let workers: Vec<_> = (0..50)
            .map(|_| scope.spawn(|| (0..20).map(|_| redeem_at(addr, &token)).collect::<Vec<_>>()))
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .map(|(status, body)| {
                assert_eq!(status, 200, "{body}");
                body
            })
            .collect()
    });
    let fresh = outcomes.iter().filter(|b| b.contains("fresh")).count();
    let spent = outcomes.iter().filter(|b| b.contains("spent")).count();
    assert_eq!((fresh, spent), (1, 999));
}

#[test]
fn unreachable_memcached_answers_503_unavailable_then_recovers() {
    let mut memcached = Memcached::start(&[]);
    let daemon = start(&memcached);
    memcached.kill();
    assert_eq!(
        redeem(&daemon, &body()),
        (503, r#"{"outcome":"unavailable"}"#.into())
    );
    memcached.restart();
    let recovered = (0..200).any(|_| {
        thread::sleep(Duration::from_millis(10));
        redeem(&daemon, &body()).0 == 200
    });
    assert!(recovered);
}

#[test]
fn requests_without_the_secret_are_refused() {
    let memcached = Memcached::start(&[]);
    let daemon = start(&memcached);
    let token = body();
    for auth in [None, Some("Bearer wrong-secret-0123456789"), Some(SECRET)] {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        let (status, answer) = http_request(
            daemon.addr,
            "POST",
            "/v1/tokens/redeem",
            &headers,
            token.as_bytes(),
        );
        assert_eq!(status, 401, "{auth:?}: {answer}");
        assert!(answer.contains("bearer secret"), "{answer}");
    }
    // Refused requests spent nothing.
    assert_eq!(redeem(&daemon, &token).1, r#"{"outcome":"fresh"}"#);
}

#[test]
fn malformed_redemptions_get_clear_400s() {
    let memcached = Memcached::start(&[]);
    let daemon = start(&memcached);
    let key_id = "ab".repeat(32);
    let cases = [
        ("", "malformed redemption"),
        ("{", "malformed redemption"),
        (r#"{"token_type":2}"#, "missing field"),
        (
            r#"{"token_type":2,"token_key_id":"zz","nonce":"00"}"#,
            "token_key_id must be 64 hex digits",
        ),
        (
            &*format!(
                r#"{{"token_type":2,"token_key_id":"{key_id}","nonce":"0g{}"}}"#,
                "0".repeat(62)
            ),
            "nonce must be 64 hex digits",
        ),
        (
            &*format!(r#"{{"token_type":70000,"token_key_id":"{key_id}","nonce":"{key_id}"}}"#),
            "malformed redemption",
        ),
        (
            &*format!(
                r#"{{"token_type":2,"token_key_id":"{key_id}","nonce":"{key_id}","extra":1}}"#
            ),
            "unknown field",
        ),
    ];
    for (body, reason) in cases {
        let (status, answer) = redeem(&daemon, body);
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(answer.contains(reason), "{body}: {answer}");
    }
    let huge = format!(r#"{{"pad":"{}"}}"#, "x".repeat(10_000));
    assert_eq!(redeem(&daemon, &huge).0, 413);
    let auth = format!("Bearer {SECRET}");
    let authorized = [("Authorization", auth.as_str())];
    let get = http_request(daemon.addr, "GET", "/v1/tokens/redeem", &authorized, b"");
    assert_eq!(get.0, 405);
    // Without the secret, a /v1 route answers 401 whatever the method (checked first).
    assert_eq!(http(daemon.addr, "GET", "/v1/tokens/redeem").0, 401);
    assert_eq!(http(daemon.addr, "POST", "/v1/tokens/nope").0, 404);
}

#[test]
fn without_memcached_the_embedded_store_is_used_and_announced() {
    let daemon = Daemon::start_with_env(&[], &[("EDGEWISED_API_SECRET", SECRET)]);
    let token = body();
    assert_eq!(redeem(&daemon, &token).1, r#"{"outcome":"fresh"}"#);
    assert_eq!(redeem(&daemon, &token).1, r#"{"outcome":"spent"}"#);
    daemon.signal("TERM");
    let (_, log) = daemon.wait(Duration::from_secs(20));
    assert!(log.iter().any(|l| l.contains("EMBEDDED")), "{log:?}");
}

#[test]
fn without_a_secret_every_redemption_is_refused() {
    let memcached = Memcached::start(&[]);
    let daemon = Daemon::start(&["--memcached", &memcached.addr()]);
    assert_eq!(redeem(&daemon, &body()).0, 401);
    daemon.signal("TERM");
    let (_, log) = daemon.wait(Duration::from_secs(20));
    assert!(
        log.iter().any(|l| l.contains("no API secret configured")),
        "{log:?}"
    );
}

/// Before any authentication, one address opening hundreds of idle connections holds at most
/// `server.max_connections_per_peer` of them: a client at another address still redeems at
/// once, not after the flood's idle timeout.
#[test]
fn one_address_flooding_idle_connections_cannot_stop_other_redemptions() {
    let daemon = Daemon::start_with_env(
        &[
            "--set",
            "server.max_connections=64",
            "--set",
            "server.max_connections_per_peer=16",
            "--set",
            "server.header_timeout_ms=10000",
        ],
        &[("EDGEWISED_API_SECRET", SECRET)],
    );
    // The flood comes from 127.0.0.2: the whole of 127.0.0.0/8 is this machine.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let flood: Vec<_> = (0..300)
        .map(|_| {
            runtime.block_on(async {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.bind("127.0.0.2:0".parse().unwrap()).unwrap();
                socket.connect(daemon.addr).await.unwrap()
            })
        })
        .collect();
    thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    let (status, answer) = redeem(&daemon, &body());
    assert_eq!((status, answer.as_str()), (200, r#"{"outcome":"fresh"}"#));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the redemption waited {:?} behind the flood",
        started.elapsed()
    );
    let (_, page) = http_authorized(daemon.addr, "/metrics");
    let refused = edgewise_tests::sample(&page, "edgewise_http_connections_per_peer_refused_total");
    assert!(refused.unwrap_or(0.0) >= 200.0, "{page}");
    drop(flood);
}
