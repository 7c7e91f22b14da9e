//! The token cache against a real memcached: exactly-once under concurrency, fail-closed under
//! every fault the issue names, recovery, replication.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use edgewise_daemon::{
    MemcachedConfig, Outcome, Spend, TokenCache, TokensConfig, WorkspaceSettings,
};
use edgewise_tests::{Memcached, sample};

/// The memcached deadline of the tests that fail memcached: short, so that they show a spend
/// fails closed that soon.
const DEADLINE: Duration = Duration::from_millis(100);

/// The deadline of tests that need every spend answered: a VM stalled for 100 ms (two test
/// threads of this binary run at a time, some filling memcached with 100 MB) is the deadline
/// working, not a double spend, but it failed the spend the test counts on.
const PATIENT: Duration = Duration::from_secs(5);

/// How much later than its deadline a spend that fails closed may end: a stalled VM delays the
/// answer, a hang never ends.
const LATE: Duration = Duration::from_secs(1);

/// A spend key no other test uses.
fn token() -> Spend {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let seed = std::process::id() as u64;
    let mut key = [0; 32];
    // Spread the bits so rendezvous hashing sees uniform keys.
    key[..8].copy_from_slice(&(n.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ seed).to_le_bytes());
    key[8..16].copy_from_slice(&n.to_le_bytes());
    Spend {
        key,
        not_after: None,
    }
}

fn cache(servers: &[&Memcached], replicas: usize, deadline: Duration) -> TokenCache {
    let config = TokensConfig {
        memcached: MemcachedConfig {
            servers: servers.iter().map(|m| m.addr()).collect(),
            replicas,
            timeout_ms: deadline.as_millis() as u64,
            ..MemcachedConfig::default()
        },
        ..TokensConfig::default()
    };
    TokenCache::start(&config, &WorkspaceSettings::default()).unwrap()
}

/// Redeems every spend concurrently, one task each; outcomes in order.
async fn redeem_all(cache: &Arc<TokenCache>, spends: &[Spend]) -> Vec<Outcome> {
    let tasks: Vec<_> = spends
        .iter()
        .map(|&spend| {
            let cache = Arc::clone(cache);
            tokio::spawn(async move { cache.redeem(&spend).await })
        })
        .collect();
    let mut outcomes = Vec::new();
    for task in tasks {
        outcomes.push(task.await.unwrap());
    }
    outcomes
}

/// Redeems fresh tokens until one succeeds; returns how long that took.
async fn time_to_recover(cache: &TokenCache, limit: Duration) -> Duration {
    let started = Instant::now();
    while started.elapsed() < limit {
        if cache.redeem(&token()).await == Outcome::Fresh {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("no recovery within {limit:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_redemptions_of_one_token_yield_one_fresh() {
    let memcached = Memcached::start(&[]);
    let cache = Arc::new(cache(&[&memcached], 1, PATIENT));
    let spend = token();
    let outcomes = redeem_all(&cache, &[spend; 1000]).await;
    let fresh = outcomes.iter().filter(|o| **o == Outcome::Fresh).count();
    let spent = outcomes.iter().filter(|o| **o == Outcome::Spent).count();
    assert_eq!((fresh, spent), (1, 999), "{outcomes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_tokens_each_spend_once() {
    let memcached = Memcached::start(&[]);
    let cache = Arc::new(cache(&[&memcached], 1, PATIENT));
    let spends: Vec<Spend> = (0..500).map(|_| token()).collect();
    for round in [Outcome::Fresh, Outcome::Spent] {
        assert!(
            redeem_all(&cache, &spends)
                .await
                .iter()
                .all(|o| *o == round)
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_memcached_fails_closed_within_the_deadline_and_recovers() {
    let mut memcached = Memcached::start(&[]);
    let cache = cache(&[&memcached], 1, DEADLINE);
    assert_eq!(cache.redeem(&token()).await, Outcome::Fresh);

    memcached.kill();
    let mut took = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        assert_eq!(cache.redeem(&token()).await, Outcome::Unavailable);
        took.push(started.elapsed());
    }
    assert_within_the_deadline(took);

    memcached.restart();
    let recovered = time_to_recover(&cache, Duration::from_secs(3)).await;
    eprintln!("recovered {recovered:?} after memcached restarted");
    // The reconnect backoff is capped at 250 ms.
    assert!(recovered < Duration::from_secs(2), "{recovered:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_memcached_holds_deadlines_and_never_cross_talks_after() {
    let memcached = Memcached::start(&[]);
    let cache = Arc::new(cache(&[&memcached], 1, DEADLINE));
    assert_eq!(cache.redeem(&token()).await, Outcome::Fresh);

    memcached.signal("STOP");
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move {
                let started = Instant::now();
                (cache.redeem(&token()).await, started.elapsed())
            })
        })
        .collect();
    let mut took = Vec::new();
    for task in tasks {
        let (outcome, elapsed) = task.await.unwrap();
        assert_eq!(outcome, Outcome::Unavailable);
        took.push(elapsed);
    }
    assert_within_the_deadline(took);
    memcached.signal("CONT");

    // memcached now works through what was queued on the abandoned connections; every new
    // spend must still get its own answer: fresh first, spent after. On a stalled VM a spend
    // may miss the short deadline (unavailable), which is no answer meant for another spend:
    // allowed only if the deadline counters show it, and never a wrong answer.
    time_to_recover(&cache, Duration::from_secs(3)).await;
    let misses_before = deadline_misses(&cache, &memcached);
    let spends: Vec<Spend> = (0..300).map(|_| token()).collect();
    let first = redeem_all(&cache, &spends).await;
    let second = redeem_all(&cache, &spends).await;
    let missed = deadline_misses(&cache, &memcached) > misses_before;
    for (a, b) in first.iter().zip(&second) {
        match (a, b) {
            (Outcome::Fresh, Outcome::Spent) => {}
            (Outcome::Unavailable, _) | (Outcome::Fresh, Outcome::Unavailable) if missed => {}
            _ => panic!("{a:?} then {b:?}; deadline missed: {missed}\n{first:?}\n{second:?}"),
        }
    }
}

/// The cache's metrics, as the daemon's `/metrics` page shows them.
fn metrics_page(cache: &TokenCache) -> String {
    let mut page = edgewise_daemon::metrics::Exposition::default();
    cache.render(&mut page);
    page.finish()
}

/// Spends that missed their deadline at `memcached`: replies that timed out, and spends that
/// expired while queued.
fn deadline_misses(cache: &TokenCache, memcached: &Memcached) -> f64 {
    let page = metrics_page(cache);
    ["timeouts_total", "expired_in_queue_total"]
        .iter()
        .map(|name| {
            let series = format!(
                "edgewise_memcached_{name}{{server=\"{}\"}}",
                memcached.addr()
            );
            sample(&page, &series).unwrap_or_else(|| panic!("no {series} in\n{page}"))
        })
        .sum()
}

/// Spends that failed closed did so at their deadline: most within three times it, none
/// later than [`LATE`] past it (a stalled VM delays an answer; a hang never ends).
fn assert_within_the_deadline(mut took: Vec<Duration>) {
    took.sort();
    assert!(took[took.len() / 2] < DEADLINE * 3, "{took:?}");
    assert!(took[took.len() - 1] < DEADLINE + LATE, "{took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_memcached_means_unavailable() {
    let memcached = Memcached::start(&["-m", "2", "-M"]);
    fill(&memcached.addr());
    let cache = cache(&[&memcached], 1, PATIENT);
    for _ in 0..10 {
        assert_eq!(cache.redeem(&token()).await, Outcome::Unavailable);
    }
    let page = metrics_page(&cache);
    assert!(
        page.contains("edgewise_token_redemptions_total{outcome=\"unavailable\"} 10"),
        "{page}"
    );
    let server_errors = format!(
        "edgewise_memcached_server_errors_total{{server=\"{}\"}} 10\n",
        memcached.addr()
    );
    assert!(page.contains(&server_errors), "{page}");
}

/// Stores values until memcached (run with -M) refuses for lack of memory: large ones first,
/// then ones the size of a spend record, so that no slab class has room left.
fn fill(addr: &str) {
    let mut conn = RawConnection::open(addr);
    for (size, limit) in [(100 * 1024, 1_000), (1, 1_000_000)] {
        let value = vec![b'x'; size];
        let full = (0..limit).any(|i| {
            let line = conn.set(&format!("ew:pp:fill-{size}-{i:058}"), &value);
            assert!(
                line == "STORED\r\n" || line.starts_with("SERVER_ERROR out of memory"),
                "{line}"
            );
            line.starts_with("SERVER_ERROR")
        });
        assert!(
            full,
            "memcached -M never ran out of memory for {size}-byte values"
        );
    }
}

/// Stores far more than memcached's memory holds, so that it evicts.
fn evict(addr: &str) {
    let mut conn = RawConnection::open(addr);
    let value = vec![b'x'; 100 * 1024];
    for i in 0..100 {
        assert_eq!(conn.set(&format!("evict{i}"), &value), "STORED\r\n");
    }
}

/// A plain text-protocol connection, for setting memcached up behind the cache's back.
struct RawConnection {
    reader: std::io::BufReader<std::net::TcpStream>,
    writer: std::net::TcpStream,
}

impl RawConnection {
    fn open(addr: &str) -> RawConnection {
        let stream = std::net::TcpStream::connect(addr).unwrap();
        let reader = std::io::BufReader::new(stream.try_clone().unwrap());
        RawConnection {
            reader,
            writer: stream,
        }
    }

    /// One `set`, in one write; returns the reply line.
    fn set(&mut self, key: &str, value: &[u8]) -> String {
        use std::io::{BufRead, Write};
        let mut command = format!("set {key} 0 0 {}\r\n", value.len()).into_bytes();
        command.extend_from_slice(value);
        command.extend_from_slice(b"\r\n");
        self.writer.write_all(&command).unwrap();
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        line
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicated_spends_survive_one_restarted_empty_server() {
    let mut servers = [
        Memcached::start(&[]),
        Memcached::start(&[]),
        Memcached::start(&[]),
    ];
    let cache = cache(&servers.iter().collect::<Vec<_>>(), 3, PATIENT);
    let spends: Vec<Spend> = (0..200).map(|_| token()).collect();
    for spend in &spends {
        assert_eq!(cache.redeem(spend).await, Outcome::Fresh);
    }
    servers[1].restart();
    time_to_recover(&cache, Duration::from_secs(3)).await;
    for spend in &spends {
        assert_eq!(cache.redeem(spend).await, Outcome::Spent);
    }
    // With one server down, two of three still decide.
    servers[2].kill();
    let spend = token();
    assert_eq!(cache.redeem(&spend).await, Outcome::Fresh);
    assert_eq!(cache.redeem(&spend).await, Outcome::Spent);
}

/// Tokens spent while one replica was down; that replica then back empty and another restarted
/// empty: both answer "stored" to every replay, a majority of three, and the one that kept the
/// records still refuses them all. The replays repair the two that lost the records.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_kept_the_record_outvotes_two_that_lost_it() {
    let mut servers = [
        Memcached::start(&[]),
        Memcached::start(&[]),
        Memcached::start(&[]),
    ];
    let config = TokensConfig {
        memcached: MemcachedConfig {
            servers: servers.iter().map(Memcached::addr).collect(),
            replicas: 3,
            // One connection a server, so that one failed batch tells it the server restarted.
            connections: 1,
            // Short: every spend waits it out on the server that is down.
            timeout_ms: 1000,
            ..MemcachedConfig::default()
        },
        ..TokensConfig::default()
    };
    let cache = Arc::new(TokenCache::start(&config, &WorkspaceSettings::default()).unwrap());
    servers[2].kill();
    let spends: Vec<Spend> = (0..40).map(|_| token()).collect();
    let outcomes = redeem_all(&cache, &spends).await;
    assert!(
        outcomes.iter().all(|o| *o == Outcome::Fresh),
        "{outcomes:?}"
    );

    servers[2].restart();
    servers[0].restart();
    // Fresh tokens until both emptied replicas store them: the client is connected to each.
    let deadline = Instant::now() + Duration::from_secs(20);
    while [0, 2].map(|i| servers[i].stat("curr_items")).contains(&0) {
        assert!(Instant::now() < deadline, "the client did not reconnect");
        cache.redeem(&token()).await;
    }
    let replays = redeem_all(&cache, &spends).await;
    assert!(replays.iter().all(|o| *o == Outcome::Spent), "{replays:?}");

    // Repaired: without the replica that kept them, the two others hold every record now.
    servers[1].kill();
    let replays = redeem_all(&cache, &spends).await;
    assert!(replays.iter().all(|o| *o == Outcome::Spent), "{replays:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_is_explicit_and_counted() {
    let mut memcached = Memcached::start(&[]);
    let config = TokensConfig {
        fail_open: true,
        memcached: MemcachedConfig {
            servers: vec![memcached.addr()],
            timeout_ms: 50,
            ..MemcachedConfig::default()
        },
        ..TokensConfig::default()
    };
    let cache = TokenCache::start(&config, &WorkspaceSettings::default()).unwrap();
    memcached.kill();
    assert_eq!(cache.redeem(&token()).await, Outcome::Fresh);
    let page = metrics_page(&cache);
    assert!(
        page.contains("edgewise_token_redemptions_total{outcome=\"failed_open\"} 1"),
        "{page}"
    );
    assert!(page.contains("edgewise_token_fail_open 1"), "{page}");
}

/// Fail-open admits a token only on a transient I/O fault. A full memcached, a full embedded
/// store, a queue past its depth and an issuer key that outlives every record are refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_never_admits_what_was_refused() {
    let fail_open = |memcached: MemcachedConfig, embedded_max_records| {
        let config = TokensConfig {
            fail_open: true,
            embedded_max_records,
            memcached,
            ..TokensConfig::default()
        };
        Arc::new(TokenCache::start(&config, &WorkspaceSettings::default()).unwrap())
    };
    let on = |memcached: &Memcached, queue_depth| MemcachedConfig {
        servers: vec![memcached.addr()],
        timeout_ms: 200,
        queue_depth,
        ..MemcachedConfig::default()
    };

    let full = Memcached::start(&["-m", "2", "-M"]);
    fill(&full.addr());
    let cache = fail_open(on(&full, 8192), 10);
    assert_eq!(cache.redeem(&token()).await, Outcome::Unavailable);

    let cache = fail_open(MemcachedConfig::default(), 1);
    let outcomes = redeem_all(&cache, &(0..64).map(|_| token()).collect::<Vec<_>>()).await;
    assert!(outcomes.contains(&Outcome::Unavailable), "{outcomes:?}");

    let stopped = Memcached::start(&[]);
    stopped.signal("STOP");
    let cache = fail_open(on(&stopped, 1), 10);
    // Each of the 4 connections holds a spend or two while it waits on the stopped server,
    // the queue one more: most of 64 find it full.
    let outcomes = redeem_all(&cache, &(0..64).map(|_| token()).collect::<Vec<_>>()).await;
    stopped.signal("CONT");
    assert!(outcomes.contains(&Outcome::Unavailable), "{outcomes:?}");

    let live = Memcached::start(&[]);
    let cache = fail_open(on(&live, 8192), 10);
    let years = Spend {
        not_after: Some(u64::MAX / 2),
        ..token()
    };
    assert_eq!(cache.redeem(&years).await, Outcome::Unavailable);
    let page = metrics_page(&cache);
    assert!(
        page.contains("edgewise_token_redemptions_total{outcome=\"failed_open\"} 0"),
        "{page}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcached_evictions_are_exported() {
    // Without -M a full memcached evicts; every eviction may free a spent token.
    let memcached = Memcached::start(&["-m", "2"]);
    let config = TokensConfig {
        memcached: MemcachedConfig {
            servers: vec![memcached.addr()],
            stats_interval_secs: 1,
            ..MemcachedConfig::default()
        },
        ..TokensConfig::default()
    };
    let cache = TokenCache::start(&config, &WorkspaceSettings::default()).unwrap();
    evict(&memcached.addr());
    let deadline = Instant::now() + Duration::from_secs(5);
    let name = format!(
        "edgewise_memcached_evictions{{server=\"{}\"}}",
        memcached.addr()
    );
    loop {
        let page = metrics_page(&cache);
        if sample(&page, &name).unwrap_or(0.0) > 0.0 {
            break;
        }
        assert!(Instant::now() < deadline, "no evictions exported:\n{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
