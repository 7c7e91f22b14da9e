//! Helpers for driving the real `edgewised` binary and a real memcached from integration tests.
//!
//! The binary is the one cargo built for this workspace (`cargo build --workspace`, which the
//! README's test command runs first), or `EDGEWISED_BIN` if set.

mod memcached;
pub mod s3proxy;
mod tls;

pub use memcached::{Memcached, free_port};
pub use tls::{Issued, TestCa, TlsClient, TlsConnection, write_replacing};

use std::{
    io::{BufRead, BufReader, Read, Write},
    net::{SocketAddr, TcpStream},
    path::PathBuf,
    process::{Child, ChildStderr, Command, ExitStatus, Stdio},
    sync::mpsc,
    thread,
    time::{Duration, Instant},
};

/// Path of the `edgewised` binary under test.
pub fn daemon_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("EDGEWISED_BIN") {
        return PathBuf::from(path);
    }
    // Test executables live in target/<profile>/deps; binaries one level up.
    let exe = std::env::current_exe().expect("test executable path");
    let profile_dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile> directory");
    let bin = profile_dir.join("edgewised");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --workspace` first (scripts/test.sh does)",
        bin.display()
    );
    bin
}

/// A running daemon whose stderr is collected line by line.
#[derive(Debug)]
pub struct Daemon {
    child: Child,
    lines: mpsc::Receiver<String>,
    log: Vec<String>,
    /// The address the daemon reported listening on.
    pub addr: SocketAddr,
}

impl Daemon {
    /// Starts `edgewised` with `args` on an ephemeral loopback port and waits until it listens.
    pub fn start(args: &[&str]) -> Daemon {
        Daemon::start_with_env(args, &[])
    }

    /// Like [`Daemon::start`], with the API secret [`SECRET`].
    pub fn start_with_secret(args: &[&str]) -> Daemon {
        Daemon::start_with_env(args, &[("EDGEWISED_API_SECRET", SECRET)])
    }

    /// Like [`Daemon::start`], with extra environment variables.
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Daemon {
        let mut command = Command::new(daemon_bin());
        command.envs(env.iter().copied());
        Daemon::spawn(command, args)
    }

    /// Like [`Daemon::start_with_env`], under file mode creation mask `umask` (octal).
    pub fn start_with_umask(args: &[&str], env: &[(&str, &str)], umask: &str) -> Daemon {
        let mut command = Command::new("sh");
        command
            .envs(env.iter().copied())
            .args(["-c", "umask \"$0\" && exec \"$@\"", umask])
            .arg(daemon_bin());
        Daemon::spawn(command, args)
    }

    fn spawn(mut command: Command, args: &[&str]) -> Daemon {
        let mut child = command
            .args(["--listen", "127.0.0.1:0", "--log-format", "text"])
            .args(args)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning edgewised");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut daemon = Daemon {
            lines: forward_lines(stderr),
            child,
            log: Vec::new(),
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
        };
        let line = daemon.wait_for_log("listening", Duration::from_secs(20));
        daemon.addr = parse_addr(&line);
        daemon
    }

    /// Waits for a stderr line containing `needle` and returns it.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.log.push(line.clone());
                    if line.contains(needle) {
                        return line;
                    }
                }
                Err(_) => panic!(
                    "no log line with {needle:?} within {timeout:?}; log so far:\n{}",
                    self.log.join("\n")
                ),
            }
        }
    }

    /// Sends `signal` (e.g. "TERM") to the daemon.
    pub fn signal(&self, signal: &str) {
        send_signal(self.child.id(), signal);
    }

    /// Waits for the process to exit and returns its status and remaining log.
    pub fn wait(mut self, timeout: Duration) -> (ExitStatus, Vec<String>) {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("waiting for edgewised") {
                // The exit can be seen before the reader thread has passed on the last lines:
                // read until stderr closes.
                while let Ok(line) = self
                    .lines
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    self.log.push(line);
                }
                return (status, std::mem::take(&mut self.log));
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "edgewised did not exit within {timeout:?}; log:\n{}",
                    self.log.join("\n")
                );
            }
            self.log.extend(self.lines.try_iter());
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn forward_lines(stderr: ChildStderr) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn parse_addr(line: &str) -> SocketAddr {
    line.split_whitespace()
        .find_map(|field| field.strip_prefix("addr="))
        .and_then(|addr| addr.parse().ok())
        .unwrap_or_else(|| panic!("no addr= in {line:?}"))
}

/// Sends `signal` by name (e.g. "TERM", "STOP") to process `pid`; panics if that fails.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("running kill");
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// Polls `done` every 20 ms until it holds; fails the test if it does not within `within`.
pub fn wait_until(within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "condition not met within {within:?}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// The value of the sample line starting with `series ` on a `/metrics` page.
pub fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The API secret the tests' daemons are given ([`Daemon::start_with_secret`]).
pub const SECRET: &str = "test-secret-0123456789abcdef";

/// `GET path` with the bearer [`SECRET`]: `/metrics`, and `/readyz` with its checks.
pub fn http_authorized(addr: SocketAddr, path: &str) -> (u16, String) {
    let bearer = format!("Bearer {SECRET}");
    http_request(addr, "GET", path, &[("Authorization", &bearer)], b"")
}

/// A minimal HTTP/1.1 exchange: returns the status code and the body.
pub fn http(addr: SocketAddr, method: &str, path: &str) -> (u16, String) {
    http_request(addr, method, path, &[], b"")
}

/// An HTTP/1.1 exchange with extra headers and a body (sent with Content-Length).
pub fn http_request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let response = http_exchange(addr, method, path, headers, body);
    (
        response.status,
        String::from_utf8_lossy(&response.body).into_owned(),
    )
}

/// A response as [`http_exchange`] read it.
#[derive(Debug)]
pub struct HttpResponse {
    /// Status code.
    pub status: u16,
    /// Header fields, names lowercased, in order.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// An HTTP/1.1 exchange returning the whole response. The body is what follows the header
/// block up to the close (`Connection: close`), so chunked bodies keep their framing.
pub fn http_exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> HttpResponse {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    stream.write_all(&bytes).expect("write request");
    let mut response = Vec::new();
    // The server may close before reading a body it refused; what it sent is still readable.
    let _ = stream.read_to_end(&mut response);
    parse_response(&response)
}

fn parse_response(response: &[u8]) -> HttpResponse {
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("malformed response {:?}", String::from_utf8_lossy(response)));
    let head = String::from_utf8_lossy(&response[..split]);
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("malformed status line in {head:?}"));
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    HttpResponse {
        status,
        headers,
        body: response[split + 4..].to_vec(),
    }
}

/// A directory for a test's files, removed with them when dropped.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl std::ops::Deref for ScratchDir {
    type Target = std::path::Path;

    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A new empty [`ScratchDir`] under the system's temporary directory.
pub fn scratch_dir(name: &str) -> ScratchDir {
    let dir = std::env::temp_dir().join(format!("edgewise-tests-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("creating a scratch directory");
    ScratchDir(dir)
}
