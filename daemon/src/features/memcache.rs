//! The "before" path of the bliss article: feature lookups over a Unix socket in the memcached
//! text protocol, for consumers that cannot map the store and for side-by-side comparison.
//!
//! `get <table>:<key> [<table>:<key> ...]` answers `VALUE <table>:<key> 0 <bytes>` with the
//! features as little-endian `f32`s for each hit, then `END`; misses are left out, as memcached
//! does. `version` and `quit` work; anything else is `ERROR` (or `CLIENT_ERROR <reason>`).
//!
//! A `get` names at most [`MAX_KEYS`] keys and its reply holds at most [`MAX_REPLY`] bytes:
//! a line of one key repeated would otherwise make a reply of thousands of vectors. Lookups
//! run on the blocking pool: a store read may fault pages in from disk, and the runtime's few
//! worker threads serve the token API.

use std::{io, path::Path, sync::Arc};

use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{UnixListener, UnixStream},
};

use crate::connections::Connections;

/// Longest command line accepted; memcached's own key limit is 250 bytes per key.
const MAX_LINE: usize = 8 * 1024;

/// Most keys one `get` may name.
pub const MAX_KEYS: usize = 128;

/// Most bytes of values one reply may hold; a `get` past it is answered with an error alone.
pub const MAX_REPLY: usize = 4 * 1024 * 1024;

/// Reply buffer a connection keeps between commands.
const KEPT_BUFFER: usize = 64 * 1024;

/// Where lookups are answered from.
pub trait Lookup: Send + Sync + 'static {
    /// Appends the features of `key` in `table` to `out` as little-endian `f32`s; false on a miss.
    fn lookup(&self, table: &str, key: u64, out: &mut Vec<u8>) -> bool;
}

/// Binds `path` (replacing a stale socket file) and serves until the runtime stops, at most
/// as many connections at once as `connections` has slots.
pub fn serve(
    path: &Path,
    lookup: Arc<dyn Lookup>,
    connections: Arc<Connections>,
) -> io::Result<()> {
    remove_stale(path)?;
    let listener = UnixListener::bind(path)?;
    tokio::spawn(async move {
        loop {
            let slot = connections.slot().await;
            match listener.accept().await {
                Ok((stream, _)) => {
                    let (lookup, slot) = (Arc::clone(&lookup), slot.open());
                    tokio::spawn(async move {
                        connection(stream, lookup).await;
                        drop(slot);
                    });
                }
                Err(error) => {
                    tracing::warn!(%error, "feature socket accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            }
        }
    });
    Ok(())
}

/// Removes a socket left at `path` by an earlier run, and nothing else: the path was removed
/// whatever it named, so a typo in `features.socket` deleted that file (the store's state, the
/// host table), and a second daemon silently took the socket of a running one.
fn remove_stale(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.file_type().is_socket() {
        let why = "exists and is not a socket: not removed (is features.socket right?)";
        return Err(io::Error::new(io::ErrorKind::AlreadyExists, why));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        let why = "is the socket of a running daemon";
        return Err(io::Error::new(io::ErrorKind::AddrInUse, why));
    }
    std::fs::remove_file(path)
}

async fn connection(stream: UnixStream, lookup: Arc<dyn Lookup>) {
    let (read, mut write) = stream.into_split();
    let mut read = BufReader::new(read);
    let mut line = String::new();
    let mut out = Vec::with_capacity(4096);
    loop {
        line.clear();
        let n = match AsyncReadExt::take(&mut read, MAX_LINE as u64 + 1)
            .read_line(&mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        out.clear();
        let keep_open = if n > MAX_LINE || !line.ends_with('\n') {
            out.extend_from_slice(b"CLIENT_ERROR line too long\r\n");
            false
        } else {
            let lookup = Arc::clone(&lookup);
            let command = std::mem::take(&mut line);
            let mut reply = std::mem::take(&mut out);
            let answered = tokio::task::spawn_blocking(move || {
                let open = answer(command.trim_end(), &*lookup, &mut reply);
                (command, reply, open)
            })
            .await;
            let Ok((command, reply, open)) = answered else {
                return;
            };
            (line, out) = (command, reply);
            open
        };
        // One write per reply: small replies split over several writes stall on Nagle/delayed ACK.
        if write.write_all(&out).await.is_err() || !keep_open {
            return;
        }
        // A large reply's buffer is not kept for the life of an idle connection.
        out.clear();
        out.shrink_to(KEPT_BUFFER);
    }
}

/// Appends the reply to one command line; false when the connection should close.
fn answer(line: &str, lookup: &dyn Lookup, out: &mut Vec<u8>) -> bool {
    let mut words = line.split_ascii_whitespace();
    match words.next() {
        Some("get" | "gets") => {
            let keys: Vec<&str> = words.take(MAX_KEYS + 1).collect();
            if keys.len() > MAX_KEYS {
                out.extend_from_slice(b"CLIENT_ERROR too many keys\r\n");
                return true;
            }
            for key in keys {
                value(key, lookup, out);
                if out.len() > MAX_REPLY {
                    out.clear();
                    out.extend_from_slice(b"SERVER_ERROR reply too large\r\n");
                    return true;
                }
            }
            out.extend_from_slice(b"END\r\n");
        }
        Some("version") => {
            out.extend_from_slice(
                concat!("VERSION edgewised-", env!("CARGO_PKG_VERSION"), "\r\n").as_bytes(),
            );
        }
        Some("quit") => return false,
        _ => out.extend_from_slice(b"ERROR\r\n"),
    }
    true
}

fn value(key: &str, lookup: &dyn Lookup, out: &mut Vec<u8>) {
    let Some((table, id)) = key
        .split_once(':')
        .and_then(|(t, k)| Some((t, k.parse().ok()?)))
    else {
        return;
    };
    let start = out.len();
    if !lookup.lookup(table, id, out) {
        out.truncate(start);
        return;
    }
    // The header carries the length, known only once the lookup wrote the value after `start`.
    let header = format!("VALUE {key} 0 {}\r\n", out.len() - start);
    out.splice(start..start, header.into_bytes());
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    struct One;
    impl Lookup for One {
        fn lookup(&self, table: &str, key: u64, out: &mut Vec<u8>) -> bool {
            if table != "t" || key != 7 {
                return false;
            }
            for v in [1.0f32, -0.5] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            true
        }
    }

    fn reply(line: &str) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let open = answer(line, &One, &mut out);
        (out, open)
    }

    #[test]
    fn hits_misses_and_other_commands() {
        let mut expected = b"VALUE t:7 0 8\r\n".to_vec();
        expected.extend_from_slice(&1.0f32.to_le_bytes());
        expected.extend_from_slice(&(-0.5f32).to_le_bytes());
        expected.extend_from_slice(b"\r\nEND\r\n");
        assert_eq!(reply("get t:7"), (expected.clone(), true));
        assert_eq!(reply("get t:8 u:7 t:x nocolon t:7"), (expected, true));
        assert_eq!(reply("get t:8"), (b"END\r\n".to_vec(), true));
        assert_eq!(reply("set t:7 0 0 1"), (b"ERROR\r\n".to_vec(), true));
        assert_eq!(reply(""), (b"ERROR\r\n".to_vec(), true));
        assert!(reply("version").0.starts_with(b"VERSION edgewised-"));
        assert!(!reply("quit").1);
    }

    #[test]
    fn a_get_is_capped_in_keys_and_in_reply_bytes() {
        let keys = |n: usize| format!("get {}", vec!["t:7"; n].join(" "));
        let (out, open) = reply(&keys(MAX_KEYS));
        assert!(open && out.ends_with(b"END\r\n"));
        assert_eq!(out.len(), MAX_KEYS * 25 + 5);
        assert_eq!(
            reply(&keys(MAX_KEYS + 1)),
            (b"CLIENT_ERROR too many keys\r\n".to_vec(), true)
        );

        struct Large;
        impl Lookup for Large {
            fn lookup(&self, _: &str, _: u64, out: &mut Vec<u8>) -> bool {
                out.resize(out.len() + MAX_REPLY / 4, 0);
                true
            }
        }
        let mut out = Vec::new();
        assert!(answer("get t:1 t:2 t:3", &Large, &mut out));
        assert!(out.ends_with(b"END\r\n"));
        out.clear();
        assert!(answer(&keys(5), &Large, &mut out));
        assert_eq!(out, b"SERVER_ERROR reply too large\r\n");
    }
}
