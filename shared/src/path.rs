//! Readings of a request path as origins make them: percent-decoded, separators, `;`
//! parameters, empty, `.` and `..` segments each read their way (see
//! [`ProtectedPaths`](crate::ProtectedPaths), which covers every reading, and
//! [`routing_path`](crate::routing_path), which routes by the one most origins make).

use alloc::vec::Vec;

/// Whether every reading of `path` is `path` itself: no byte a decoding or normalisation
/// changes, no segment one drops.
pub(crate) fn is_plain(path: &[u8]) -> bool {
    let Some((b'/', inner)) = path.split_first() else {
        return false;
    };
    let mut segments = inner.split(|&b| b == b'/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        let odd = match segment {
            b"" => !last,
            b"." | b".." => true,
            _ => segment.iter().any(|b| b"%\\;".contains(b)),
        };
        if odd {
            return false;
        }
    }
    true
}

/// Decodes each `%` followed by two hex digits, in place; whether any was.
pub(crate) fn decode_once(bytes: &mut Vec<u8>) -> bool {
    let (mut read, mut write) = (0, 0);
    while read < bytes.len() {
        let escaped = match bytes.get(read..read + 3) {
            Some(&[b'%', high, low]) => hex(high).zip(hex(low)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        bytes[write] = match escaped {
            Some(byte) => {
                read += 3;
                byte
            }
            None => {
                read += 1;
                bytes[read - 1]
            }
        };
        write += 1;
    }
    let changed = write < bytes.len();
    bytes.truncate(write);
    changed
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).map(|d| d as u8)
}

/// Which bytes a reading takes for separators.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slashes {
    Forward,
    Both,
}

/// What a reading does with a segment's `;` parameters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Params {
    Keep,
    Drop,
}

/// `path` with `\` read as `/`, empty and `.` segments dropped, `..` segments as `dots` says
/// (resolved, each takes the segment before with it) and parameters as `params` says. A
/// trailing `/` (or a final segment dropped) is kept: it decides what a prefix listed with
/// one covers.
pub(crate) fn normalised(path: &[u8], slashes: Slashes, params: Params) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 1);
    let mut directory = false;
    let backslash = slashes == Slashes::Both;
    for segment in path.split(|&b| b == b'/' || (backslash && b == b'\\')) {
        let segment = match params {
            Params::Drop => segment.split(|&b| b == b';').next().unwrap_or(segment),
            Params::Keep => segment,
        };
        directory = matches!(segment, b"" | b"." | b"..");
        match segment {
            b"" | b"." => {}
            b".." => {
                let parent = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(parent);
            }
            _ => {
                out.push(b'/');
                out.extend_from_slice(segment);
            }
        }
    }
    if directory || out.is_empty() {
        out.push(b'/');
    }
    out
}
