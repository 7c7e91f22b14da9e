//! One memcached connection. It takes a batch of spends from its server's queue, sends the
//! whole batch in one write, reads the replies in order, and abandons the connection at the
//! first late, malformed or out-of-step reply: a reply that arrives after its deadline lands on
//! a closed socket and can never answer another request.

use std::{collections::VecDeque, sync::Arc, time::Duration};

use tokio::{
    io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt},
    net::TcpStream,
    sync::{Mutex, mpsc, oneshot},
    time::{Instant, timeout, timeout_at},
};

use edgewise::{Arena, ArenaWriter};

use super::{
    super::Fault,
    counters::ServerCounters,
    proto::{self, Key, Reply},
};
use crate::workspaces::{PooledWorkspace, WorkspacePool};

/// A spend waiting for a connection.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) spend: [u8; 32],
    pub(crate) exptime: u32,
    /// The caller gives up at this instant; a connection skips jobs already past it.
    pub(crate) deadline: Instant,
    pub(crate) reply: oneshot::Sender<Result<Verdict, Fault>>,
}

/// memcached's answer to one spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The record was absent and is now stored: first spend.
    Stored,
    /// The record exists: double spend.
    Exists,
}

/// The receiving end of a server's queue, shared by its connections.
pub(crate) type Queue = Arc<Mutex<mpsc::Receiver<Job>>>;

/// What every connection to one server shares.
#[derive(Debug)]
pub(crate) struct Link {
    pub(crate) addr: String,
    pub(crate) prefix: Arc<str>,
    pub(crate) io_timeout: Duration,
    pub(crate) max_batch: usize,
    pub(crate) queue: Queue,
    /// Whether the client still sends: its queue is seen closed only by a connection that
    /// reads it, and one that cannot connect never does.
    pub(crate) client: mpsc::WeakSender<Job>,
    pub(crate) counters: Arc<ServerCounters>,
    pub(crate) workspaces: Arc<WorkspacePool>,
}

/// Keeps one connection to `link.addr` alive until the queue closes, reconnecting with backoff.
pub(crate) async fn run(link: Arc<Link>) {
    let mut backoff = Backoff::default();
    while link.client.strong_count() > 0 {
        match connect(&link).await {
            Ok(stream) => {
                backoff.reset();
                link.counters.connections_up.inc();
                let ended = Conn::new(&link).serve(stream).await;
                link.counters.connections_up.dec();
                match ended {
                    Ended::QueueClosed => return,
                    Ended::Failed(fault) => {
                        link.counters.connection_failures.inc();
                        tracing::warn!(server = %link.addr, %fault, "memcached connection dropped");
                    }
                }
            }
            Err(why) => {
                link.counters.connection_failures.inc();
                if backoff.first() {
                    tracing::warn!(server = %link.addr, %why, "memcached connect failed, retrying");
                }
            }
        }
        tokio::time::sleep(backoff.next()).await;
    }
}

/// Opens a connection to `link.addr` within the I/O timeout, with TCP_NODELAY.
pub(crate) async fn connect(link: &Link) -> Result<TcpStream, String> {
    let stream = timeout(link.io_timeout, TcpStream::connect(link.addr.as_str()))
        .await
        .map_err(|_| "connect timed out".to_owned())?
        .map_err(|e| e.to_string())?;
    // Each batch is one write; without NODELAY a write behind an unacknowledged one waits for
    // the peer's delayed ACK (~40 ms).
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(stream)
}

/// Reconnect delays: quick first retries so a restarted server is back within a second, capped
/// so a dead one costs little.
#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    const BASE: Duration = Duration::from_millis(10);
    const CAP: Duration = Duration::from_millis(250);

    fn reset(&mut self) {
        self.failures = 0;
    }

    fn first(&self) -> bool {
        self.failures == 0
    }

    fn next(&mut self) -> Duration {
        let delay = Self::BASE.saturating_mul(1 << self.failures.min(5));
        self.failures = self.failures.saturating_add(1);
        delay.min(Self::CAP)
    }
}

#[derive(Debug)]
pub(crate) enum Ended {
    QueueClosed,
    /// The connection was abandoned: an I/O fault (`Fault::Connection`, `Fault::Timeout`) or a
    /// reply it cannot trust (`Fault::Protocol`).
    Failed(Fault),
}

/// The per-connection state: the batch in flight, a workspace for its bytes, and the opaque
/// sequence.
pub(crate) struct Conn<'a> {
    link: &'a Link,
    batch: VecDeque<Job>,
    workspace: PooledWorkspace,
    opaque: u32,
}

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 4096;

impl<'a> Conn<'a> {
    pub(crate) fn new(link: &'a Link) -> Self {
        Conn {
            link,
            batch: VecDeque::with_capacity(link.max_batch),
            workspace: link.workspaces.take(),
            opaque: 0,
        }
    }

    /// Serves batches until the queue closes or the connection fails.
    pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut self, mut stream: S) -> Ended {
        loop {
            if !self.next_batch().await {
                return Ended::QueueClosed;
            }
            if let Err(fault) = self.exchange(&mut stream).await {
                for job in self.batch.drain(..) {
                    let _ = job.reply.send(Err(fault.clone()));
                }
                return Ended::Failed(fault);
            }
        }
    }

    /// Waits for one live job, then takes whatever else is queued, up to the batch limit.
    async fn next_batch(&mut self) -> bool {
        let mut queue = self.link.queue.lock().await;
        while self.batch.is_empty() {
            let Some(job) = queue.recv().await else {
                return false;
            };
            self.keep_if_live(job);
        }
        while self.batch.len() < self.link.max_batch {
            let Ok(job) = queue.try_recv() else { break };
            self.keep_if_live(job);
        }
        true
    }

    fn keep_if_live(&mut self, job: Job) {
        if job.reply.is_closed() || job.deadline <= Instant::now() {
            self.link.counters.expired_in_queue.inc();
            let _ = job.reply.send(Err(Fault::Timeout));
        } else {
            self.batch.push_back(job);
        }
    }

    /// Runs one batch in a workspace scope, which scrubs the commands and replies (spend keys)
    /// when the batch is over, however it ends.
    async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<(), Fault> {
        let mut scope = self.workspace.begin();
        let mut batch = Batch {
            link: self.link,
            jobs: &mut self.batch,
            opaque: &mut self.opaque,
            arena: scope.arena(),
        };
        let result = batch.run(stream).await;
        let report = scope.reset();
        self.workspace.pool().record(&report);
        result
    }
}

/// One batch's exchange, its bytes in the workspace arena.
struct Batch<'c, 'w> {
    link: &'c Link,
    jobs: &'c mut VecDeque<Job>,
    opaque: &'c mut u32,
    arena: Arena<'w>,
}

impl<'w> Batch<'_, 'w> {
    /// Sends the batch in one write and hands each reply to its job, in order.
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<(), Fault> {
        let first = *self.opaque;
        let deadline = Instant::now() + self.link.io_timeout;
        let commands = self.encode()?;
        self.link.counters.writes.inc();
        self.link.counters.commands.add(self.jobs.len() as u64);
        timeout_at(deadline, stream.write_all(commands))
            .await
            .map_err(|_| Fault::Timeout)?
            .map_err(|e| Fault::Connection(format!("write: {e}")))?;

        let link = self.link;
        let mut input = self.arena.writer();
        let mut used = 0;
        let mut expected = first;
        while !self.jobs.is_empty() {
            let (reply, len) = read_reply(link, stream, &mut input, used, deadline).await?;
            used += len;
            let Some(job) = self.jobs.pop_front() else {
                break;
            };
            let verdict = judge(link, reply, expected);
            expected = expected.wrapping_add(1);
            // An out-of-step reply fails its job and, through the error, the connection.
            let poisoned = match &verdict {
                Err(fault @ Fault::Protocol(_)) => Some(fault.clone()),
                _ => None,
            };
            let _ = job.reply.send(verdict);
            if let Some(fault) = poisoned {
                return Err(fault);
            }
        }
        if used != input.len() {
            return Err(Fault::Protocol(
                "memcached sent more replies than commands".to_owned(),
            ));
        }
        Ok(())
    }

    /// All of the batch's commands, contiguous, for one write.
    fn encode(&mut self) -> Result<&'w [u8], Fault> {
        let mut out = self.arena.writer();
        for job in self.jobs.iter() {
            let key = Key {
                prefix: &self.link.prefix,
                spend: &job.spend,
            };
            proto::encode_spend(&mut out, key, job.exptime, *self.opaque);
            *self.opaque = self.opaque.wrapping_add(1);
        }
        out.commit()
            .map(|bytes| &*bytes)
            .ok_or_else(|| Fault::Protocol("batch larger than its workspace".to_owned()))
    }
}

/// Maps one reply to a verdict; an out-of-step opaque poisons the connection.
fn judge(link: &Link, reply: Reply, expected: u32) -> Result<Verdict, Fault> {
    let counters = &link.counters;
    match reply {
        Reply::Stored { opaque } if opaque == expected => {
            counters.stored.inc();
            Ok(Verdict::Stored)
        }
        Reply::NotStored { opaque } if opaque == expected => {
            counters.not_stored.inc();
            Ok(Verdict::Exists)
        }
        Reply::Stored { opaque } | Reply::NotStored { opaque } => Err(Fault::Protocol(format!(
            "reply for command {opaque} where {expected} was due"
        ))),
        Reply::ServerError(message) => {
            counters.server_errors.inc();
            Err(Fault::Server(message))
        }
    }
}

/// Reads until one more reply is complete after offset `from` of `input`.
async fn read_reply<S: AsyncRead + Unpin>(
    link: &Link,
    stream: &mut S,
    input: &mut ArenaWriter<'_, '_>,
    from: usize,
    deadline: Instant,
) -> Result<(Reply, usize), Fault> {
    loop {
        match proto::parse_reply(&input.as_bytes()[from..]) {
            Ok(Some(parsed)) => return Ok(parsed),
            Ok(None) => {}
            Err(e) => return Err(Fault::Protocol(e.to_string())),
        }
        let room = input.spare(READ_CHUNK);
        if room.is_empty() {
            return Err(Fault::Protocol(
                "replies larger than their workspace".to_owned(),
            ));
        }
        let read = timeout_at(deadline, stream.read(room))
            .await
            .map_err(|_| {
                link.counters.timeouts.inc();
                Fault::Timeout
            })?
            .map_err(|e| Fault::Connection(format!("read: {e}")))?;
        if read == 0 {
            return Err(Fault::Connection(
                "memcached closed the connection".to_owned(),
            ));
        }
        input
            .advance(read)
            .map_err(|e| Fault::Protocol(e.to_string()))?;
    }
}

#[cfg(test)]
mod tests;
