#![allow(clippy::unwrap_used)]

use super::*;

fn cache(max_ttl_secs: u64) -> TokenCache {
    let config = TokensConfig {
        max_ttl_secs,
        ..TokensConfig::default()
    };
    TokenCache::start(&config, &WorkspaceSettings::default()).unwrap()
}

const DAY: u64 = 24 * 3600;

/// A record outlives its key by the clock skew allowed: the worker accepts a key's tokens
/// while its own clock reads `not_after` or less, and may run behind.
#[test]
fn records_outlive_their_key_by_the_skew_allowed() {
    let cache = cache(400 * DAY);
    let now = 2_000_000_000;
    let not_after = now + 3600;
    assert_eq!(
        cache.expiry(now, Some(not_after)),
        Ok(not_after + CLOCK_SKEW_SECS + 1)
    );
    let just_expired = now - 10;
    assert_eq!(
        cache.expiry(now, Some(just_expired)),
        Ok(just_expired + CLOCK_SKEW_SECS + 1)
    );
    // A key long expired (whose tokens the worker refuses): a record still lives a while.
    assert_eq!(cache.expiry(now, Some(now - DAY)), Ok(now + MIN_TTL));
    assert_eq!(cache.expiry(now, None), Ok(now + 7 * DAY));
}

/// A key expiring after the longest-lived record would outlive its tokens' records: its
/// tokens are not decided (`unavailable`), rather than spendable again once the record dies.
#[tokio::test]
async fn a_key_outliving_every_record_is_refused() {
    let cache = cache(30 * DAY);
    let now = unix_now();
    assert_eq!(
        cache.expiry(now, Some(now + 31 * DAY)),
        Err(Fault::KeyOutlivesRecords)
    );
    let spend = |not_after| Spend {
        key: [7; 32],
        not_after: Some(not_after),
    };
    assert_eq!(
        cache.redeem(&spend(now + 31 * DAY)).await,
        Outcome::Unavailable
    );
    assert_eq!(cache.redeem(&spend(now + 29 * DAY)).await, Outcome::Fresh);
    assert_eq!(cache.redeem(&spend(now + 29 * DAY)).await, Outcome::Spent);
}
