extern crate std;

use alloc::{string::String, vec, vec::Vec};

use proptest::prelude::*;

use super::*;
use crate::path::{Dots, Ends, Params, Slashes};

fn paths(list: &str) -> ProtectedPaths {
    ProtectedPaths::parse(list).unwrap_or_else(|e| panic!("{list}: {e}"))
}

#[test]
fn prefixes_cover_whole_segments() {
    let p = paths("/private, /api/v2/");
    for covered in [
        "/private",
        "/private/",
        "/private/doc",
        "/api/v2/",
        "/api/v2/x",
    ] {
        assert!(p.covers(covered), "{covered}");
    }
    for open in [
        "/",
        "/privateer",
        "/public",
        "/api/v2",
        "/api/v20/x",
        "/api",
    ] {
        assert!(!p.covers(open), "{open}");
    }
}

#[test]
fn the_root_covers_every_path() {
    let p = paths("/");
    for path in ["/", "/x", "/x/y/", "", "*"] {
        assert!(p.covers(path), "{path}");
    }
}

#[test]
fn an_empty_list_protects_nothing() {
    for list in ["", " , ,\n"] {
        let p = paths(list);
        assert!(p.is_empty());
        assert!(!p.covers("/private"));
    }
}

/// Each spelling an origin serves as `/private/doc` (nginx, Tomcat, IIS, or one decoding
/// twice), and the `/api/v2/` directory itself reached through `//`.
#[test]
fn every_spelling_of_a_protected_path_is_covered() {
    let p = paths("/private /api/v2/");
    for spelling in [
        "//private/doc",
        "///private//doc",
        "/%70rivate/doc",
        "/%70RIVATE/doc",
        "/%2570rivate/doc",
        "/%252570rivate/doc",
        "/PRIVATE/doc",
        "/Private",
        "/private;jsessionid=1/doc",
        "/;x/private/doc",
        "/public/..;/private/doc",
        "/public/%2e%2e/private/doc",
        "/public/%252e%252e/private/doc",
        "/public%2f..%2fprivate/doc",
        "/public%2F%2E%2E%2Fprivate",
        "/public\\..\\private\\doc",
        "/public%5c..%5cprivate",
        "/./private/doc",
        "/private%2fdoc",
        "/private%3bx/doc",
        "//api/v2/",
        "/api//v2/x",
        "/api/v2%2fx",
        "/api/v2/.",
    ] {
        assert!(p.covers(spelling), "{spelling}");
    }
}

/// Readings only add coverage where some normalisation leads under a prefix: an odd spelling
/// of an open path stays open.
#[test]
fn odd_spellings_of_open_paths_stay_open() {
    let p = paths("/private");
    for open in [
        "//public/doc",
        "/%70ublic",
        "/public;x",
        "/public/%2e%2e/other",
        "/privateer%2fx",
        "/private-docs",
        "/%zz/private",
        "/%",
        "/%2",
    ] {
        assert!(!p.covers(open), "{open}");
    }
    // A segment `..%2fpublic` under `/private` to an origin that does not decode `%2f`.
    assert!(p.covers("/private/..%2fpublic"));
}

#[test]
fn decoding_stops_after_its_passes() {
    const _: () = assert!(DECODE_PASSES == 3);
    let p = paths("/private");
    assert!(p.covers("/%252570rivate"), "`p` encoded three times");
    assert!(!p.covers("/%25252570rivate"), "`p` encoded four times");
}

#[test]
fn bad_prefixes_are_refused_with_the_entry() {
    let cases = [
        ("private", "does not start with '/'"),
        ("/a%2fb", "holds '%': write the path decoded"),
        ("/a\\b", "holds '\\': write '/'"),
        (
            "/a;b",
            "holds ';': path parameters are dropped before matching",
        ),
        (
            "/a?b",
            "holds '?' or '#': a path prefix has no query or fragment",
        ),
        (
            "/a#b",
            "holds '?' or '#': a path prefix has no query or fragment",
        ),
        ("//", "holds an empty, '.' or '..' segment"),
        ("/a//b", "holds an empty, '.' or '..' segment"),
        ("/a/./b", "holds an empty, '.' or '..' segment"),
        ("/a/..", "holds an empty, '.' or '..' segment"),
        ("/a//", "holds an empty, '.' or '..' segment"),
    ];
    for (entry, reason) in cases {
        let list = alloc::format!("/ok, {entry}");
        let expected = Error::InvalidProtectedPath {
            index: 1,
            entry: entry.escape_default().collect(),
            reason,
        };
        assert_eq!(ProtectedPaths::parse(&list), Err(expected), "{entry}");
    }
}

/// IIS reads `private.` and `private ` as `private`; Apache (`AllowEncodedSlashes On`) and
/// Python frameworks route `/private%2F..%2Fadmin` by its `/private` prefix.
#[test]
fn trailing_dots_and_encoded_slashes_before_dot_segments_are_covered() {
    let p = paths("/private");
    for covered in [
        "/private./doc",
        "/private%2e/doc",
        "/private%20/doc",
        "/PRIVATE.%20./doc",
        "/private.",
        "/private%2F..%2Fadmin",
        "/private%2f..%2fadmin",
        "/private%252F..%252Fadmin",
        "/private%5C..%5Cadmin",
    ] {
        assert!(p.covers(covered), "{covered}");
    }
    for open in [
        "/privateer./doc",
        "/public./doc",
        "/public%2F..%2Fprivateer",
    ] {
        assert!(!p.covers(open), "{open}");
    }
}

#[test]
fn prefixes_are_matched_without_regard_to_case() {
    assert!(paths("/Private/DOCS").covers("/private/docs/x"));
    assert!(paths("/private").covers("/PrIvAtE"));
}

#[test]
fn normalised_readings() {
    let read = |path: &str, slashes, params, dots, ends| {
        let reading = Reading {
            slashes,
            params,
            dots,
            ends,
        };
        String::from_utf8(normalised(path.as_bytes(), reading))
    };
    let both = |path| read(path, Slashes::Both, Params::Drop, Dots::Resolve, Ends::Keep);
    assert_eq!(both("").as_deref(), Ok("/"));
    assert_eq!(both("/a//b/./c;x=1/").as_deref(), Ok("/a/b/c/"));
    assert_eq!(both("/a/../b").as_deref(), Ok("/b"));
    assert_eq!(both("/../../a/..").as_deref(), Ok("/"));
    assert_eq!(both("\\a\\b").as_deref(), Ok("/a/b"));
    assert_eq!(both("/a/b/..;x").as_deref(), Ok("/a/"));
    assert_eq!(both("/a./b. ").as_deref(), Ok("/a./b. "));
    let keep = |path| {
        read(
            path,
            Slashes::Forward,
            Params::Keep,
            Dots::Resolve,
            Ends::Keep,
        )
    };
    assert_eq!(keep("/a/b/..;x").as_deref(), Ok("/a/b/..;x"));
    assert_eq!(keep("/a\\b/..").as_deref(), Ok("/"));
    assert_eq!(keep("/a/b\\..").as_deref(), Ok("/a/b\\.."));
    let names = |path| read(path, Slashes::Forward, Params::Keep, Dots::Keep, Ends::Keep);
    assert_eq!(names("/a/../b/./c//").as_deref(), Ok("/a/../b/./c/"));
    let iis = |path| read(path, Slashes::Both, Params::Keep, Dots::Resolve, Ends::Trim);
    assert_eq!(iis("/a./b .. /c\\..").as_deref(), Ok("/a/b/"));
    assert_eq!(iis("/a/.../b").as_deref(), Ok("/a/b"));
    assert_eq!(Reading::all().count(), 16);
    assert!(Reading::all().any(|r| r == Reading::COMMON));
    // Only the choices a path's bytes can tell apart are made both ways.
    let distinct = |path: &str| Reading::distinct(path.as_bytes()).count();
    assert_eq!(distinct("/search/café/results.html"), 1);
    assert_eq!(distinct("/a\\b"), 2);
    assert_eq!(distinct("/a;x/b"), 2);
    // A dot segment is a name ending in dots to a reading that keeps it: trimmed too.
    assert_eq!(distinct("/a/../b"), 4);
    assert_eq!(distinct("/a/..;x/b"), 8);
    assert_eq!(distinct("/private./x"), 2);
    assert_eq!(distinct("/a\\b;c/./d. "), 16);
    let mut bytes = b"%41%4a%zz%4".to_vec();
    assert!(decode_once(&mut bytes));
    assert_eq!(bytes, b"AJ%zz%4");
    assert!(!decode_once(&mut bytes));
}

/// How some origins read a path, each written plainly and on its own, not as `covers` reads
/// it: whatever any of them serves under `/private`, `covers` must protect.
mod origins {
    use super::*;

    fn decode(path: &str, times: usize) -> Vec<u8> {
        let mut bytes = path.as_bytes().to_vec();
        for _ in 0..times {
            let mut out = Vec::new();
            let mut i = 0;
            while i < bytes.len() {
                let hex = |b: u8| char::from(b).to_digit(16);
                match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
                    (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                        out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                        i += 3;
                    }
                    (b, _, _) => {
                        out.push(b);
                        i += 1;
                    }
                }
            }
            bytes = out;
        }
        bytes
    }

    /// Segments after merging slashes and resolving dot segments; `params` drops `;...`.
    fn resolved(bytes: &[u8], backslash: bool, params: bool) -> Vec<Vec<u8>> {
        let mut stack: Vec<Vec<u8>> = Vec::new();
        let separator = |b: &u8| *b == b'/' || (backslash && *b == b'\\');
        for segment in bytes.split(separator) {
            let segment = match params {
                true => segment.split(|b| *b == b';').next().unwrap_or_default(),
                false => segment,
            };
            match segment {
                b"" | b"." => {}
                b".." => {
                    stack.pop();
                }
                s => stack.push(s.to_vec()),
            }
        }
        stack
    }

    /// Segments as they come: no slash merged, no dot segment resolved.
    fn kept(bytes: &[u8]) -> Vec<Vec<u8>> {
        bytes
            .split(|b| *b == b'/')
            .skip(1)
            .map(<[u8]>::to_vec)
            .collect()
    }

    /// Each segment without its trailing dots and spaces, as Windows names are read.
    fn trimmed(segments: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        let trim = |s: &[u8]| {
            let end = s
                .iter()
                .rposition(|b| !matches!(b, b'.' | b' '))
                .map_or(0, |i| i + 1);
            s[..end].to_vec()
        };
        segments.iter().map(|s| trim(s)).collect()
    }

    /// Every origin model's segments for `path`: nginx and Go's `net/http` (decode once,
    /// merge, resolve), Tomcat (drops parameters, decodes once, resolves), IIS (decodes twice,
    /// `\` is `/`, names lose their trailing dots and spaces), Apache with
    /// `AllowEncodedSlashes On` (resolves the path as sent, then decodes `%2F` too), WSGI and
    /// ASGI frameworks (decode once, resolve nothing), Express (matches the path as sent), and
    /// one that takes segments as they come, merging slashes.
    pub fn readings(path: &str) -> Vec<Vec<Vec<u8>>> {
        let apache: Vec<Vec<u8>> = resolved(path.as_bytes(), false, false);
        let apache = alloc::format!("/{}", String::from_utf8_lossy(&apache.join(&b'/')));
        let mut all = vec![
            resolved(&decode(path, 1), false, false),
            resolved(&decode(path, 1), false, true),
            resolved(&decode(path, 2), true, false),
            trimmed(resolved(&decode(path, 2), true, false)),
            resolved(path.as_bytes(), false, false),
            kept(&decode(&apache, 1)),
            kept(&decode(path, 1)),
            kept(path.as_bytes()),
        ];
        // Tomcat drops parameters before decoding as well.
        let stripped: Vec<&str> = path
            .split('/')
            .map(|s| s.split(';').next().unwrap_or_default())
            .collect();
        all.push(resolved(&decode(&stripped.join("/"), 1), false, false));
        all
    }

    pub fn serves_private(path: &str) -> bool {
        readings(path).iter().any(|segments| {
            segments
                .first()
                .is_some_and(|s| s.eq_ignore_ascii_case(b"private"))
        })
    }
}

fn segment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "private",
        "PRIVATE",
        "%70rivate",
        "%2570rivate",
        "public",
        "",
        ".",
        "..",
        "..;",
        "%2e%2e",
        "%252e%252e",
        "%2e",
        "x;y",
        "private;x",
        "%2f",
        "%2F",
        "%5c",
        "\\",
        "%25",
        "%",
        "a",
        "privateer",
        "private.",
        "private%2e",
        "private%20",
        "private. ",
        "...",
        "private%2F..",
        "..%2F",
        "%2F..%2F",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn whatever_an_origin_serves_under_a_prefix_is_covered(
        segments in prop::collection::vec(segment(), 0..7),
    ) {
        let path = alloc::format!("/{}", segments.join("/"));
        if origins::serves_private(&path) {
            prop_assert!(paths("/private").covers(&path), "{}", path);
        }
        // The raw reading alone decides a plain path.
        if is_plain(path.as_bytes()) {
            let raw = path.split('/').nth(1).is_some_and(|s| s.eq_ignore_ascii_case("private"));
            prop_assert_eq!(paths("/private").covers(&path), raw, "{}", path);
        }
    }
}
