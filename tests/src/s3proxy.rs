//! A real S3 API server for the feature source tests: s3proxy (Maven Central
//! `org.gaul:s3proxy`, installed by `scripts/setup.sh --test`) on the filesystem backend, on a
//! free loopback port, owned by one test. It can be killed and restarted on the same port and
//! data, or stopped and continued; [`Relay`] slows its answers down so that a test can act in
//! the middle of a download.

use std::{
    io::{Read, Write},
    net::{Shutdown, SocketAddr, TcpListener, TcpStream},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    thread,
    time::{Duration, Instant},
};

use object_store::{ObjectStoreExt, PutPayload, aws::AmazonS3Builder};

use crate::{ScratchDir, free_port, scratch_dir, send_signal};

/// The access key of the test store.
pub const ACCESS_KEY: &str = "edgewise-test";
/// Its secret.
pub const SECRET_KEY: &str = "edgewise-test-secret";
/// The bucket every test store has.
pub const BUCKET: &str = "features";

/// A running s3proxy and its data.
#[derive(Debug)]
pub struct S3Proxy {
    child: Option<Child>,
    port: u16,
    dir: ScratchDir,
}

fn jar() -> PathBuf {
    if let Some(path) = std::env::var_os("EDGEWISE_S3PROXY_JAR") {
        return PathBuf::from(path);
    }
    let jar = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.edgewise/tools/s3proxy-2.6.0.jar");
    assert!(
        jar.exists(),
        "{} is missing: run scripts/setup.sh --test (it downloads s3proxy)",
        jar.display()
    );
    jar
}

impl S3Proxy {
    /// Starts s3proxy with an empty [`BUCKET`] and waits until it answers.
    pub fn start(name: &str) -> S3Proxy {
        let dir = scratch_dir(&format!("s3proxy-{name}"));
        std::fs::create_dir_all(dir.join("data").join(BUCKET)).expect("creating the bucket");
        let mut proxy = S3Proxy {
            child: None,
            port: free_port(),
            dir,
        };
        proxy.spawn();
        proxy
    }

    fn spawn(&mut self) {
        let properties = self.dir.join("s3proxy.properties");
        let config = format!(
            "s3proxy.endpoint=http://127.0.0.1:{}\ns3proxy.authorization=aws-v2-or-v4\n\
             s3proxy.identity={ACCESS_KEY}\ns3proxy.credential={SECRET_KEY}\n\
             jclouds.provider=filesystem\njclouds.filesystem.basedir={}\n",
            self.port,
            self.dir.join("data").display()
        );
        std::fs::write(&properties, config).expect("writing the s3proxy properties");
        let log = std::fs::File::create(self.dir.join("s3proxy.log")).expect("s3proxy log");
        let child = Command::new("java")
            .args(["-Xmx256m", "-jar"])
            .arg(jar())
            .arg("--properties")
            .arg(&properties)
            .stdout(log.try_clone().expect("s3proxy log"))
            .stderr(log)
            .stdin(Stdio::null())
            .spawn()
            .expect("starting java (scripts/setup.sh --test installs a JRE)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        // Listening is not enough: it answers once its HTTP server is up (403 unauthenticated).
        while !self.answers() {
            assert!(
                Instant::now() < deadline,
                "s3proxy did not start: {}",
                self.log()
            );
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("s3proxy exited ({status}): {}", self.log());
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    fn answers(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(self.addr()) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let request = "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
        let mut head = [0; 12];
        stream.write_all(request.as_bytes()).is_ok()
            && stream.read_exact(&mut head).is_ok()
            && head.starts_with(b"HTTP/1.1")
    }

    /// What s3proxy logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("s3proxy.log")).unwrap_or_default()
    }

    /// Its address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("s3proxy is running").id()
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and data.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The environment a client of this store needs (`edgewised` reads it as the AWS SDKs do).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_owned()),
            ("AWS_ENDPOINT", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
        ]
    }

    /// Writes object `key` of [`BUCKET`].
    pub fn put(&self, key: &str, bytes: Vec<u8>) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let store = AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(BUCKET)
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .build()
            .expect("an S3 client");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime
            .block_on(store.put(&key.into(), PutPayload::from(bytes)))
            .unwrap_or_else(|e| panic!("putting {key}: {e}"));
    }
}

impl Drop for S3Proxy {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A stopped process does not die of SIGKILL until continued on some kernels.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
    }
}

/// Stops (SIGSTOP) or continues (SIGCONT) process `pid`.
pub fn pause(pid: u32, paused: bool) {
    send_signal(pid, if paused { "STOP" } else { "CONT" });
}

/// A TCP relay to an upstream server that passes its answers on at a limited rate, and counts
/// the bytes it passed on.
#[derive(Debug)]
pub struct Relay {
    addr: SocketAddr,
    forwarded: Arc<AtomicU64>,
}

impl Relay {
    /// Relays every connection to `upstream`, answers at `bytes_per_sec`.
    pub fn start(upstream: SocketAddr, bytes_per_sec: u64) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("binding the relay");
        let addr = listener.local_addr().expect("relay address");
        let forwarded = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&forwarded);
        thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(upstream) else {
                    continue;
                };
                let counter = Arc::clone(&counter);
                let (client_in, server_out) = (client.try_clone(), server.try_clone());
                if let (Ok(mut client_in), Ok(mut server_out)) = (client_in, server_out) {
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut client_in, &mut server_out);
                        let _ = server_out.shutdown(Shutdown::Write);
                    });
                }
                thread::spawn(move || throttle(server, client, bytes_per_sec, &counter));
            }
        });
        Relay { addr, forwarded }
    }

    /// Its endpoint URL.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Bytes passed on from upstream so far, over all connections.
    pub fn forwarded(&self) -> u64 {
        self.forwarded.load(Ordering::Relaxed)
    }
}

fn throttle(mut from: TcpStream, mut to: TcpStream, bytes_per_sec: u64, counter: &AtomicU64) {
    let mut buffer = vec![0; 16 * 1024];
    let pause = Duration::from_secs_f64(buffer.len() as f64 / bytes_per_sec as f64);
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
                counter.fetch_add(n as u64, Ordering::Relaxed);
                thread::sleep(pause);
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}
