extern crate std;

use alloc::{string::String, vec, vec::Vec};

use proptest::prelude::*;

use super::*;

/// The obvious implementation the fast one must agree with.
struct Naive {
    exact: Vec<Vec<u8>>,
    prefixes: Vec<Vec<u8>>,
}

impl Naive {
    fn new(names: &[Vec<u8>]) -> Naive {
        let (prefixes, exact): (Vec<_>, Vec<_>) = names.iter().partition(|n| n.ends_with(b"*"));
        Naive {
            exact: exact.into_iter().cloned().collect(),
            prefixes: prefixes.iter().map(|p| p[..p.len() - 1].to_vec()).collect(),
        }
    }

    fn contains(&self, name: &[u8]) -> bool {
        self.exact.iter().any(|n| same(n, name))
            || self
                .prefixes
                .iter()
                .any(|p| name.len() >= p.len() && same(&name[..p.len()], p))
    }
}

/// Whether two names are one to a CGI-style gateway: `HTTP_` and the name upper-cased, `-` as
/// `_`.
fn same(a: &[u8], b: &[u8]) -> bool {
    let cgi = |n: &[u8]| -> Vec<u8> {
        n.iter()
            .map(|&c| {
                if c == b'-' {
                    b'_'
                } else {
                    c.to_ascii_uppercase()
                }
            })
            .collect()
    };
    cgi(a) == cgi(b)
}

fn set(names: &[&str]) -> HeaderSet {
    HeaderSet::new(names).unwrap()
}

/// `s` matches every name of `hits` and none of `misses`.
fn assert_matches(s: &HeaderSet, hits: &[&str], misses: &[&str]) {
    for hit in hits {
        assert!(s.contains(hit.as_bytes()), "{hit}");
    }
    for miss in misses {
        assert!(!s.contains(miss.as_bytes()), "{miss}");
    }
}

#[test]
fn exact_names_match_in_any_case() {
    let s = set(&["X-Internal-Secret", "cf-worker", "a"]);
    assert_matches(
        &s,
        &[
            "x-internal-secret",
            "X-INTERNAL-SECRET",
            "x-InTeRnAl-sEcReT",
            "CF-Worker",
            "A",
            "a",
        ],
        &[
            "x-internal-secre",
            "x-internal-secrets",
            "cf-workers",
            "cf-worke",
            "",
            "b",
            "aa",
        ],
    );
}

#[test]
fn folding_is_exact_for_punctuation() {
    // `b | 0x20` folding would equate ^ with ~, @ with `, _ with DEL and [ with {.
    let s = set(&["x-a^b", "x-a_b", "x-a`b"]);
    assert!(s.contains(b"X-A^B"));
    assert!(!s.contains(b"x-a~b"));
    assert!(!s.contains(b"x-a\x7fb"));
    assert!(!s.contains(b"x-a@b"));
    assert!(s.contains(b"x-a`b"));
}

#[test]
fn non_ascii_bytes_never_match() {
    let s = set(&["x-ab"]);
    assert!(!s.contains(b"x-\xc1b"));
    assert!(!s.contains(b"x-\xe1b"));
    assert!(!s.contains("x-áb".as_bytes()));
}

#[test]
fn prefix_rules() {
    let s = set(&["x-edgewise-*", "l5d-*", "host"]);
    assert_matches(
        &s,
        &[
            "x-edgewise-",
            "x-edgewise-route",
            "X-EdgeWise-Token-Key",
            "l5d-dst-override",
            "Host",
        ],
        &[
            "x-edgewise",
            "x-edgewis-a",
            "y-edgewise-a",
            "l5d",
            "hos",
            "x-forwarded-for",
        ],
    );
}

#[test]
fn long_names_compare_every_byte() {
    let long = "x-".repeat(200);
    let s = HeaderSet::new([long.as_str()]).unwrap();
    assert!(s.contains(long.to_ascii_uppercase().as_bytes()));
    for i in 0..long.len() {
        let mut probe = long.clone().into_bytes();
        probe[i] = b'z';
        assert!(!s.contains(&probe), "byte {i}");
    }
}

#[test]
fn names_sharing_length_and_ends_share_a_slot() {
    let s = set(&["x-aaa-y", "x-bbb-y", "x-ccc-y", "x-a-b-y"]);
    for name in ["x-aaa-y", "X-BBB-Y", "x-ccc-y", "x-a-b-y"] {
        assert!(s.contains(name.as_bytes()), "{name}");
    }
    assert!(!s.contains(b"x-ddd-y"));
}

#[test]
fn refuses_invalid_names_naming_the_entry() {
    let cases: [(&[&str], usize, &str, &str); 5] = [
        (&["ok", ""], 1, "", "empty name"),
        (&["*"], 0, "*", "a bare '*' would match every header"),
        (&["ok", "bad name"], 1, "bad name", "not an RFC 9110 token"),
        (&["x:y"], 0, "x:y", "not an RFC 9110 token"),
        (&["x-\n*"], 0, "x-\\n*", "not an RFC 9110 token"),
    ];
    for (names, index, shown, reason) in cases {
        match HeaderSet::new(names) {
            Err(Error::InvalidHeaderName {
                index: i,
                name,
                reason: r,
            }) => {
                assert_eq!((i, name.as_str()), (index, shown), "{names:?}");
                assert!(r.starts_with(reason), "{r}");
            }
            other => panic!("{names:?}: {other:?}"),
        }
    }
}

#[test]
fn error_message_is_readable() {
    let err = HeaderSet::new(["x-ok", "x bad"]).unwrap_err();
    let text = std::format!("{err}");
    assert!(
        text.starts_with("invalid header name \"x bad\" (entry 1): not an RFC 9110 token"),
        "{text}"
    );
}

#[test]
fn duplicates_and_case_variants_collapse() {
    let s = set(&["X-A", "x-a", "x-a", "p-*", "P-*"]);
    assert_eq!(s.len(), 2);
    assert!(s.contains(b"x-a"));
}

#[test]
fn empty_set_matches_nothing() {
    for s in [
        HeaderSet::empty(),
        set(&[]),
        HeaderSet::from_list(" , ", &[]).unwrap(),
    ] {
        assert!(s.is_empty());
        assert!(!s.contains(b"x"));
        assert!(!s.contains(b""));
    }
}

#[test]
fn from_list_expands_the_default_token() {
    let s = HeaderSet::from_list("@default, x-team-secret\n x-team-*", &["x-default"]).unwrap();
    assert!(s.contains(b"x-default"));
    assert!(s.contains(b"x-team-secret"));
    assert!(s.contains(b"x-team-anything"));
    assert!(
        !HeaderSet::from_list("x-only", &["x-default"])
            .unwrap()
            .contains(b"x-default")
    );
    assert!(HeaderSet::from_list("x-a, bad;name", &[]).is_err());
}

#[test]
fn default_lists_are_valid_and_match_their_families() {
    let req = HeaderSet::new(DEFAULT_INTERNAL_REQUEST_HEADERS).unwrap();
    assert!(req.len() >= 90, "{}", req.len());
    assert_matches(
        &req,
        &[
            "x-edgewise-token",
            "X-Envoy-Upstream-Rq-Timeout-Ms",
            "x-middleware-subrequest",
            "L5d-Dst-Override",
        ],
        &[
            "host",
            "user-agent",
            "cookie",
            "x-forwarded-for",
            "cf-connecting-ip",
            "accept-encoding",
        ],
    );
    let resp = HeaderSet::new(DEFAULT_INTERNAL_RESPONSE_HEADERS).unwrap();
    assert_matches(
        &resp,
        &[
            "x-powered-by",
            "x-accel-redirect",
            "X-Envoy-Upstream-Service-Time",
        ],
        &[
            "content-type",
            "set-cookie",
            "cache-control",
            "server-timing",
        ],
    );
}

/// Each family of client-forgeable headers that frameworks trust behind a proxy is in the
/// default request list, in any case; the platform's own forwarding headers are not.
#[test]
fn default_request_list_covers_forgeable_proxy_headers() {
    let req = HeaderSet::new(DEFAULT_INTERNAL_REQUEST_HEADERS).unwrap();
    let families: [(&str, &[&str]); 4] = [
        (
            "forwarded host, scheme, port and prefix",
            &[
                "Forwarded",
                "X-Forwarded-Host",
                "x-forwarded-server",
                "X-Forwarded-Port",
                "x-forwarded-prefix",
                "X-Forwarded-Scheme",
                "x-forwarded-ssl",
                "X-Original-Host",
            ],
        ),
        (
            "client addresses",
            &[
                "X-Real-IP",
                "True-Client-IP",
                "x-client-ip",
                "X-Cluster-Client-IP",
            ],
        ),
        (
            "method overrides",
            &[
                "X-HTTP-Method-Override",
                "x-method-override",
                "X-HTTP-Method",
            ],
        ),
        (
            "Cloudflare Access identity",
            &[
                "Cf-Access-Authenticated-User-Email",
                "cf-access-jwt-assertion",
            ],
        ),
    ];
    for (family, names) in families {
        for name in names {
            assert!(req.contains(name.as_bytes()), "{family}: {name}");
        }
    }
    for platform in [
        "x-forwarded-for",
        "x-forwarded-proto",
        "cf-connecting-ip",
        "cf-ray",
    ] {
        assert!(!req.contains(platform.as_bytes()), "{platform}");
    }
}

#[test]
fn strip_removes_every_match_once_and_keeps_the_rest_in_order() {
    let s = set(&["x-internal-*", "x-secret"]);
    let mut headers: Vec<(&str, &str)> = vec![
        ("Host", "a"),
        ("X-Secret", "1"),
        ("accept", "b"),
        ("x-internal-a", "2"),
        ("x-secret", "3"),
        ("Accept", "c"),
        ("X-INTERNAL-A", "4"),
    ];
    assert_eq!(s.strip(&mut headers), 2);
    assert_eq!(
        headers,
        vec![("Host", "a"), ("accept", "b"), ("Accept", "c")]
    );
    assert_eq!(s.strip(&mut headers), 0);
}

#[test]
fn strip_with_reuses_scratch() {
    let s = set(&["x-a"]);
    let mut scratch = Vec::new();
    for _ in 0..3 {
        let mut headers: Vec<(String, ())> = vec![("x-a".into(), ()), ("b".into(), ())];
        assert_eq!(s.strip_with(&mut headers, &mut scratch), 1);
        assert_eq!(headers.len(), 1);
    }
}

/// `X-Remote_User` is `X-Remote-User` to PHP, Django, WSGI and Go's CGI: both are
/// `HTTP_X_REMOTE_USER`. Before, the first reached such an origin from any client.
#[test]
fn underscores_match_as_dashes_both_ways() {
    let s = HeaderSet::from_list(
        "@default, x_internal_secret, x-edgewise-*",
        DEFAULT_INTERNAL_REQUEST_HEADERS,
    )
    .unwrap();
    assert_matches(
        &s,
        &[
            "X-Remote_User",
            "x_forwarded_user",
            "X_AUTH_REQUEST_EMAIL",
            "x-internal-secret",
            "X-Internal_Secret",
            "x_edgewise_route",
            "X_EDGEWISE-anything",
        ],
        &[
            "x-remote-userx",
            "x=remote-user",
            "x-edgewise",
            "accept_encoding",
        ],
    );
    let mut headers: Vec<(&str, &str)> = vec![("X-Remote_User", "admin"), ("accept", "a")];
    assert_eq!(s.strip(&mut headers), 1);
    assert_eq!(headers, vec![("accept", "a")]);
}

#[test]
fn fold8_folds_capitals_and_underscores_only() {
    for b in 0..=255u8 {
        let word = u64::from_le_bytes([b; 8]);
        let expected = u64::from_le_bytes([fold::fold(b); 8]);
        assert_eq!(fold::fold8(word), expected, "byte {b:#x}");
    }
    // Bytes fold on their own, whatever their neighbours.
    for (a, b) in [
        (b'_', b'A'),
        (b'_', 0xdf),
        (0x5e, b'_'),
        (b'_', 0x60),
        (0xff, b'_'),
    ] {
        let word = u64::from_le_bytes([a, b, a, a, b, b, a, b]);
        let (fa, fb) = (fold::fold(a), fold::fold(b));
        let expected = u64::from_le_bytes([fa, fb, fa, fa, fb, fb, fa, fb]);
        assert_eq!(fold::fold8(word), expected, "{a:#x} {b:#x}");
    }
}

#[test]
fn lower8_folds_only_capitals() {
    for b in 0..=255u8 {
        let word = u64::from_le_bytes([b; 8]);
        let expected = u64::from_le_bytes([b.to_ascii_lowercase(); 8]);
        assert_eq!(fold::lower8(word), expected, "byte {b:#x}");
    }
}

fn name_strategy() -> impl Strategy<Value = Vec<u8>> {
    // A small alphabet makes near-misses (shared length, ends and prefixes) common.
    proptest::collection::vec(
        prop_oneof![
            Just(b'a'),
            Just(b'B'),
            Just(b'-'),
            Just(b'x'),
            Just(b'^'),
            Just(b'~'),
            Just(b'_'),
        ],
        1..20,
    )
}

fn case_shuffle(name: &[u8], flips: &[bool]) -> Vec<u8> {
    name.iter()
        .zip(flips.iter().cycle())
        .map(|(&b, &f)| {
            if f {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn agrees_with_naive_reference(
        names in proptest::collection::vec((name_strategy(), any::<bool>()), 0..40),
        probes in proptest::collection::vec(name_strategy(), 0..60),
        flips in proptest::collection::vec(any::<bool>(), 1..8),
    ) {
        let names: Vec<Vec<u8>> = names
            .into_iter()
            .map(|(mut n, prefix)| { if prefix { n.push(b'*'); } n })
            .collect();
        let fast = HeaderSet::new(&names).unwrap();
        let naive = Naive::new(&names);
        // Every member in random case, plus random probes and their case variants.
        let members = names.iter().map(|n| n.strip_suffix(b"*").unwrap_or(n).to_vec());
        for probe in members.chain(probes) {
            let variant = case_shuffle(&probe, &flips);
            prop_assert_eq!(fast.contains(&probe), naive.contains(&probe), "{:?}", probe);
            prop_assert_eq!(fast.contains(&variant), naive.contains(&variant), "{:?}", variant);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(names in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..10), probe in proptest::collection::vec(any::<u8>(), 0..40)) {
        if let Ok(set) = HeaderSet::new(&names) {
            let naive = Naive::new(&names);
            prop_assert_eq!(set.contains(&probe), naive.contains(&probe));
        }
    }

    #[test]
    fn strip_agrees_with_filter(
        names in proptest::collection::vec(name_strategy(), 1..10),
        headers in proptest::collection::vec(name_strategy(), 0..30),
    ) {
        let set = HeaderSet::new(&names).unwrap();
        let mut list: Vec<(Vec<u8>, usize)> = headers.iter().cloned().enumerate().map(|(i, n)| (n, i)).collect();
        let expected: Vec<(Vec<u8>, usize)> = list.iter().filter(|(n, _)| !set.contains(n)).cloned().collect();
        let mut distinct: Vec<Vec<u8>> = headers.iter().filter(|n| set.contains(n)).map(|n| n.to_ascii_lowercase()).collect();
        distinct.sort();
        distinct.dedup();
        prop_assert_eq!(set.strip(&mut list), distinct.len());
        prop_assert_eq!(list, expected);
    }
}
