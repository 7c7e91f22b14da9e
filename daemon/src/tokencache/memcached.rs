//! The production spend store: one or more memcached servers, each behind a bounded queue and a
//! small pool of pipelining connections.
//!
//! Concurrency comes from pipelining, not from connections: every connection sends whatever
//! spends are queued as one batch in one write, so 64 concurrent redemptions need a few
//! connections, not 64, and none waits behind a pool slot (the article's pool of 20 made
//! requests queue). Placement is rendezvous hashing over the configured servers; with
//! `replicas = R` a spend is sent to R servers and is fresh only on a majority of "stored" with
//! no replica reporting the record: a replica that lost it (restarted empty, or down when the
//! token was spent) never outvotes one that kept it, and of two concurrent redemptions at most
//! one wins. The set-if-absent that asks a replica also repairs it: a replica that missed a
//! record holds it again once the token is next seen.

mod conn;
mod counters;
mod proto;
mod ring;
mod stats;

use std::{sync::Arc, time::Duration};

use tokio::{
    sync::{Mutex, mpsc, oneshot},
    task::JoinHandle,
    time::{Instant, timeout_at},
};

use self::conn::{Job, Link, Verdict};
use super::{Decision, Fault};
use crate::{
    config::{MemcachedConfig, WorkspaceSettings},
    metrics::Exposition,
    workspaces::WorkspacePool,
};

/// A started memcached client; dropping it closes the queues and stops its tasks.
#[derive(Debug)]
pub struct Memcached {
    servers: Vec<Server>,
    seeds: Vec<u64>,
    replicas: usize,
    timeout: Duration,
    pollers: Vec<JoinHandle<()>>,
    workspaces: Arc<WorkspacePool>,
}

/// Room for a full batch of commands (each ~110 bytes plus the key prefix) and of replies (a
/// `HD O<n>` line each, or up to a `SERVER_ERROR` line), rounded up to whole pages.
fn workspace_size(max_batch: usize, prefix_len: usize) -> usize {
    let commands = max_batch * (prefix_len + 112);
    let replies = max_batch * 64 + proto::MAX_LINE;
    (commands + replies + 4096).next_multiple_of(4096)
}

#[derive(Debug)]
struct Server {
    link: Arc<Link>,
    queue: mpsc::Sender<Job>,
}

impl Memcached {
    /// Spawns the connections and stats pollers; call from within a Tokio runtime.
    pub(crate) fn start(
        config: &MemcachedConfig,
        prefix: &str,
        workspace: &WorkspaceSettings,
    ) -> anyhow::Result<Memcached> {
        let size = workspace_size(config.max_batch, prefix.len());
        let workspaces = WorkspacePool::new("memcached", workspace.config(size)?);
        let prefix: Arc<str> = Arc::from(prefix);
        let servers: Vec<Server> = config
            .servers
            .iter()
            .map(|addr| Server::start(addr, &prefix, config, &workspaces))
            .collect();
        let pollers = servers
            .iter()
            .map(|s| tokio::spawn(stats::poll(Arc::clone(&s.link), config.stats_interval())))
            .collect();
        Ok(Memcached {
            seeds: config.servers.iter().map(|a| ring::seed(a)).collect(),
            replicas: config.replicas.clamp(1, servers.len().max(1)),
            timeout: config.timeout(),
            servers,
            pollers,
            workspaces,
        })
    }

    /// Records a spend on its owners; see the module docs for the vote.
    pub(crate) async fn spend(
        &self,
        key: &[u8; 32],
        now: u64,
        expires_at: u64,
    ) -> Result<Decision, Fault> {
        let deadline = Instant::now() + self.timeout;
        let exptime = proto::exptime(now, expires_at);
        let owners = ring::owners(&self.seeds, key, self.replicas);
        // Queue on every owner before waiting on any, so the replicas work in parallel.
        let pending: Vec<_> = owners
            .iter()
            .map(|&i| self.servers[i].submit(*key, exptime, deadline))
            .collect();
        let mut tally = Tally::default();
        for reply in pending {
            tally.add(wait(reply, deadline).await);
        }
        tally.decide(self.quorum())
    }

    /// Writes the per-server families.
    pub(crate) fn render(&self, page: &mut Exposition) {
        let servers = self
            .servers
            .iter()
            .map(|s| (s.link.addr.as_str(), &*s.link.counters));
        counters::render(page, servers);
        WorkspacePool::render(page, &[&self.workspaces]);
    }

    /// Whether every spend can still reach a quorum of its owners: at most `replicas - quorum`
    /// servers may be unreachable. The detail names each server's state.
    pub(crate) async fn readiness(&self) -> Result<String, String> {
        let mut probes = tokio::task::JoinSet::new();
        for (i, server) in self.servers.iter().enumerate() {
            let link = Arc::clone(&server.link);
            probes.spawn(async move { (i, stats::probe(&link).await) });
        }
        // A probe that never reports (its task failed) counts as down: readiness fails closed.
        let mut states: Vec<String> = self
            .servers
            .iter()
            .map(|s| format!("{} down (probe failed)", s.link.addr))
            .collect();
        let mut up = 0;
        while let Some(joined) = probes.join_next().await {
            let Ok((i, result)) = joined else { continue };
            let addr = &self.servers[i].link.addr;
            states[i] = match result {
                Ok(_) => {
                    up += 1;
                    format!("{addr} up")
                }
                Err(why) => format!("{addr} down ({why})"),
            };
        }
        let detail = format!("memcached: {}", states.join(", "));
        let down = self.servers.len() - up;
        if down <= self.replicas - self.quorum() {
            Ok(detail)
        } else {
            Err(detail)
        }
    }

    /// Owners that must record a spend for it to be fresh: a majority of the replicas.
    fn quorum(&self) -> usize {
        self.replicas / 2 + 1
    }

    pub(crate) fn describe(&self) -> String {
        let addrs: Vec<&str> = self.servers.iter().map(|s| s.link.addr.as_str()).collect();
        format!("memcached {} (replicas {})", addrs.join(","), self.replicas)
    }
}

impl Drop for Memcached {
    fn drop(&mut self) {
        for poller in &self.pollers {
            poller.abort();
        }
    }
}

impl Server {
    fn start(
        addr: &str,
        prefix: &Arc<str>,
        config: &MemcachedConfig,
        workspaces: &Arc<WorkspacePool>,
    ) -> Server {
        let (queue, receiver) = mpsc::channel(config.queue_depth.max(1));
        let link = Arc::new(Link {
            addr: addr.to_owned(),
            prefix: Arc::clone(prefix),
            io_timeout: config.timeout(),
            max_batch: config.max_batch.max(1),
            queue: Arc::new(Mutex::new(receiver)),
            client: queue.downgrade(),
            counters: Arc::default(),
            workspaces: Arc::clone(workspaces),
        });
        for _ in 0..config.connections.max(1) {
            tokio::spawn(conn::run(Arc::clone(&link)));
        }
        Server { link, queue }
    }

    /// Queues a spend; a full queue fails at once rather than making the caller wait.
    fn submit(
        &self,
        spend: [u8; 32],
        exptime: u32,
        deadline: Instant,
    ) -> Result<oneshot::Receiver<Result<Verdict, Fault>>, Fault> {
        let (reply, receiver) = oneshot::channel();
        let job = Job {
            spend,
            exptime,
            deadline,
            reply,
        };
        self.queue.try_send(job).map_err(|_| Fault::Overloaded)?;
        Ok(receiver)
    }
}

async fn wait(
    reply: Result<oneshot::Receiver<Result<Verdict, Fault>>, Fault>,
    deadline: Instant,
) -> Result<Verdict, Fault> {
    match timeout_at(deadline, reply?).await {
        Ok(Ok(verdict)) => verdict,
        Ok(Err(_)) => Err(Fault::Connection("connection task stopped".to_owned())),
        Err(_) => Err(Fault::Timeout),
    }
}

/// Votes of the replicas asked about one spend.
#[derive(Debug, Default)]
struct Tally {
    stored: usize,
    exists: usize,
    fault: Option<Fault>,
}

impl Tally {
    fn add(&mut self, vote: Result<Verdict, Fault>) {
        match vote {
            Ok(Verdict::Stored) => self.stored += 1,
            Ok(Verdict::Exists) => self.exists += 1,
            // A fault that is not a transient I/O one is kept over one that is: fail-open may
            // apply only when every fault was transient.
            Err(fault) => match &self.fault {
                Some(kept) if !kept.transient() || fault.transient() => {}
                _ => self.fault = Some(fault),
            },
        }
    }

    /// Spent if any replica holds the record, whatever the others say: a replica that lost
    /// it answers "stored". Fresh only on a quorum of "stored" and no "exists". Otherwise
    /// unknown.
    fn decide(self, quorum: usize) -> Result<Decision, Fault> {
        if self.exists > 0 {
            Ok(Decision::Spent)
        } else if self.stored >= quorum {
            Ok(Decision::Fresh)
        } else {
            Err(self.fault.unwrap_or(Fault::Timeout))
        }
    }
}

#[cfg(test)]
mod tests;
