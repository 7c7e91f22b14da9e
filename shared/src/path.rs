//! Readings of a request path as origins make them: percent-decoded, separators, `;`
//! parameters, empty, `.` and `..` segments and segments' trailing dots and spaces each read
//! their way (see [`ProtectedPaths`](crate::ProtectedPaths), which covers every reading, and
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
            // Windows drops a name's trailing dots and spaces: `private.` is `private` to IIS.
            [.., b'.' | b' '] => true,
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

/// `/`-separated segments without their trailing dots and spaces; those left empty dropped.
fn trimmed(path: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len());
    for mut name in path.split(|&b| b == b'/') {
        while let [rest @ .., b'.' | b' '] = name {
            name = rest;
        }
        if !name.is_empty() {
            out.push(b'/');
            out.extend_from_slice(name);
        }
    }
    out
}

fn hex(digit: u8) -> Option<u8> {
    char::from(digit).to_digit(16).map(|d| d as u8)
}

/// One way of reading a decoded path.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Reading {
    pub(crate) slashes: Slashes,
    pub(crate) params: Params,
    pub(crate) dots: Dots,
    pub(crate) ends: Ends,
}

impl Reading {
    /// How most origins read a path: `/` separates, `;` parameters are dropped, dot segments
    /// resolved, names kept whole.
    pub(crate) const COMMON: Reading = Reading {
        slashes: Slashes::Forward,
        params: Params::Drop,
        dots: Dots::Resolve,
        ends: Ends::Keep,
    };

    /// How Apache reads a path before decoding it: dot segments resolved, the rest kept.
    pub(crate) const APACHE: Reading = Reading {
        slashes: Slashes::Forward,
        params: Params::Keep,
        dots: Dots::Resolve,
        ends: Ends::Keep,
    };

    /// The readings of `path` that can differ: a choice whose bytes `path` lacks (no `\\`, no
    /// `;`, no dot segment, no name ending in a dot or a space) reads it the same both ways,
    /// and is made one way only.
    pub(crate) fn distinct(path: &[u8]) -> impl Iterator<Item = Reading> {
        let backslash = path.contains(&b'\\');
        let params = path.contains(&b';');
        let (mut dots, mut ends) = (false, false);
        for segment in path.split(|&b| b == b'/' || b == b'\\') {
            let name = segment.split(|&b| b == b';').next().unwrap_or(segment);
            for s in [segment, name] {
                dots |= matches!(s, b"." | b"..");
                ends |= matches!(s, [.., b'.' | b' ']);
            }
        }
        Reading::all().filter(move |r| {
            (backslash || r.slashes == Slashes::Forward)
                && (params || r.params == Params::Keep)
                && (dots || r.dots == Dots::Resolve)
                && (ends || r.ends == Ends::Keep)
        })
    }

    /// Every combination of the choices below.
    pub(crate) fn all() -> impl Iterator<Item = Reading> {
        [Slashes::Both, Slashes::Forward]
            .into_iter()
            .flat_map(|slashes| {
                [Params::Drop, Params::Keep]
                    .into_iter()
                    .flat_map(move |params| {
                        [Dots::Resolve, Dots::Keep]
                            .into_iter()
                            .flat_map(move |dots| {
                                [Ends::Keep, Ends::Trim].map(move |ends| Reading {
                                    slashes,
                                    params,
                                    dots,
                                    ends,
                                })
                            })
                    })
            })
    }
}

/// Which bytes a reading takes for separators.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Slashes {
    /// `/` only.
    Forward,
    /// `/` and `\` (IIS).
    Both,
}

/// What a reading does with a segment's `;` parameters.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Params {
    Keep,
    /// Tomcat, and servlet containers: `/a;x/b` is `/a/b`, `..;` is `..`.
    Drop,
}

/// What a reading does with `.` and `..` segments.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Dots {
    /// `.` dropped, `..` takes the segment before it with it.
    Resolve,
    /// Kept as names: a server that decodes `%2F` after resolving dot segments (Apache with
    /// `AllowEncodedSlashes On`) or never resolves them (WSGI and ASGI frameworks) routes
    /// `/private%2F..%2Fadmin` by its `/private` prefix.
    Keep,
}

/// What a reading does with a segment's trailing dots and spaces.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ends {
    Keep,
    /// Dropped, as Windows file names drop them (IIS): `private.` and `private ` are `private`.
    Trim,
}

/// `path` read as `reading` says, empty segments dropped. A trailing `/` (or a final segment
/// dropped) is kept: it decides what a prefix listed with one covers.
pub(crate) fn normalised(path: &[u8], reading: Reading) -> Vec<u8> {
    let mut out = Vec::with_capacity(path.len() + 1);
    let mut directory = false;
    let backslash = reading.slashes == Slashes::Both;
    for segment in path.split(|&b| b == b'/' || (backslash && b == b'\\')) {
        let segment = match reading.params {
            Params::Drop => segment.split(|&b| b == b';').next().unwrap_or(segment),
            Params::Keep => segment,
        };
        let dot = match reading.dots {
            Dots::Resolve => matches!(segment, b"." | b".."),
            Dots::Keep => false,
        };
        directory = segment.is_empty() || dot;
        match segment {
            b"" => {}
            b"." if dot => {}
            b".." if dot => {
                let parent = out.iter().rposition(|&b| b == b'/').unwrap_or(0);
                out.truncate(parent);
            }
            name => {
                out.push(b'/');
                out.extend_from_slice(name);
            }
        }
    }
    // Windows resolves dot segments first, then trims what are names: `/private./.../..` is
    // `/private`, the `..` taking `...` away before it could trim to nothing.
    if reading.ends == Ends::Trim {
        out = trimmed(&out);
    }
    if directory || out.is_empty() {
        out.push(b'/');
    }
    out
}
