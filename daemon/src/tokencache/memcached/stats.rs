//! Periodic `stats` polls: memcached evicting records is how a spent token becomes spendable
//! again, so evictions are exported and every increase is logged as a warning.

use std::{sync::Arc, time::Duration};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    time::timeout,
};

use super::{
    conn::{self, Link},
    proto,
};

/// Polls `link`'s server every `interval` until the returned task is aborted.
pub(crate) async fn poll(link: Arc<Link>, interval: Duration) {
    let mut last_evictions: Option<u64> = None;
    let mut ticker = tokio::time::interval(interval);
    loop {
        ticker.tick().await;
        match probe(&link).await {
            Ok(stats) => {
                if let Some(last) = last_evictions
                    && stats.evictions > last
                {
                    tracing::warn!(
                        server = %link.addr,
                        evicted = stats.evictions - last,
                        "memcached evicted records: evicted spent tokens can be spent again; \
                         give memcached more memory (-m)"
                    );
                }
                last_evictions = Some(stats.evictions);
            }
            Err(why) => tracing::debug!(server = %link.addr, %why, "stats poll failed"),
        }
    }
}

/// Fetches and records `link`'s stats on a connection of its own: also the readiness check,
/// since a server that answers `stats` can record spends.
pub(crate) async fn probe(link: &Link) -> Result<proto::ServerStats, String> {
    let limit = link.io_timeout.max(Duration::from_secs(1));
    let stats = timeout(limit, fetch(link))
        .await
        .map_err(|_| "stats timed out".to_owned())??;
    record(link, &stats);
    Ok(stats)
}

fn record(link: &Link, stats: &proto::ServerStats) {
    let c = &link.counters;
    let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    c.evictions.set(gauge(stats.evictions));
    c.curr_items.set(gauge(stats.curr_items));
    c.bytes.set(gauge(stats.bytes));
    c.limit_maxbytes.set(gauge(stats.limit_maxbytes));
}

async fn fetch(link: &Link) -> Result<proto::ServerStats, String> {
    let mut stream = conn::connect(link).await?;
    stream
        .write_all(b"stats\r\n")
        .await
        .map_err(|e| e.to_string())?;
    let mut reply = Vec::with_capacity(4096);
    loop {
        if stream
            .read_buf(&mut reply)
            .await
            .map_err(|e| e.to_string())?
            == 0
        {
            return Err("connection closed mid-reply".to_owned());
        }
        if let Some(stats) = proto::parse_stats(&reply) {
            return Ok(stats);
        }
        if reply.len() > 64 * 1024 {
            return Err("stats reply too long".to_owned());
        }
    }
}
