//! The connection's framing and failure handling against a scripted byte stream: each write
//! call is recorded as it was made, which a real socket cannot show deterministically. The
//! behaviour against a real memcached is tested in tests/tests/tokens.rs.

use std::{
    collections::HashSet,
    io,
    pin::Pin,
    sync::Mutex as StdMutex,
    task::{Context, Poll},
};

use edgewise::{ScrubMode, WorkspaceConfig};
use tokio::io::ReadBuf;

use super::*;

/// How the scripted server answers a written command line.
#[derive(Debug, Clone, Copy)]
enum Script {
    /// Like memcached: HD for a new key, NS for a known one.
    Memcached,
    /// Never answers.
    Silent,
    /// Answers with the wrong opaque.
    OutOfStep,
    /// Answers SERVER_ERROR.
    OutOfMemory,
}

struct Scripted {
    script: Script,
    writes: Arc<StdMutex<Vec<Vec<u8>>>>,
    keys: HashSet<String>,
    pending: Vec<u8>,
}

impl Scripted {
    fn new(script: Script) -> (Self, Arc<StdMutex<Vec<Vec<u8>>>>) {
        let writes = Arc::default();
        let stream = Scripted {
            script,
            writes: Arc::clone(&writes),
            keys: HashSet::new(),
            pending: Vec::new(),
        };
        (stream, writes)
    }

    fn answer(&mut self, command: &str) {
        let words: Vec<&str> = command.split(' ').collect();
        let opaque: u32 = words.last().unwrap()[1..].parse().unwrap();
        let reply = match self.script {
            Script::Memcached if self.keys.insert(words[1].to_owned()) => format!("HD O{opaque}"),
            Script::Memcached => format!("NS O{opaque}"),
            Script::Silent => return,
            Script::OutOfStep => format!("HD O{}", opaque + 1),
            Script::OutOfMemory => "SERVER_ERROR out of memory storing object".to_owned(),
        };
        self.pending.extend_from_slice(reply.as_bytes());
        self.pending.extend_from_slice(b"\r\n");
    }
}

impl AsyncWrite for Scripted {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.writes.lock().unwrap().push(buf.to_vec());
        let text = String::from_utf8(buf.to_vec()).unwrap();
        for line in text.split("\r\n").filter(|l| l.starts_with("ms ")) {
            self.answer(line);
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl AsyncRead for Scripted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.pending.is_empty() {
            // The connection's deadline timer wakes the task.
            return Poll::Pending;
        }
        let n = self.pending.len().min(buf.remaining());
        buf.put_slice(&self.pending[..n]);
        self.pending.drain(..n);
        Poll::Ready(Ok(()))
    }
}

fn link(max_batch: usize) -> (Arc<Link>, mpsc::Sender<Job>) {
    let (sender, receiver) = mpsc::channel(1024);
    let link = Link {
        addr: "scripted".to_owned(),
        prefix: Arc::from("t:"),
        io_timeout: Duration::from_millis(50),
        max_batch,
        queue: Arc::new(Mutex::new(receiver)),
        client: sender.downgrade(),
        counters: Arc::default(),
        workspaces: WorkspacePool::new(
            "test",
            WorkspaceConfig::new(64 * 1024)
                .with_mode(ScrubMode::Watermark)
                .with_verify_one_in(1),
        ),
    };
    (Arc::new(link), sender)
}

fn job(n: u8) -> (Job, oneshot::Receiver<Result<Verdict, Fault>>) {
    let (reply, receiver) = oneshot::channel();
    let job = Job {
        spend: [n; 32],
        exptime: 60,
        deadline: Instant::now() + Duration::from_secs(5),
        reply,
    };
    (job, receiver)
}

/// Queues spends of keys `keys`, closes the queue, serves them, returns the replies.
async fn serve(
    script: Script,
    keys: &[u8],
    max_batch: usize,
) -> (Ended, Vec<Result<Verdict, Fault>>, Vec<Vec<u8>>) {
    let (link, sender) = link(max_batch);
    let mut receivers = Vec::new();
    for &key in keys {
        let (job, receiver) = job(key);
        sender.send(job).await.unwrap();
        receivers.push(receiver);
    }
    drop(sender);
    let (stream, writes) = Scripted::new(script);
    let ended = Conn::new(&link).serve(stream).await;
    let mut replies = Vec::new();
    for receiver in receivers {
        replies.push(receiver.await.unwrap());
    }
    let writes = writes.lock().unwrap().clone();
    (ended, replies, writes)
}

#[tokio::test]
async fn each_batch_leaves_in_exactly_one_write() {
    let keys: Vec<u8> = (0..100).collect();
    let (ended, replies, writes) = serve(Script::Memcached, &keys, 32).await;
    assert!(matches!(ended, Ended::QueueClosed), "{ended:?}");
    assert!(replies.iter().all(|r| *r == Ok(Verdict::Stored)));
    // 100 spends, batches of at most 32: four writes, each holding whole commands.
    assert_eq!(writes.len(), 4);
    let mut commands = 0;
    for write in &writes {
        let text = std::str::from_utf8(write).unwrap();
        assert!(text.ends_with("\r\n1\r\n"), "{text}");
        commands += text.matches("ms t:").count();
    }
    assert_eq!(commands, 100);
}

#[tokio::test]
async fn a_second_spend_of_one_key_is_refused() {
    let (_, replies, _) = serve(Script::Memcached, &[1, 2, 1, 1], 2).await;
    assert_eq!(
        replies,
        [
            Ok(Verdict::Stored),
            Ok(Verdict::Stored),
            Ok(Verdict::Exists),
            Ok(Verdict::Exists)
        ]
    );
}

#[tokio::test]
async fn a_late_reply_abandons_the_connection() {
    let (ended, replies, _) = serve(Script::Silent, &[1, 2], 8).await;
    assert!(matches!(ended, Ended::Failed(Fault::Timeout)), "{ended:?}");
    assert!(
        replies.iter().all(|r| matches!(r, Err(Fault::Timeout))),
        "{replies:?}"
    );
}

#[tokio::test]
async fn an_out_of_step_reply_abandons_the_connection() {
    let (ended, replies, _) = serve(Script::OutOfStep, &[1, 2, 3], 8).await;
    assert!(
        matches!(ended, Ended::Failed(Fault::Protocol(_))),
        "{ended:?}"
    );
    // No reply was taken as a verdict, and none is a transient fault that fail-open admits.
    assert!(
        replies.iter().all(|r| matches!(r, Err(Fault::Protocol(_)))),
        "{replies:?}"
    );
}

#[tokio::test]
async fn server_errors_fail_their_spend_but_keep_the_connection() {
    let (ended, replies, _) = serve(Script::OutOfMemory, &[1, 2], 8).await;
    assert!(matches!(ended, Ended::QueueClosed), "{ended:?}");
    assert!(
        replies
            .iter()
            .all(|r| matches!(r, Err(Fault::Server(m)) if m.contains("out of memory"))),
        "{replies:?}"
    );
}

#[tokio::test]
async fn spends_whose_caller_left_are_not_sent() {
    let (link, sender) = link(8);
    let (gone, receiver) = job(1);
    drop(receiver);
    sender.send(gone).await.unwrap();
    let (kept, receiver) = job(2);
    sender.send(kept).await.unwrap();
    drop(sender);
    let (stream, writes) = Scripted::new(Script::Memcached);
    Conn::new(&link).serve(stream).await;
    assert_eq!(receiver.await.unwrap(), Ok(Verdict::Stored));
    let writes = writes.lock().unwrap();
    assert_eq!(writes.len(), 1);
    assert_eq!(
        std::str::from_utf8(&writes[0])
            .unwrap()
            .matches("ms ")
            .count(),
        1
    );
    assert_eq!(link.counters.expired_in_queue.get(), 1);
}

#[tokio::test]
async fn batches_are_built_in_a_workspace_scrubbed_after_each() {
    let (link, sender) = link(16);
    for key in 0..40 {
        let (job, receiver) = job(key);
        sender.send(job).await.unwrap();
        drop(receiver);
    }
    // Dropped receivers are skipped; queue live ones instead.
    let mut receivers = Vec::new();
    for key in 0..40 {
        let (job, receiver) = job(key);
        sender.send(job).await.unwrap();
        receivers.push(receiver);
    }
    drop(sender);
    let (stream, writes) = Scripted::new(Script::Memcached);
    let conn = Conn::new(&link);
    conn.serve(stream).await;
    for receiver in receivers {
        assert_eq!(receiver.await.unwrap(), Ok(Verdict::Stored));
    }
    let batches = writes.lock().unwrap().len() as u64;
    assert_eq!(batches, 3);
    let mut page = crate::metrics::Exposition::default();
    WorkspacePool::render(&mut page, &[&link.workspaces]);
    let page = page.finish();
    let resets =
        format!("edgewise_workspace_resets_total{{pool=\"test\",mode=\"watermark\"}} {batches}\n");
    assert!(page.contains(&resets), "{page}");
    assert!(
        page.contains(
            "edgewise_workspace_verification_failures_total{pool=\"test\",mode=\"watermark\"} 0\n"
        ),
        "{page}"
    );
    // The workspace went back to the pool scrubbed.
    assert!(link.workspaces.take().is_scrubbed());
}
