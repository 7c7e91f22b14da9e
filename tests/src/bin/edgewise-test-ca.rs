//! Writes a throwaway PKI for end-to-end TLS tests and demos into a directory:
//!
//! ```text
//! edgewise-test-ca DIR
//! ```
//!
//! `server-ca.pem` issued `server.crt`/`server.key` (for localhost and 127.0.0.1);
//! `client-ca.pem` issued `client.crt`/`client.key`; `stranger.crt`/`stranger.key` are a client
//! certificate of another CA. Every key is new on each run and never leaves the directory.

use std::{path::PathBuf, process::ExitCode};

use edgewise_tests::TestCa;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: edgewise-test-ca DIR");
        return ExitCode::FAILURE;
    };
    if let Err(error) = std::fs::create_dir_all(&dir) {
        eprintln!("edgewise-test-ca: {}: {error}", dir.display());
        return ExitCode::FAILURE;
    }
    let server_ca = TestCa::new("edgewise test server CA");
    let client_ca = TestCa::new("edgewise test client CA");
    let stranger_ca = TestCa::new("edgewise test stranger CA");
    server_ca.server().write(&dir, "server");
    client_ca.client("worker").write(&dir, "client");
    stranger_ca.client("worker").write(&dir, "stranger");
    edgewise_tests::write_replacing(&dir.join("server-ca.pem"), server_ca.pem.as_bytes());
    edgewise_tests::write_replacing(&dir.join("client-ca.pem"), client_ca.pem.as_bytes());
    println!("{}", dir.display());
    ExitCode::SUCCESS
}
