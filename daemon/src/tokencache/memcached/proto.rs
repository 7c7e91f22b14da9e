//! The two memcached meta-protocol exchanges the token cache needs, as pure functions over
//! bytes so they can be tested without a server.
//!
//! A spend is `ms <key> 1 T<exptime> ME O<opaque>` ("meta set" in add mode): memcached stores
//! the record only if the key is absent and answers `HD` (stored: first spend) or `NS` (not
//! stored: double spend). One command decides, so two concurrent redemptions cannot both win,
//! which `get`-then-`set` allows. The opaque number is echoed back and checked, so a reply can
//! never be matched to the wrong command even if the stream were out of step.

use std::fmt;

/// memcached reads an expiry above 30 days as an absolute Unix time.
const RELATIVE_EXPIRY_LIMIT: u64 = 30 * 24 * 3600;

/// Longest reply line we accept; real ones are a few dozen bytes.
pub(crate) const MAX_LINE: usize = 1024;

/// Latest absolute expiry memcached stores: it reads `T` as a signed 32-bit number, and
/// takes 2^31 or more for a time long past (`HD`, and the record is gone at once).
const LATEST_EXPIRY: u64 = i32::MAX as u64;

/// The `T` value for a record that must live until `expires_at` (Unix seconds): relative up
/// to 30 days, else absolute, at the latest [`LATEST_EXPIRY`] (January 2038).
pub(crate) fn exptime(now: u64, expires_at: u64) -> u32 {
    let ttl = expires_at.saturating_sub(now).max(1);
    let value = if ttl <= RELATIVE_EXPIRY_LIMIT {
        ttl
    } else {
        now.saturating_add(ttl).min(LATEST_EXPIRY)
    };
    u32::try_from(value).unwrap_or(LATEST_EXPIRY as u32)
}

/// Appends one spend command for `key` (already prefixed, hex-safe) to `out`.
pub(crate) fn encode_spend(out: &mut impl fmt::Write, key: Key<'_>, exptime: u32, opaque: u32) {
    // Writing into memory cannot fail; the Result only exists for fmt::Write's signature.
    let _ = write!(out, "ms {key} 1 T{exptime} ME O{opaque}\r\n1\r\n");
}

/// A record key: the configured prefix and the hex of the 32-byte spend key.
#[derive(Clone, Copy)]
pub(crate) struct Key<'a> {
    pub(crate) prefix: &'a str,
    pub(crate) spend: &'a [u8; 32],
}

impl fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One write of the whole hex string: per-byte `{:02x}` formatting showed up in profiles
        // at a few percent of a redemption.
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut hex = [0; 64];
        for (pair, byte) in hex.chunks_exact_mut(2).zip(self.spend) {
            pair[0] = DIGITS[usize::from(byte >> 4)];
            pair[1] = DIGITS[usize::from(byte & 0xf)];
        }
        f.write_str(self.prefix)?;
        // Hex digits are ASCII.
        f.write_str(std::str::from_utf8(&hex).map_err(|_| fmt::Error)?)
    }
}

/// What memcached said about one spend command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `HD`: stored, the first spend.
    Stored { opaque: u32 },
    /// `NS`: a record exists, a double spend.
    NotStored { opaque: u32 },
    /// `SERVER_ERROR ...` (out of memory, too large): memcached consumed the command and the
    /// stream is still in step, but nothing was decided.
    ServerError(String),
}

/// A reply that means the connection can no longer be trusted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProtocolError {
    #[error("memcached rejected the command: {0}")]
    Rejected(String),
    #[error("unexpected reply line {0:?}")]
    Unexpected(String),
    #[error("reply line longer than {MAX_LINE} bytes")]
    LineTooLong,
}

/// Parses one reply from the front of `buf`: `Ok(None)` if the line is not complete yet,
/// otherwise the reply and the bytes it used.
pub(crate) fn parse_reply(buf: &[u8]) -> Result<Option<(Reply, usize)>, ProtocolError> {
    let Some(end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return if buf.len() > MAX_LINE {
            Err(ProtocolError::LineTooLong)
        } else {
            Ok(None)
        };
    };
    let line = &buf[..end];
    let text = String::from_utf8_lossy(line);
    let reply = parse_line(&text)?;
    Ok(Some((reply, end + 2)))
}

fn parse_line(line: &str) -> Result<Reply, ProtocolError> {
    let mut words = line.split(' ');
    let status = words.next().unwrap_or_default();
    match status {
        "HD" | "NS" => {
            let opaque = words
                .find_map(|flag| flag.strip_prefix('O'))
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| ProtocolError::Unexpected(line.to_owned()))?;
            Ok(if status == "HD" {
                Reply::Stored { opaque }
            } else {
                Reply::NotStored { opaque }
            })
        }
        "SERVER_ERROR" => Ok(Reply::ServerError(line.to_owned())),
        "CLIENT_ERROR" | "ERROR" => Err(ProtocolError::Rejected(line.to_owned())),
        _ => Err(ProtocolError::Unexpected(line.to_owned())),
    }
}

/// Counters from a `stats` reply that matter for spend-once safety.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ServerStats {
    /// Records memcached dropped to make room: each may have been a spent token.
    pub(crate) evictions: u64,
    pub(crate) curr_items: u64,
    pub(crate) bytes: u64,
    pub(crate) limit_maxbytes: u64,
}

/// Parses a complete `stats` reply (through `END\r\n`); `None` if it is not complete.
pub(crate) fn parse_stats(buf: &[u8]) -> Option<ServerStats> {
    let text = std::str::from_utf8(buf).ok()?;
    if !text.ends_with("END\r\n") {
        return None;
    }
    let mut stats = ServerStats::default();
    for line in text.lines() {
        let mut words = line.split(' ');
        let (Some("STAT"), Some(name), Some(value)) = (words.next(), words.next(), words.next())
        else {
            continue;
        };
        let Ok(value) = value.parse() else { continue };
        match name {
            "evictions" => stats.evictions = value,
            "curr_items" => stats.curr_items = value,
            "bytes" => stats.bytes = value,
            "limit_maxbytes" => stats.limit_maxbytes = value,
            _ => {}
        }
    }
    Some(stats)
}

#[cfg(test)]
mod tests;
