//! Path prefixes whose requests need a token, matched as origins may read the path.
//!
//! The edge sees a request's path as the client sent it (after the URL parser resolved `.` and
//! `..` segments), but an origin reads it after normalising it its own way: nginx merges `//`
//! and decodes `%70rivate` to `private`, Tomcat drops `;jsessionid=...` path parameters (and
//! takes `..;` for `..`), IIS ignores case and takes `\` for `/`. A gate comparing the path as
//! sent let `//private/doc`, `/%70rivate/doc`, `/PRIVATE/doc` and `/private;x/doc` through to
//! origins that serve each of them as `/private/doc`.
//!
//! IIS also drops a name's trailing dots and spaces (`/private./doc`, `/private%20/doc`), and a
//! server that decodes `%2F` without resolving the dot segments it makes (Apache with
//! `AllowEncodedSlashes On`, WSGI and ASGI frameworks) routes `/private%2F..%2Fadmin` by its
//! `/private` prefix.
//!
//! So a path is protected if a prefix covers it in any of its readings: as sent; percent-decoded
//! none to [`DECODE_PASSES`] times (an origin may decode twice), and each of those with its dot
//! segments resolved and then decoded once more (Apache); each then split at `/` alone and at
//! `\` too, with `;` parameters dropped and kept, `.` and `..` segments resolved and kept,
//! trailing dots and spaces of names kept and dropped, and empty segments dropped.
//! Every comparison ignores ASCII case. This fails closed: an odd spelling of a public path
//! may be asked for a token, no spelling of a protected one gets through without.

use alloc::{string::String, vec::Vec};

use crate::Error;
use crate::path::{Reading, decode_once, is_plain, normalised};

#[cfg(test)]
mod tests;

/// Most percent-decodings a path is read after: `%252e` is `%2e` once decoded and `.` twice.
pub const DECODE_PASSES: usize = 3;

/// The path prefixes of a list such as `TOKEN_PATHS`, by whole segments: `/private` covers
/// `/private` and `/private/doc`, not `/privateer`; `/api/v2/` covers what lies beneath
/// `/api/v2/`, not `/api/v2` itself; `/` covers every path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProtectedPaths {
    prefixes: Vec<Prefix>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Prefix {
    /// Lower case, without the trailing `/`: empty for `/`.
    text: String,
    /// Listed with a trailing `/`: only paths beneath it.
    beneath: bool,
}

impl ProtectedPaths {
    /// Parses a list separated by commas or whitespace; an empty list protects nothing. Each
    /// prefix starts with `/` and holds neither empty, `.` or `..` segments nor `%`, `\`, `;`,
    /// `?` or `#`: it is compared with decoded, normalised readings of the path, so it is
    /// written as one.
    pub fn parse(list: &str) -> Result<ProtectedPaths, Error> {
        let entries = list
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty());
        let prefixes = entries
            .enumerate()
            .map(|(index, entry)| prefix(entry).map_err(|reason| invalid(index, entry, reason)))
            .collect::<Result<_, _>>()?;
        Ok(ProtectedPaths { prefixes })
    }

    /// Whether the list protects nothing.
    pub fn is_empty(&self) -> bool {
        self.prefixes.is_empty()
    }

    /// Whether a request for `path` (as the URL parser leaves it: starting with `/`,
    /// percent-encoded) needs a token. Allocates only for a path with a `%`, `\` or `;`, or an
    /// empty, `.` or `..` segment: any other reads the same every way.
    pub fn covers(&self, path: &str) -> bool {
        let raw = path.as_bytes();
        if self.covers_reading(raw) {
            return true;
        }
        if is_plain(raw) {
            return false;
        }
        let mut decoded = raw.to_vec();
        for pass in 0..=DECODE_PASSES {
            if pass > 0 && !decode_once(&mut decoded) {
                break;
            }
            if self.covers_decoded(&decoded) {
                return true;
            }
            // Apache resolves the dot segments it sees, then decodes (`%2F` too, with
            // `AllowEncodedSlashes On`): the dot segments decoding makes stay names. One
            // decoding more, so only within the passes.
            if pass < DECODE_PASSES {
                let mut then = normalised(&decoded, Reading::APACHE);
                if decode_once(&mut then) && self.covers_decoded(&then) {
                    return true;
                }
            }
        }
        false
    }

    /// Whether a path decoded so far is covered in any reading of it ([`Reading::distinct`]): `..;`
    /// is `..` to Tomcat and a segment of its own to nginx, `\` a separator to IIS and a byte
    /// to the others, `..` resolved by nginx and a name to Flask, `private.` a name to nginx and
    /// `private` to IIS.
    fn covers_decoded(&self, decoded: &[u8]) -> bool {
        Reading::distinct(decoded).any(|reading| self.covers_reading(&normalised(decoded, reading)))
    }

    fn covers_reading(&self, path: &[u8]) -> bool {
        self.prefixes.iter().any(|p| p.covers(path))
    }
}

impl Prefix {
    fn covers(&self, path: &[u8]) -> bool {
        let text = self.text.as_bytes();
        let Some((head, rest)) = path.split_at_checked(text.len()) else {
            return false;
        };
        head.eq_ignore_ascii_case(text)
            && match rest.first() {
                Some(b'/') => true,
                None => !self.beneath,
                Some(_) => false,
            }
    }
}

fn prefix(entry: &str) -> Result<Prefix, &'static str> {
    let Some(inner) = entry.strip_prefix('/') else {
        return Err("does not start with '/'");
    };
    if let Some(b) = entry.bytes().find(|b| b"%\\;?#".contains(b)) {
        return Err(match b {
            b'%' => "holds '%': write the path decoded",
            b'\\' => "holds '\\': write '/'",
            b';' => "holds ';': path parameters are dropped before matching",
            _ => "holds '?' or '#': a path prefix has no query or fragment",
        });
    }
    let (inner, beneath) = match inner.strip_suffix('/') {
        Some(inner) => (inner, true),
        None => (inner, inner.is_empty()),
    };
    if entry != "/" && inner.split('/').any(|s| matches!(s, "" | "." | "..")) {
        return Err("holds an empty, '.' or '..' segment");
    }
    let text = match inner {
        "" => String::new(),
        _ => alloc::format!("/{}", inner.to_ascii_lowercase()),
    };
    Ok(Prefix { text, beneath })
}

fn invalid(index: usize, entry: &str, reason: &'static str) -> Error {
    Error::InvalidProtectedPath {
        index,
        entry: entry.escape_default().take(64).collect(),
        reason,
    }
}
