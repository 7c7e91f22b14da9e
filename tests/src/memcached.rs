//! A real memcached (Debian's package, installed by scripts/setup.sh) on a free loopback port,
//! owned by one test and stopped by pid when dropped.

use std::{
    io::{Read, Write},
    net::{TcpListener, TcpStream},
    path::PathBuf,
    process::{Child, Command, Stdio},
    thread,
    time::{Duration, Instant},
};

/// A memcached process the test controls: it can be killed, restarted on the same port,
/// stopped and continued.
#[derive(Debug)]
pub struct Memcached {
    child: Option<Child>,
    port: u16,
    args: Vec<String>,
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a probe port");
    listener.local_addr().expect("probe address").port()
}

fn memcached_bin() -> PathBuf {
    if let Some(path) = std::env::var_os("MEMCACHED_BIN") {
        return PathBuf::from(path);
    }
    for dir in ["/usr/bin", "/usr/local/bin", "/usr/sbin"] {
        let path = PathBuf::from(dir).join("memcached");
        if path.exists() {
            return path;
        }
    }
    panic!("memcached is not installed: run scripts/setup.sh (apt-get install memcached)");
}

/// memcached refuses to run as root unless told which user to be.
fn root_user() -> &'static [&'static str] {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata("/proc/self") {
        Ok(meta) if meta.uid() == 0 => &["-u", "root"],
        _ => &[],
    }
}

impl Memcached {
    /// Starts memcached with extra `args` (e.g. `["-m", "8", "-M"]`) and waits until it accepts.
    pub fn start(args: &[&str]) -> Memcached {
        let mut memcached = Memcached {
            child: None,
            port: free_port(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
        };
        // The port was free a moment ago; a process started since may hold it.
        for _ in 0..4 {
            match memcached.try_spawn() {
                Ok(()) => return memcached,
                Err(why) => eprintln!("memcached on port {}: {why}; another port", memcached.port),
            }
            memcached.port = free_port();
        }
        memcached.spawn();
        memcached
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id (for signals).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn spawn(&mut self) {
        if let Err(why) = self.try_spawn() {
            panic!("memcached on {}: {why}", self.addr());
        }
    }

    /// Starts memcached on `port` and waits until it answers as itself: a connection that
    /// succeeds may be to another process holding the port, while this one fails to bind.
    fn try_spawn(&mut self) -> Result<(), String> {
        let child = Command::new(memcached_bin())
            .args(["-l", "127.0.0.1", "-p", &self.port.to_string(), "-U", "0"])
            .args(&self.args)
            .args(root_user())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawning memcached");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        let pid = u64::from(self.pid());
        while self.stats().and_then(|s| stat_in(&s, "pid")) != Some(pid) {
            if let Some(child) = &mut self.child
                && let Ok(Some(status)) = child.try_wait()
            {
                self.child = None;
                return Err(format!("exited at start: {status}"));
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err("did not answer as itself within 10 s".into());
            }
            thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// `kill -9`: all records are lost, connections reset.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts a fresh, empty memcached on the same port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The server's own `STAT name` counter (e.g. `total_connections`), read on a connection of
    /// its own (which memcached counts before it answers).
    pub fn stat(&self, name: &str) -> u64 {
        let reply = self.stats().expect("reading memcached's stats");
        stat_in(&reply, name).unwrap_or_else(|| panic!("no STAT {name} in {reply}"))
    }

    /// The reply to `stats`, or `None` if the port does not give one within a second.
    fn stats(&self) -> Option<String> {
        let mut stream = TcpStream::connect(self.addr()).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
        stream.write_all(b"stats\r\n").ok()?;
        let mut reply = Vec::new();
        while !reply.ends_with(b"END\r\n") {
            let mut chunk = [0; 4096];
            let n = stream.read(&mut chunk).ok().filter(|&n| n > 0)?;
            reply.extend_from_slice(&chunk[..n]);
        }
        Some(String::from_utf8_lossy(&reply).into_owned())
    }

    /// Sends `signal` by name (e.g. "STOP", "CONT"). After "STOP", returns once every thread
    /// of memcached has stopped: `kill` returns when the signal is sent, and a worker thread
    /// busy on another core answered a spend after it in a loaded run.
    pub fn signal(&self, signal: &str) {
        crate::send_signal(self.pid(), signal);
        if signal == "STOP" {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !all_threads_stopped(self.pid()) {
                assert!(Instant::now() < deadline, "memcached did not stop in 10 s");
                thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// The counter `name` of a `stats` reply.
fn stat_in(reply: &str, name: &str) -> Option<u64> {
    let line = format!("STAT {name} ");
    reply
        .lines()
        .find_map(|l| l.strip_prefix(&line)?.parse().ok())
}

/// Whether every thread of process `pid` is in the stopped state (`T` in its `stat`).
fn all_threads_stopped(pid: u32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let stopped = |stat: String| {
        // The state follows the command name, which is in parentheses and may hold any byte.
        let state = stat.rsplit_once(')').map(|(_, rest)| rest.trim_start());
        state.is_some_and(|s| s.starts_with('T'))
    };
    tasks
        .flatten()
        .all(|task| std::fs::read_to_string(task.path().join("stat")).is_ok_and(stopped))
}

impl Drop for Memcached {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too.
        self.kill();
    }
}
