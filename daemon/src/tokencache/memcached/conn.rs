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

use super::{
    super::Fault,
    counters::ServerCounters,
    proto::{self, Key, ProtocolError, Reply},
};

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
    pub(crate) counters: Arc<ServerCounters>,
}

/// Keeps one connection to `link.addr` alive until the queue closes, reconnecting with backoff.
pub(crate) async fn run(link: Arc<Link>) {
    let mut backoff = Backoff::default();
    loop {
        match connect(&link).await {
            Ok(stream) => {
                backoff.reset();
                link.counters.connections_up.inc();
                let ended = Conn::new(&link).serve(stream).await;
                link.counters.connections_up.dec();
                match ended {
                    Ended::QueueClosed => return,
                    Ended::Failed(why) => {
                        link.counters.connection_failures.inc();
                        tracing::warn!(server = %link.addr, %why, "memcached connection dropped");
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

async fn connect(link: &Link) -> Result<TcpStream, String> {
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
    Failed(String),
}

/// The per-connection state: reusable buffers and the opaque sequence.
pub(crate) struct Conn<'a> {
    link: &'a Link,
    batch: VecDeque<Job>,
    out: String,
    input: Vec<u8>,
    opaque: u32,
}

impl<'a> Conn<'a> {
    pub(crate) fn new(link: &'a Link) -> Self {
        Conn {
            link,
            batch: VecDeque::with_capacity(link.max_batch),
            out: String::with_capacity(link.max_batch * 96),
            input: Vec::with_capacity(4096),
            opaque: 0,
        }
    }

    /// Serves batches until the queue closes or the connection fails.
    pub(crate) async fn serve<S: AsyncRead + AsyncWrite + Unpin>(mut self, mut stream: S) -> Ended {
        loop {
            if !self.next_batch().await {
                return Ended::QueueClosed;
            }
            if let Err(why) = self.exchange(&mut stream).await {
                let fault = Fault::Connection(why.clone());
                for job in self.batch.drain(..) {
                    let _ = job.reply.send(Err(fault.clone()));
                }
                return Ended::Failed(why);
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

    /// Sends the batch in one write and hands each reply to its job, in order.
    async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut S,
    ) -> Result<(), String> {
        let first = self.opaque;
        self.encode_batch();
        let deadline = Instant::now() + self.link.io_timeout;
        self.link.counters.writes.inc();
        self.link.counters.commands.add(self.batch.len() as u64);
        timeout_at(deadline, stream.write_all(self.out.as_bytes()))
            .await
            .map_err(|_| "write timed out".to_owned())?
            .map_err(|e| format!("write: {e}"))?;

        self.input.clear();
        let mut used = 0;
        let mut expected = first;
        while !self.batch.is_empty() {
            let (reply, len) = self.read_reply(stream, used, deadline).await?;
            used += len;
            let Some(job) = self.batch.pop_front() else {
                break;
            };
            let verdict = self.judge(reply, expected);
            expected = expected.wrapping_add(1);
            let failed = matches!(&verdict, Err(Fault::Connection(_)));
            let _ = job.reply.send(verdict.clone());
            if failed {
                return Err(format!("{:?}", verdict.err()));
            }
        }
        if used != self.input.len() {
            return Err("memcached sent more replies than commands".to_owned());
        }
        Ok(())
    }

    fn encode_batch(&mut self) {
        self.out.clear();
        for job in &self.batch {
            let key = Key {
                prefix: &self.link.prefix,
                spend: &job.spend,
            };
            proto::encode_spend(&mut self.out, key, job.exptime, self.opaque);
            self.opaque = self.opaque.wrapping_add(1);
        }
    }

    /// Maps one reply to a verdict; an out-of-step opaque poisons the connection.
    fn judge(&self, reply: Reply, expected: u32) -> Result<Verdict, Fault> {
        let counters = &self.link.counters;
        match reply {
            Reply::Stored { opaque } if opaque == expected => {
                counters.stored.inc();
                Ok(Verdict::Stored)
            }
            Reply::NotStored { opaque } if opaque == expected => {
                counters.not_stored.inc();
                Ok(Verdict::Exists)
            }
            Reply::Stored { opaque } | Reply::NotStored { opaque } => Err(Fault::Connection(
                format!("reply for command {opaque} where {expected} was due"),
            )),
            Reply::ServerError(message) => {
                counters.server_errors.inc();
                Err(Fault::Server(message))
            }
        }
    }

    async fn read_reply<S: AsyncRead + Unpin>(
        &mut self,
        stream: &mut S,
        from: usize,
        deadline: Instant,
    ) -> Result<(Reply, usize), String> {
        loop {
            match proto::parse_reply(&self.input[from..]) {
                Ok(Some(parsed)) => return Ok(parsed),
                Ok(None) => {}
                Err(ProtocolError::LineTooLong) => return Err("reply line too long".to_owned()),
                Err(e) => return Err(e.to_string()),
            }
            let read = timeout_at(deadline, stream.read_buf(&mut self.input))
                .await
                .map_err(|_| {
                    self.link.counters.timeouts.inc();
                    "reply timed out".to_owned()
                })?
                .map_err(|e| format!("read: {e}"))?;
            if read == 0 {
                return Err("memcached closed the connection".to_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests;
