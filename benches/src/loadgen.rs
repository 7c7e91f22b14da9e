//! Closed-loop load generation for the native service benchmarks: N clients each issue one
//! request, wait for the answer, and issue the next until the clock runs out. Latencies are kept
//! whole (no sampling) so the tail percentiles are exact.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

/// Walks the command line as `--flag value` pairs, handing each to `apply` with the value
/// parsed as a `T`; an odd flag out, an unparseable value or an unknown flag is an error.
pub fn flags<T: std::str::FromStr>(
    mut apply: impl FnMut(&str, T) -> Result<(), String>,
) -> Result<(), String>
where
    T::Err: std::fmt::Display,
{
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let value = value.parse().map_err(|e| format!("{flag}: {e}"))?;
        apply(&flag, value)?;
    }
    Ok(())
}

/// Per-request latencies of one run, in nanoseconds.
#[derive(Debug, Default)]
pub struct Latencies(Vec<u64>);

impl Latencies {
    pub fn record(&mut self, took: Duration) {
        self.0
            .push(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
    }

    pub fn merge(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `q`-quantile (0..=1) in microseconds, after sorting.
    pub fn quantile_us(&mut self, q: f64) -> f64 {
        if self.0.is_empty() {
            return f64::NAN;
        }
        self.0.sort_unstable();
        let rank = ((self.0.len() - 1) as f64 * q).round() as usize;
        self.0[rank] as f64 / 1e3
    }
}

/// One row of a results table.
#[derive(Debug)]
pub struct Row {
    pub name: String,
    pub ops_per_sec: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub note: String,
}

impl Row {
    pub fn new(name: &str, mut latencies: Latencies, elapsed: Duration, note: String) -> Row {
        Row {
            name: name.to_owned(),
            ops_per_sec: latencies.len() as f64 / elapsed.as_secs_f64(),
            p50_us: latencies.quantile_us(0.50),
            p99_us: latencies.quantile_us(0.99),
            p999_us: latencies.quantile_us(0.999),
            note,
        }
    }
}

/// Prints rows as a Markdown table, with each row's throughput relative to the first.
pub fn print_table(title: &str, rows: &[Row]) {
    println!("\n### {title}\n");
    println!("| client | ops/s | p50 µs | p99 µs | p99.9 µs | ops/s vs first | notes |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    let base = rows.first().map_or(1.0, |r| r.ops_per_sec);
    for r in rows {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.1} | {:.3}× | {} |",
            r.name,
            r.ops_per_sec,
            r.p50_us,
            r.p99_us,
            r.p999_us,
            r.ops_per_sec / base,
            r.note
        );
    }
}

/// A keep-alive HTTP/1.1 client for one connection, just enough for JSON APIs that answer
/// with Content-Length (as edgewised does).
#[derive(Debug)]
pub struct HttpConnection {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl HttpConnection {
    pub async fn connect(addr: std::net::SocketAddr) -> std::io::Result<HttpConnection> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        Ok(HttpConnection {
            stream,
            buf: Vec::with_capacity(4096),
        })
    }

    /// Sends one POST in one write and returns the status and body.
    pub async fn post(
        &mut self,
        path: &str,
        authorization: &str,
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        self.send("POST", path, authorization, body).await
    }

    /// Sends one request in one write and returns the status and body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        authorization: &str,
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        let mut request = format!(
            "{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: {authorization}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        self.stream.write_all(&request).await?;
        self.read_response().await
    }

    async fn read_response(&mut self) -> std::io::Result<(u16, Vec<u8>)> {
        self.buf.clear();
        loop {
            if let Some(response) = parse_response(&self.buf)? {
                return Ok(response);
            }
            if self.stream.read_buf(&mut self.buf).await? == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
    }
}

fn parse_response(buf: &[u8]) -> std::io::Result<Option<(u16, Vec<u8>)>> {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "malformed response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(bad)?;
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .ok_or_else(bad)?;
    let body_start = head_end + 4;
    if buf.len() < body_start + length {
        return Ok(None);
    }
    Ok(Some((
        status,
        buf[body_start..body_start + length].to_vec(),
    )))
}
