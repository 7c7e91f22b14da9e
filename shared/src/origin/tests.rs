extern crate std;

use alloc::string::String;

use proptest::prelude::*;

use super::*;

#[test]
fn parses_and_normalises() {
    let o = Origin::parse("HTTPS://Origin.Example.COM:8443/api/v1/").unwrap();
    assert_eq!(o.scheme(), Scheme::Https);
    assert_eq!(o.authority(), "origin.example.com:8443");
    assert_eq!(o.path_prefix(), "/api/v1");
    assert_eq!(o.as_str(), "https://origin.example.com:8443/api/v1");
}

/// One origin, one spelling: `http://h:80` and `http://h` are the same origin, and a host
/// table holding both would send it twice the traffic.
#[test]
fn ports_are_written_without_leading_zeros_or_the_default() {
    let normal = |url: &str| String::from(Origin::parse(url).unwrap().as_str());
    assert_eq!(normal("http://h:80"), "http://h");
    assert_eq!(normal("http://h:0080/p/"), "http://h/p");
    assert_eq!(normal("HTTPS://H:443"), "https://h");
    assert_eq!(normal("https://[::1]:00443/x"), "https://[::1]/x");
    assert_eq!(normal("http://h:08080"), "http://h:8080");
    // The other scheme's default is an ordinary port.
    assert_eq!(normal("http://h:443"), "http://h:443");
    assert_eq!(normal("https://h:80"), "https://h:80");
    assert_eq!(Origin::parse("http://h:80").unwrap().authority(), "h");
    for spelled_otherwise in [
        "http://h:80",
        "https://h:443/p",
        "http://h:01",
        "http://[::1]:080",
    ] {
        assert_eq!(
            Origin::check(spelled_otherwise),
            Ok(false),
            "{spelled_otherwise}"
        );
    }
    for normal in [
        "http://h:443",
        "https://h:80/p",
        "http://h:8",
        "http://h:800",
        "http://h:4431",
    ] {
        assert_eq!(Origin::check(normal), Ok(true), "{normal}");
    }
}

#[test]
fn accepts_ip_literals() {
    assert_eq!(
        Origin::parse("http://127.0.0.1:8080").unwrap().authority(),
        "127.0.0.1:8080"
    );
    assert_eq!(
        Origin::parse("http://[::1]:9000/").unwrap().authority(),
        "[::1]:9000"
    );
    assert_eq!(
        Origin::parse("http://[FE80::1]").unwrap().authority(),
        "[fe80::1]"
    );
}

#[test]
fn refuses_bad_origins_with_a_reason() {
    let cases = [
        ("", "expected http://host or https://host"),
        ("origin.example.com", "expected http://host or https://host"),
        ("ftp://origin.example.com", "scheme must be http or https"),
        ("http://", "missing host"),
        ("http:///path", "missing host"),
        ("http://:80", "missing host"),
        (
            "http://user:pw@host",
            "credentials in the URL are not allowed",
        ),
        ("http://host:0", "port must be a number in 1-65535"),
        ("http://host:65536", "port must be a number in 1-65535"),
        ("http://host:", "port must be a number in 1-65535"),
        ("http://host:+80", "port must be a number in 1-65535"),
        ("http://host:8o", "port must be a number in 1-65535"),
        ("http://[::1", "unterminated IPv6 literal"),
        ("http://[::1]x", "junk after IPv6 literal"),
        ("http://[zz]", "malformed IPv6 literal"),
        ("http://ho st", "host must be a DNS name or an IP address"),
        ("http://.host", "host must be a DNS name or an IP address"),
        ("http://a..b", "host must be a DNS name or an IP address"),
        (
            "http://host/a?b",
            "a query or fragment is not allowed in an origin URL",
        ),
        (
            "http://host#frag",
            "a query or fragment is not allowed in an origin URL",
        ),
        (
            "http://host/a b",
            "path prefix holds a byte that must be percent-encoded",
        ),
        (
            "http://host/é",
            "path prefix holds a byte that must be percent-encoded",
        ),
    ];
    for (url, reason) in cases {
        assert_eq!(
            Origin::parse(url),
            Err(Error::InvalidOrigin(reason)),
            "input {url:?}"
        );
    }
}

#[test]
fn refuses_overlong_origin() {
    let url = std::format!("http://h/{}", "a".repeat(MAX_URL_LEN));
    assert_eq!(
        Origin::parse(&url),
        Err(Error::InvalidOrigin("longer than 16 KiB"))
    );
}

#[test]
fn joins_prefix_path_and_query() {
    let o = Origin::parse("http://127.0.0.1:8080/base/").unwrap();
    assert_eq!(
        o.upstream_url("/x/y", Some("a=1&b=%20")).unwrap(),
        "http://127.0.0.1:8080/base/x/y?a=1&b=%20"
    );
    assert_eq!(
        o.upstream_url("/", None).unwrap(),
        "http://127.0.0.1:8080/base/"
    );
    assert_eq!(
        o.upstream_url("/", Some("")).unwrap(),
        "http://127.0.0.1:8080/base/"
    );
    let bare = Origin::parse("http://h").unwrap();
    assert_eq!(bare.upstream_url("/p", None).unwrap(), "http://h/p");
}

#[test]
fn refuses_unforwardable_targets() {
    let o = Origin::parse("http://h").unwrap();
    let err = |r| Err(Error::InvalidTarget(r));
    assert_eq!(o.upstream_url("x", None), err("path must start with '/'"));
    assert_eq!(
        o.upstream_url("/a b", None),
        err("path holds a byte that must be percent-encoded")
    );
    assert_eq!(
        o.upstream_url("/a?b", None),
        err("path holds a byte that must be percent-encoded")
    );
    assert_eq!(
        o.upstream_url("/a", Some("x#y")),
        err("query holds a byte that must be percent-encoded")
    );
    assert_eq!(
        o.upstream_url("/a", Some("x\ny")),
        err("query holds a byte that must be percent-encoded")
    );
    let long = std::format!("/{}", "a".repeat(MAX_URL_LEN));
    assert_eq!(
        o.upstream_url(&long, None),
        err("upstream URL longer than 16 KiB")
    );
}

proptest! {
    #[test]
    fn parse_never_panics_and_is_idempotent(url in "\\PC{0,64}|(?i:https?)://[a-zA-Z0-9.:\\[\\]@_-]{0,30}(/[ -~]{0,20})?") {
        if let Ok(origin) = Origin::parse(&url) {
            let again = Origin::parse(origin.as_str()).unwrap();
            prop_assert_eq!(&again, &origin);
            prop_assert!(!origin.as_str().ends_with('/'));
        }
    }

    #[test]
    fn upstream_url_extends_the_base(path in "[ -~]{0,40}", query in proptest::option::of("[ -~]{0,20}")) {
        let origin = Origin::parse("https://o.example/pre").unwrap();
        if let Ok(url) = origin.upstream_url(&path, query.as_deref()) {
            let expected: String = std::format!("https://o.example/pre{path}");
            prop_assert!(url.starts_with(&expected));
        }
    }

    /// The check without a parse agrees with the parse and the normal form (lower-case scheme
    /// and host, a port without leading zeros and not the scheme's default, no trailing `/`).
    #[test]
    fn check_agrees_with_the_normal_form(
        url in "(?i:https?)://[a-zA-Z0-9._-]{0,12}(:(0?(80|443)|[0-9]{0,6}))?(/[ -~]{0,10})?[?#@]?",
    ) {
        let lower = |s: &str| s == s.to_ascii_lowercase();
        fn port(authority: &str) -> Option<&str> {
            authority.rsplit_once(':').map(|(_, p)| p)
        }
        let normal = split_checked(&url).is_ok_and(|(scheme, authority, prefix)| {
            let name = &url[..url.len() - authority.len() - prefix.len()];
            let port = port(authority);
            let port_normal = port.is_none_or(|p| {
                !p.starts_with('0') && p != if scheme == Scheme::Http { "80" } else { "443" }
            });
            lower(name) && lower(authority) && port_normal && !prefix.ends_with('/')
        });
        prop_assert_eq!(Origin::check(&url).ok(), split_checked(&url).ok().map(|_| normal), "{}", url);
        if let Ok(origin) = Origin::parse(&url) {
            prop_assert_eq!(origin.as_str() == url, normal, "{}", url);
        }
    }
}

#[test]
fn loopback_hosts_are_this_machine_only() {
    for url in [
        "http://localhost",
        "http://localhost:7878",
        "http://127.0.0.1:7878",
        "http://127.8.9.10",
        "http://[::1]:8080/api",
        "HTTP://LOCALHOST",
    ] {
        let origin = Origin::parse(url).unwrap();
        assert!(origin.is_loopback(), "{url}");
    }
    for url in [
        "http://daemon.example",
        "http://10.0.0.1:7878",
        "http://128.0.0.1",
        "http://localhost.example",
        "http://127.0.0.1.example",
        "http://[::2]",
        "https://0.0.0.0",
    ] {
        let origin = Origin::parse(url).unwrap();
        assert!(!origin.is_loopback(), "{url}");
    }
    assert_eq!(Origin::parse("http://[::1]:80").unwrap().host(), "[::1]");
    assert_eq!(Origin::parse("http://h:81").unwrap().host(), "h");
}
