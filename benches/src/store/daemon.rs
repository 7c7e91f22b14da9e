//! The third peer: bliss's "before" path, feature lookups over a Unix socket in the memcached
//! text protocol, answered by edgewised's own feature service (`edgewise_daemon::Features`)
//! running in the benchmark process on its own Tokio thread.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Context;
use edgewise::FeatureSnapshot;
use edgewise_daemon::{Change, Features, FeaturesConfig, Upsert};

use super::{TABLE, use_vector};

/// edgewised's feature service over the store in `dir/store`, with its socket at
/// `dir/features.sock`.
#[derive(Debug)]
pub struct Daemon {
    features: Arc<Features>,
    socket: PathBuf,
    // Serves the socket; dropped last so the service outlives every client.
    _runtime: tokio::runtime::Runtime,
}

impl Daemon {
    /// Starts the service (an empty first version) and binds its socket.
    pub fn start(dir: &Path) -> anyhow::Result<Daemon> {
        std::fs::create_dir_all(dir)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()?;
        let socket = dir.join("features.sock");
        let config = FeaturesConfig {
            dir: Some(dir.join("store")),
            socket: Some(socket.clone()),
            ..FeaturesConfig::default()
        };
        // The socket's accept loop is spawned onto the current runtime.
        let features = {
            let _inside = runtime.enter();
            Features::start(&config)?.context("no feature store configured")?
        };
        Ok(Daemon {
            features,
            socket,
            _runtime: runtime,
        })
    }

    /// Replaces everything with `snapshot` as `PUT`/ingest would; the time it took, end to end
    /// (validating the change, serializing, publishing).
    pub fn replace_all(&self, snapshot: FeatureSnapshot) -> anyhow::Result<f64> {
        let start = Instant::now();
        self.features.apply_now(Change::ReplaceAll(snapshot))?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    }

    /// Publishes one-row upserts back to back (each republishes the whole table, as the
    /// store's writer does) until `stop`; each publish's milliseconds.
    pub fn republish_until(&self, stop: &AtomicBool, dims: usize) -> anyhow::Result<Vec<f64>> {
        let mut times = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let upsert = Upsert {
                table: TABLE.to_owned(),
                key: super::key(times.len() as u64 % 1000),
                values: vec![1.0; dims],
            };
            let start = Instant::now();
            self.features.apply_now(Change::Batch {
                upserts: vec![upsert],
                deletes: Vec::new(),
            })?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
        }
        Ok(times)
    }

    /// The store directory (for its file sizes).
    pub fn store_dir(&self) -> PathBuf {
        self.socket.with_file_name("store")
    }

    /// A client connection to the socket.
    pub fn connect(&self) -> io::Result<MemcacheClient> {
        MemcacheClient::connect(&self.socket)
    }
}

/// One connection speaking the memcached text protocol, one `get` at a time.
#[derive(Debug)]
pub struct MemcacheClient {
    stream: UnixStream,
    replies: BufReader<UnixStream>,
    command: Vec<u8>,
    line: String,
    value: Vec<u8>,
    floats: Vec<f32>,
}

impl MemcacheClient {
    /// Connects to the socket at `path`.
    pub fn connect(path: &Path) -> io::Result<MemcacheClient> {
        let stream = UnixStream::connect(path)?;
        let replies = BufReader::new(stream.try_clone()?);
        Ok(MemcacheClient {
            stream,
            replies,
            command: Vec::with_capacity(64),
            line: String::with_capacity(64),
            value: Vec::with_capacity(1024),
            floats: Vec::with_capacity(64),
        })
    }

    /// `get features:<key>` (one write), the reply parsed and its vector decoded and used as
    /// the mapped peers use theirs.
    pub fn lookup(&mut self, key: u64) -> io::Result<f32> {
        self.command.clear();
        write!(self.command, "get {TABLE}:{key}\r\n")?;
        self.stream.write_all(&self.command)?;
        self.line.clear();
        self.replies.read_line(&mut self.line)?;
        let len: usize = self
            .line
            .strip_prefix("VALUE ")
            .and_then(|rest| rest.split_ascii_whitespace().nth(2))
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| io::Error::other(format!("key {key}: reply {:?}", self.line)))?;
        // The value, its CRLF and "END\r\n".
        self.value.resize(len + 7, 0);
        self.replies.read_exact(&mut self.value)?;
        self.floats.clear();
        self.floats.extend(
            self.value[..len]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        Ok(use_vector(&self.floats))
    }
}
