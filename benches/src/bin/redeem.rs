//! Token redemption throughput and latency against a real memcached on loopback.
//!
//!   redeem [--secs S] [--clients N]     (scripts/bench-redeem.sh runs it in release)
//!
//! Table 1, the memcached layer: edgewise's pipelining client beside the two client patterns the
//! article's proxies suffered from -- `add` sent as three small writes on a pooled connection
//! without TCP_NODELAY (Nagle + delayed ACK), and a new connection per request.
//! Table 2, the whole `POST /v1/tokens/redeem` endpoint (edgewised in this process, its HTTP
//! clients too: both share the machine's cores), with every other request a replay that must
//! come back `spent`: any replay accepted is a double spend and is counted.

use std::{
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use edgewise_benches::loadgen::{HttpConnection, Latencies, Row, flags, print_table};
use edgewise_daemon::{
    Config, MemcachedConfig, Outcome, Server, Spend, TokenCache, TokensConfig, WorkspaceSettings,
};
use edgewise_tests::Memcached;
use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
    sync::Mutex,
};

const SECRET: &str = "bench-secret-0123456789abcdef";

#[derive(Debug, Clone, Copy)]
struct Args {
    secs: f64,
    clients: usize,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        secs: 5.0,
        clients: 64,
    };
    flags(|flag, value: f64| {
        match flag {
            "--secs" => args.secs = value,
            "--clients" if value >= 1.0 && value.fract() == 0.0 => args.clients = value as usize,
            "--clients" => return Err(format!("--clients: {value} is not a whole number")),
            _ => return Err(format!("unknown flag {flag}")),
        }
        Ok(())
    })?;
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("redeem: {e}\nusage: redeem [--secs S] [--clients N]");
            return ExitCode::FAILURE;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("redeem: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

async fn run(args: Args) -> ExitCode {
    let memcached = Memcached::start(&["-m", "1024"]);
    let duration = Duration::from_secs_f64(args.secs);
    println!(
        "memcached {} on loopback, {} clients, {:.1} s per row, {} cores",
        memcached.addr(),
        args.clients,
        args.secs,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );

    let cache = match TokenCache::start(&tokens_config(&memcached), &WorkspaceSettings::default()) {
        Ok(cache) => Arc::new(cache),
        Err(e) => {
            eprintln!("redeem: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let layer = vec![
        pipelined(&cache, args.clients, duration, "edgewise pipelined pool").await,
        pipelined(
            &cache,
            1024,
            duration,
            "edgewise pipelined pool, 1024 tasks",
        )
        .await,
        in_flight(&cache, 4, 256, duration).await,
        three_writes(
            &memcached.addr(),
            args.clients,
            duration.min(Duration::from_secs(3)),
        )
        .await,
        connection_per_request(&memcached.addr(), args.clients, duration).await,
    ];
    print_table("memcached layer: one set-if-absent per op", &layer);

    match endpoint(&memcached, args.clients, duration).await {
        Ok((rows, double)) => {
            print_table("POST /v1/tokens/redeem (half fresh, half replays)", &rows);
            println!("\ndouble accepts: {double}");
            if double > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            eprintln!("redeem: endpoint run failed: {e}");
            ExitCode::FAILURE
        }
    }
}

fn tokens_config(memcached: &Memcached) -> TokensConfig {
    TokensConfig {
        memcached: MemcachedConfig {
            servers: vec![memcached.addr()],
            ..MemcachedConfig::default()
        },
        ..TokensConfig::default()
    }
}

/// A spend key never used before in this process.
fn fresh_key() -> [u8; 32] {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut key = [0; 32];
    key[..8].copy_from_slice(&n.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes());
    static PID: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    key[8..16].copy_from_slice(
        &PID.get_or_init(|| u64::from(std::process::id()))
            .to_le_bytes(),
    );
    key
}

async fn pipelined(cache: &Arc<TokenCache>, clients: usize, duration: Duration, name: &str) -> Row {
    let end = Instant::now() + duration;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let cache = Arc::clone(cache);
            tokio::spawn(async move {
                let mut latencies = Latencies::default();
                let mut undecided = 0u64;
                while Instant::now() < end {
                    let spend = Spend {
                        key: fresh_key(),
                        not_after: None,
                    };
                    let t = Instant::now();
                    if cache.redeem(&spend).await != Outcome::Fresh {
                        undecided += 1;
                    }
                    latencies.record(t.elapsed());
                }
                (latencies, undecided)
            })
        })
        .collect();
    let (latencies, undecided) = join(tasks).await;
    Row::new(
        name,
        latencies,
        started.elapsed(),
        format!("{undecided} not fresh"),
    )
}

/// `tasks` tasks, each keeping `depth` redemptions in flight at once: the client layer without
/// one task wake-up per redemption, as a batch consumer (or a proxy multiplexing many requests
/// on one task) would drive it.
async fn in_flight(cache: &Arc<TokenCache>, tasks: usize, depth: usize, duration: Duration) -> Row {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let end = Instant::now() + duration;
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|_| {
            let cache = Arc::clone(cache);
            tokio::spawn(async move {
                let redeem = |cache: Arc<TokenCache>| async move {
                    let spend = Spend {
                        key: fresh_key(),
                        not_after: None,
                    };
                    let t = Instant::now();
                    let outcome = cache.redeem(&spend).await;
                    (outcome, t.elapsed())
                };
                let mut pending: FuturesUnordered<_> =
                    (0..depth).map(|_| redeem(Arc::clone(&cache))).collect();
                let mut latencies = Latencies::default();
                let mut undecided = 0u64;
                while let Some((outcome, took)) = pending.next().await {
                    latencies.record(took);
                    undecided += u64::from(outcome != Outcome::Fresh);
                    if Instant::now() < end {
                        pending.push(redeem(Arc::clone(&cache)));
                    }
                }
                (latencies, undecided)
            })
        })
        .collect();
    let (latencies, undecided) = join(handles).await;
    let name = format!("edgewise pipelined pool, {tasks} tasks × {depth} in flight");
    Row::new(
        &name,
        latencies,
        started.elapsed(),
        format!("{undecided} not fresh"),
    )
}

async fn join(tasks: Vec<tokio::task::JoinHandle<(Latencies, u64)>>) -> (Latencies, u64) {
    let mut all = Latencies::default();
    let mut count = 0;
    for task in tasks {
        if let Ok((latencies, n)) = task.await {
            all.merge(latencies);
            count += n;
        }
    }
    (all, count)
}

/// The article's client: a pool of 20 connections, no TCP_NODELAY, each `add` written as the
/// command line, the value and the terminator in three writes.
async fn three_writes(addr: &str, clients: usize, duration: Duration) -> Row {
    let mut pool = Vec::new();
    for _ in 0..20 {
        match TcpStream::connect(addr).await {
            Ok(stream) => pool.push(Arc::new(Mutex::new(BufReader::new(stream)))),
            Err(e) => return failed_row("three writes per add, pool of 20", &e.to_string()),
        }
    }
    let end = Instant::now() + duration;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let conn = Arc::clone(&pool[i % pool.len()]);
            tokio::spawn(async move {
                let mut latencies = Latencies::default();
                let mut errors = 0;
                while Instant::now() < end {
                    let t = Instant::now();
                    let mut conn = conn.lock().await;
                    if add_in_three_writes(&mut conn, &fresh_key()).await.is_err() {
                        errors += 1;
                    }
                    drop(conn);
                    latencies.record(t.elapsed());
                }
                (latencies, errors)
            })
        })
        .collect();
    let (latencies, errors) = join(tasks).await;
    Row::new(
        "three writes per add, pool of 20",
        latencies,
        started.elapsed(),
        format!("{errors} errors"),
    )
}

async fn add_in_three_writes(
    conn: &mut BufReader<TcpStream>,
    key: &[u8; 32],
) -> std::io::Result<()> {
    let line = format!("add ew:bench:{} 0 3600 1\r\n", hex(key));
    let stream = conn.get_mut();
    stream.write_all(line.as_bytes()).await?;
    stream.write_all(b"1").await?;
    stream.write_all(b"\r\n").await?;
    let mut reply = String::new();
    conn.read_line(&mut reply).await?;
    if reply == "STORED\r\n" {
        Ok(())
    } else {
        Err(std::io::Error::other(reply))
    }
}

/// A new connection (with TCP_NODELAY, one write) for every spend.
async fn connection_per_request(addr: &str, clients: usize, duration: Duration) -> Row {
    let end = Instant::now() + duration;
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let addr = addr.to_owned();
            tokio::spawn(async move {
                let mut latencies = Latencies::default();
                let mut errors = 0;
                while Instant::now() < end {
                    let t = Instant::now();
                    if add_on_new_connection(&addr, &fresh_key()).await.is_err() {
                        errors += 1;
                    }
                    latencies.record(t.elapsed());
                }
                (latencies, errors)
            })
        })
        .collect();
    let (latencies, errors) = join(tasks).await;
    Row::new(
        "new connection per request",
        latencies,
        started.elapsed(),
        format!("{errors} errors"),
    )
}

async fn add_on_new_connection(addr: &str, key: &[u8; 32]) -> std::io::Result<()> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut conn = BufReader::new(stream);
    let command = format!("ms ew:bench:{} 1 T3600 ME\r\n1\r\n", hex(key));
    conn.get_mut().write_all(command.as_bytes()).await?;
    let mut reply = String::new();
    conn.read_line(&mut reply).await?;
    if reply == "HD\r\n" {
        Ok(())
    } else {
        Err(std::io::Error::other(reply))
    }
}

fn failed_row(name: &str, why: &str) -> Row {
    Row::new(
        name,
        Latencies::default(),
        Duration::from_secs(1),
        format!("failed: {why}"),
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The redeem endpoint of an in-process edgewised, each client sending its next request as soon
/// as the last one is answered; returns the rows and the double accepts.
async fn endpoint(
    memcached: &Memcached,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<(Vec<Row>, u64)> {
    let mut config = Config::default();
    config.server.listen = ([127, 0, 0, 1], 0).into();
    config.tokens = tokens_config(memcached);
    // Through a secret file, as in production: setting the environment variable from a
    // multi-threaded process would be unsound.
    let secret_file =
        std::env::temp_dir().join(format!("edgewise-bench-secret-{}", std::process::id()));
    std::fs::write(&secret_file, SECRET)?;
    config.api.secret_file = Some(secret_file.clone());
    let server = Server::bind(config).await?;
    let addr = server.local_addr()?;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run(async move {
        let _ = stopped.await;
    }));

    // The issue's 64 clients, then fewer: in a closed loop, latency is concurrency divided by
    // throughput (Little's law), so the same server shows its latency at lower concurrency.
    let mut rows = Vec::new();
    let mut double = 0;
    for n in [clients, (clients / 4).max(1)] {
        let (latencies, doubles, elapsed) = drive(addr, n, duration).await?;
        double += doubles;
        let name = format!("{n} keep-alive clients");
        rows.push(Row::new(&name, latencies, elapsed, "closed loop".into()));
    }
    let _ = stop.send(());
    let _ = serving.await;
    let _ = std::fs::remove_file(secret_file);
    Ok((rows, double))
}

/// `clients` keep-alive connections redeeming back to back for `duration`.
async fn drive(
    addr: std::net::SocketAddr,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<(Latencies, u64, Duration)> {
    let end = Instant::now() + duration;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let mut conn = HttpConnection::connect(addr).await?;
        tasks.push(tokio::spawn(async move {
            let auth = format!("Bearer {SECRET}");
            let mut latencies = Latencies::default();
            let mut double = 0;
            let mut replay: Option<String> = None;
            while Instant::now() < end {
                let (body, is_replay) = match replay.take() {
                    Some(body) => (body, true),
                    None => (redeem_body(&fresh_key()), false),
                };
                let t = Instant::now();
                let Ok((status, answer)) =
                    conn.post("/v1/tokens/redeem", &auth, body.as_bytes()).await
                else {
                    break;
                };
                latencies.record(t.elapsed());
                let fresh = status == 200 && answer == br#"{"outcome":"fresh"}"#;
                if is_replay && fresh {
                    double += 1;
                }
                if !is_replay {
                    replay = Some(body);
                }
            }
            (latencies, double)
        }));
    }
    let (latencies, double) = join(tasks).await;
    Ok((latencies, double, started.elapsed()))
}

fn redeem_body(nonce: &[u8; 32]) -> String {
    format!(
        r#"{{"token_type":2,"token_key_id":"{}","nonce":"{}"}}"#,
        "ab".repeat(32),
        hex(nonce)
    )
}
