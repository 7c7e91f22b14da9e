//! ProtectedPaths::parse on arbitrary text (the `TOKEN_PATHS` var), then `covers` of an
//! arbitrary path, against origins written plainly, each reading the path its own way:
//! - as sent (Node's `http` and Express, which match the raw path ignoring case);
//! - nginx: decoded once, slashes merged, dot segments resolved (Go's `net/http` cleans the
//!   decoded path the same way);
//! - Apache with `AllowEncodedSlashes On`: dot segments resolved as sent, then decoded, `%2F`
//!   included, leaving the dot segments that decoding makes;
//! - IIS: decoded twice, `\` a separator, dot segments resolved, names without their trailing
//!   dots and spaces;
//! - Python frameworks (WSGI and ASGI): decoded once, nothing merged or resolved.
//!
//! Whatever any of them serves under a listed prefix must be covered.
#![no_main]

use edgewise::ProtectedPaths;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The list, then the path on the line after it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (list, path) = text.split_once('\n').unwrap_or((text, "/"));
    let Ok(paths) = ProtectedPaths::parse(list) else {
        return;
    };
    let covered = paths.covers(path);
    let prefixes: Vec<String> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|e| !e.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    let raw = path.as_bytes();
    let readings = [
        raw.to_vec(),
        resolved(&decoded(raw), Separators::Slash, Names::AsTheyAre),
        decoded(&resolved(raw, Separators::Slash, Names::AsTheyAre)),
        resolved(
            &decoded(&decoded(raw)),
            Separators::SlashAndBackslash,
            Names::WindowsTrimmed,
        ),
        decoded(raw),
    ];
    for reading in readings {
        let reading = reading.to_ascii_lowercase();
        for prefix in &prefixes {
            if under(&reading, prefix.as_bytes()) {
                assert!(covered, "{path:?} is under {prefix:?}");
            }
        }
    }
});

/// Whether `path` lies under `prefix` by whole segments (a prefix listed with a trailing `/`
/// only what is beneath it; `/` everything).
fn under(path: &[u8], prefix: &[u8]) -> bool {
    if prefix == b"/" {
        return path.first() == Some(&b'/');
    }
    match prefix.strip_suffix(b"/") {
        Some(dir) => path.starts_with(dir) && path.get(dir.len()) == Some(&b'/'),
        None => path.starts_with(prefix) && matches!(path.get(prefix.len()), None | Some(&b'/')),
    }
}

fn decoded(path: &[u8]) -> Vec<u8> {
    let hex = |b: u8| (b as char).to_digit(16);
    let mut out = Vec::new();
    let mut i = 0;
    while i < path.len() {
        match (
            path[i],
            path.get(i + 1).and_then(|&h| hex(h)),
            path.get(i + 2).and_then(|&l| hex(l)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Separators {
    Slash,
    SlashAndBackslash,
}

#[derive(Clone, Copy, PartialEq)]
enum Names {
    AsTheyAre,
    /// Without trailing dots and spaces, as Windows reads a file name.
    WindowsTrimmed,
}

fn resolved(path: &[u8], separators: Separators, names: Names) -> Vec<u8> {
    let backslash = separators == Separators::SlashAndBackslash;
    let segments: Vec<&[u8]> = path
        .split(|&b| b == b'/' || (backslash && b == b'\\'))
        .collect();
    let mut stack: Vec<&[u8]> = Vec::new();
    for segment in &segments {
        match *segment {
            b"" | b"." => {}
            b".." => {
                stack.pop();
            }
            s if names == Names::WindowsTrimmed => {
                let end = s
                    .iter()
                    .rposition(|b| !matches!(b, b'.' | b' '))
                    .map_or(0, |i| i + 1);
                if end > 0 {
                    stack.push(&s[..end]);
                }
            }
            s => stack.push(s),
        }
    }
    let mut out: Vec<u8> = stack.iter().flat_map(|s| [&b"/"[..], s].concat()).collect();
    // A path ending in a directory (`/`, `/.`, `/..`) names that directory.
    if out.is_empty() || matches!(segments.last(), Some(&(b"" | b"." | b".."))) {
        out.push(b'/');
    }
    out
}
