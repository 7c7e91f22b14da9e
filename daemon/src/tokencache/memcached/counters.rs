//! Per-server counters, rendered on `/metrics` with a `server` label.

use crate::metrics::{Counter, Exposition, Family, Gauge};

#[derive(Debug, Default)]
pub(crate) struct ServerCounters {
    pub(crate) commands: Counter,
    /// Socket writes; equals the number of batches, never more.
    pub(crate) writes: Counter,
    pub(crate) stored: Counter,
    pub(crate) not_stored: Counter,
    pub(crate) server_errors: Counter,
    pub(crate) timeouts: Counter,
    pub(crate) expired_in_queue: Counter,
    pub(crate) connection_failures: Counter,
    pub(crate) connections_up: Gauge,
    // From the periodic `stats` poll.
    pub(crate) evictions: Gauge,
    pub(crate) curr_items: Gauge,
    pub(crate) bytes: Gauge,
    pub(crate) limit_maxbytes: Gauge,
}

/// Every field above as a `/metrics` family.
const FAMILIES: [Family<ServerCounters>; 13] = [
    (
        "edgewise_memcached_commands_total",
        "counter",
        "Spend commands sent.",
        |c| c.commands.get() as i64,
    ),
    (
        "edgewise_memcached_writes_total",
        "counter",
        "Socket writes (one per pipelined batch).",
        |c| c.writes.get() as i64,
    ),
    (
        "edgewise_memcached_stored_total",
        "counter",
        "Spends stored (HD).",
        |c| c.stored.get() as i64,
    ),
    (
        "edgewise_memcached_not_stored_total",
        "counter",
        "Spends refused as present (NS).",
        |c| c.not_stored.get() as i64,
    ),
    (
        "edgewise_memcached_server_errors_total",
        "counter",
        "SERVER_ERROR replies (out of memory and others).",
        |c| c.server_errors.get() as i64,
    ),
    (
        "edgewise_memcached_timeouts_total",
        "counter",
        "Replies that missed their deadline (the connection is dropped).",
        |c| c.timeouts.get() as i64,
    ),
    (
        "edgewise_memcached_expired_in_queue_total",
        "counter",
        "Spends whose deadline passed before a connection took them.",
        |c| c.expired_in_queue.get() as i64,
    ),
    (
        "edgewise_memcached_connection_failures_total",
        "counter",
        "Failed connects and dropped connections.",
        |c| c.connection_failures.get() as i64,
    ),
    (
        "edgewise_memcached_connections_up",
        "gauge",
        "Open connections.",
        |c| c.connections_up.get(),
    ),
    (
        "edgewise_memcached_evictions",
        "gauge",
        "memcached's eviction counter: every eviction may let a spent token be spent again.",
        |c| c.evictions.get(),
    ),
    (
        "edgewise_memcached_curr_items",
        "gauge",
        "Records held by the server.",
        |c| c.curr_items.get(),
    ),
    (
        "edgewise_memcached_bytes",
        "gauge",
        "Bytes of records held by the server.",
        |c| c.bytes.get(),
    ),
    (
        "edgewise_memcached_limit_maxbytes",
        "gauge",
        "The server's memory limit (-m).",
        |c| c.limit_maxbytes.get(),
    ),
];

/// Writes every family, one sample per server.
pub(crate) fn render<'a>(
    page: &mut Exposition,
    servers: impl Iterator<Item = (&'a str, &'a ServerCounters)>,
) {
    let labels: Vec<([(&str, &str); 1], &ServerCounters)> =
        servers.map(|(addr, c)| ([("server", addr)], c)).collect();
    let sources: Vec<_> = labels.iter().map(|(l, c)| (&l[..], *c)).collect();
    page.families(&FAMILIES, &sources);
}
