use super::*;

fn tally(votes: &[Result<Verdict, Fault>]) -> Result<Decision, Fault> {
    let mut tally = Tally::default();
    for vote in votes {
        tally.add(vote.clone());
    }
    tally.decide(votes.len() / 2 + 1)
}

const S: Result<Verdict, Fault> = Ok(Verdict::Stored);
const E: Result<Verdict, Fault> = Ok(Verdict::Exists);
const F: Result<Verdict, Fault> = Err(Fault::Timeout);

#[test]
fn single_server_votes_map_directly() {
    assert_eq!(tally(&[S]), Ok(Decision::Fresh));
    assert_eq!(tally(&[E]), Ok(Decision::Spent));
    assert_eq!(tally(&[F]), Err(Fault::Timeout));
}

#[test]
fn replicated_spend_needs_a_majority_of_stored() {
    assert_eq!(tally(&[S, S, F]), Ok(Decision::Fresh));
    assert_eq!(tally(&[S, F, F]), Err(Fault::Timeout));
    // A restarted, empty server says "stored" for a spent token: outvoted.
    assert_eq!(tally(&[E, E, S]), Ok(Decision::Spent));
    // Two replicas that lost the record (one restarted empty, one down when the token was
    // spent) are a majority of "stored": the one that kept it still decides.
    assert_eq!(tally(&[S, E, S]), Ok(Decision::Spent));
    assert_eq!(tally(&[S, S, S, S, E]), Ok(Decision::Spent));
    // A split between two concurrent redemptions: neither wins.
    assert_eq!(tally(&[S, E]), Ok(Decision::Spent));
    assert_eq!(tally(&[S, E, F]), Ok(Decision::Spent));
}

#[test]
fn a_fault_that_is_not_transient_is_the_one_reported() {
    let full = Err(Fault::Server("SERVER_ERROR out of memory".into()));
    assert_eq!(
        tally(&[F, full.clone(), S]),
        full.clone().map(|_| Decision::Fresh)
    );
    assert_eq!(tally(&[full.clone(), F, S]), full.map(|_| Decision::Fresh));
    let reset = Err(Fault::Connection("reset".into()));
    assert_eq!(tally(&[F, reset, S]), Err(Fault::Timeout));
}

#[test]
fn two_concurrent_redemptions_never_both_win() {
    // Each server stores the record for exactly one of A and B; enumerate every assignment.
    for servers in 1..=5usize {
        for mask in 0u32..(1 << servers) {
            let votes_a: Vec<_> = (0..servers)
                .map(|i| if mask & (1 << i) != 0 { S } else { E })
                .collect();
            let votes_b: Vec<_> = (0..servers)
                .map(|i| if mask & (1 << i) != 0 { E } else { S })
                .collect();
            let a = tally(&votes_a) == Ok(Decision::Fresh);
            let b = tally(&votes_b) == Ok(Decision::Fresh);
            assert!(!(a && b), "{servers} servers, mask {mask:b}");
        }
    }
}

/// A client of a server that never answers lets go of it once dropped: its connection tasks
/// retried connecting every 250 ms for as long as the process lived.
#[tokio::test]
async fn a_dropped_client_stops_reconnecting() {
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = unused.local_addr().unwrap().to_string();
    drop(unused);
    let config = MemcachedConfig {
        servers: vec![addr],
        timeout_ms: 20,
        ..MemcachedConfig::default()
    };
    let client = Memcached::start(&config, "t:", &WorkspaceSettings::default()).unwrap();
    let link = Arc::downgrade(&client.servers[0].link);
    tokio::time::sleep(Duration::from_millis(50)).await;
    drop(client);
    let deadline = Instant::now() + Duration::from_secs(3);
    while link.strong_count() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} tasks still hold the dropped client's server",
            link.strong_count()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
