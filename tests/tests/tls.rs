//! The real `edgewised` serving HTTPS: a test CA generated per test, a rustls client, plain
//! HTTP on the same port, client certificates (mTLS), and certificate reloads on SIGHUP.

use std::{
    io::{Read, Write},
    net::{SocketAddr, TcpStream},
    path::Path,
    process::Command,
    time::Duration,
};

use edgewise_tests::{
    Daemon, SECRET, TestCa, TlsClient, daemon_bin, sample, scratch_dir, write_replacing,
};

const LOG_WAIT: Duration = Duration::from_secs(10);

/// `--set` arguments naming the TLS files.
fn tls_args(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Vec<String> {
    let mut args = vec![
        "--set".into(),
        format!("server.tls.cert_file={:?}", cert),
        "--set".into(),
        format!("server.tls.key_file={:?}", key),
    ];
    if let Some(ca) = client_ca {
        args.extend(["--set".into(), format!("server.tls.client_ca_file={ca:?}")]);
    }
    args
}

fn start(args: &[String]) -> Daemon {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    Daemon::start_with_secret(&args)
}

fn bearer() -> String {
    format!("Bearer {SECRET}")
}

/// The daemon's `/metrics` over HTTPS.
fn metrics(client: &TlsClient, addr: SocketAddr) -> String {
    let bearer = bearer();
    let response = client
        .get(addr, "/metrics", &[("Authorization", &bearer)])
        .expect("metrics over HTTPS");
    assert_eq!(response.status, 200);
    String::from_utf8(response.body).unwrap()
}

/// What a plain-HTTP request to `addr` gets back (a TLS alert at most, never HTTP).
fn plaintext_answer(addr: SocketAddr) -> Vec<u8> {
    let mut tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = Vec::new();
    let _ = tcp.read_to_end(&mut answer);
    answer
}

#[test]
fn serves_https_with_the_configured_certificate_and_refuses_plaintext() {
    let dir = scratch_dir("tls-serve");
    let ca = TestCa::new("edgewise test CA");
    let (cert, key) = ca.server().write(&dir, "server");
    let daemon = start(&tls_args(&cert, &key, None));

    let client = TlsClient::new(&ca, None);
    let health = client.get(daemon.addr, "/healthz", &[]).unwrap();
    assert_eq!(health.status, 200);
    let unauthorized = client.get(daemon.addr, "/metrics", &[]).unwrap();
    assert_eq!(
        unauthorized.status, 401,
        "HTTPS does not replace the secret"
    );

    let answer = plaintext_answer(daemon.addr);
    assert!(
        !answer.starts_with(b"HTTP/"),
        "plain HTTP was answered: {:?}",
        String::from_utf8_lossy(&answer)
    );
    // A client that does not trust the certificate gets no further than the handshake.
    let stranger = TlsClient::new(&TestCa::new("another CA"), None);
    assert!(stranger.get(daemon.addr, "/healthz", &[]).is_err());

    let page = metrics(&client, daemon.addr);
    let failures = sample(&page, "edgewise_tls_handshake_failures_total").unwrap();
    assert!(failures >= 2.0, "plaintext and distrust count: {failures}");
}

#[test]
fn mutual_tls_admits_only_clients_the_configured_ca_issued() {
    let dir = scratch_dir("tls-mutual");
    let server_ca = TestCa::new("server CA");
    let client_ca = TestCa::new("client CA");
    let (cert, key) = server_ca.server().write(&dir, "server");
    let ca_file = dir.join("clients.pem");
    std::fs::write(&ca_file, &client_ca.pem).unwrap();
    let daemon = start(&tls_args(&cert, &key, Some(&ca_file)));

    let worker = client_ca.client("worker");
    let admitted = TlsClient::new(&server_ca, Some(&worker));
    assert_eq!(
        admitted.get(daemon.addr, "/healthz", &[]).unwrap().status,
        200
    );
    metrics(&admitted, daemon.addr);

    // No certificate, or one of another CA (even one that issued the server's): refused
    // before any HTTP, /healthz included.
    let anonymous = TlsClient::new(&server_ca, None);
    assert!(anonymous.get(daemon.addr, "/healthz", &[]).is_err());
    let forged = server_ca.client("worker");
    let impostor = TlsClient::new(&server_ca, Some(&forged));
    assert!(impostor.get(daemon.addr, "/healthz", &[]).is_err());
    assert!(!plaintext_answer(daemon.addr).starts_with(b"HTTP/"));

    let page = metrics(&admitted, daemon.addr);
    let failures = sample(&page, "edgewise_tls_handshake_failures_total").unwrap();
    assert!(failures >= 3.0, "{failures}");
}

#[test]
fn sighup_swaps_the_certificate_and_open_connections_carry_on() {
    let dir = scratch_dir("tls-reload");
    let old_ca = TestCa::new("old CA");
    let new_ca = TestCa::new("new CA");
    let (cert, key) = old_ca.server().write(&dir, "server");
    let mut daemon = start(&tls_args(&cert, &key, None));

    let old_client = TlsClient::new(&old_ca, None);
    let mut open = old_client.connect(daemon.addr).unwrap();
    assert_eq!(open.request("GET", "/healthz", &[]).unwrap().status, 200);

    new_ca.server().write(&dir, "server");
    daemon.signal("HUP");
    daemon.wait_for_log("TLS certificate and key reloaded", LOG_WAIT);

    let new_client = TlsClient::new(&new_ca, None);
    assert_eq!(
        new_client.get(daemon.addr, "/healthz", &[]).unwrap().status,
        200
    );
    assert!(old_client.get(daemon.addr, "/healthz", &[]).is_err());
    // The connection made before the reload still serves.
    assert_eq!(open.request("GET", "/healthz", &[]).unwrap().status, 200);

    // A key that is not one: refused, and the certificate loaded before keeps serving.
    write_replacing(
        &key,
        b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
    );
    daemon.signal("HUP");
    daemon.wait_for_log("TLS files rejected", LOG_WAIT);
    assert_eq!(
        new_client.get(daemon.addr, "/healthz", &[]).unwrap().status,
        200
    );
    let page = metrics(&new_client, daemon.addr);
    assert_eq!(sample(&page, "edgewise_tls_reloads_total"), Some(1.0));
    assert_eq!(
        sample(&page, "edgewise_tls_reload_failures_total"),
        Some(1.0)
    );
}

#[test]
fn check_config_refuses_tls_files_that_do_not_make_a_server() {
    let dir = scratch_dir("tls-check");
    let ca = TestCa::new("check CA");
    let (cert, key) = ca.server().write(&dir, "server");
    let (_, other_key) = ca.server().write(&dir, "other");
    let check = |cert: &Path, key: &Path| {
        let config = dir.join("edgewised.toml");
        std::fs::write(
            &config,
            format!("[server.tls]\ncert_file = {cert:?}\nkey_file = {key:?}\n"),
        )
        .unwrap();
        let out = Command::new(daemon_bin())
            .args(["check-config", config.to_str().unwrap()])
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(check(&cert, &key), (true, String::new()));
    let (ok, stderr) = check(&cert, &other_key);
    assert!(!ok && stderr.contains("does not fit"), "{stderr}");
    let (ok, stderr) = check(&dir.join("missing.crt"), &key);
    assert!(!ok && stderr.contains("server.tls.cert_file"), "{stderr}");
    let (ok, stderr) = check(&key, &key);
    assert!(!ok && stderr.contains("no PEM certificate"), "{stderr}");
}
