#![allow(clippy::unwrap_used)]

use super::*;
use alloc::string::ToString;

#[test]
fn a_list_parses_each_source() {
    let list = " zone = header:X-Edgewise-Zone, stage=query:stage,service=path:1 ,";
    let attributes = RouteAttribute::parse_list(list).unwrap();
    // In key order, not the list's.
    assert_eq!(
        attributes,
        [
            RouteAttribute {
                key: "service".into(),
                source: AttributeSource::PathSegment(1)
            },
            RouteAttribute {
                key: "stage".into(),
                source: AttributeSource::Query("stage".into())
            },
            RouteAttribute {
                key: "zone".into(),
                source: AttributeSource::Header("x-edgewise-zone".into())
            },
        ]
    );
    assert!(RouteAttribute::parse_list("  ").unwrap().is_empty());
}

#[test]
fn bad_entries_name_themselves() {
    for (list, reason) in [
        ("zone", "expected key=source"),
        ("=header:x", "the key must be"),
        ("zone=x-zone", "expected a source"),
        ("zone=cookie:z", "must be header:, query:, path: or prefix:"),
        ("v=prefix:", "expected prefix:/PATH=VALUE"),
        ("v=prefix:/a=x|/b", "expected prefix:/PATH=VALUE"),
        ("v=prefix:a=x", "starts with /"),
        ("v=prefix:/a b=x", "starts with /"),
        ("v=prefix:/a?b=x", "starts with /"),
        ("v=prefix:/a=", "1-256 bytes"),
        ("v=prefix:/a=x|/a/=y", "listed twice"),
        ("v=prefix:/a=x|/b=y|/a/=z", "listed twice"),
        ("v=prefix:/a/./b=x", "no . or .. segment"),
        ("v=prefix:/a/..=x", "no . or .. segment"),
        ("zone=header:bad name", "not a valid header name"),
        ("zone=query:a&b", "not a valid query parameter name"),
        ("zone=path:0", "segment number"),
        ("zone=path:x", "segment number"),
        ("a=path:1,a=path:2", "key listed twice"),
    ] {
        let error = RouteAttribute::parse_list(list).unwrap_err().to_string();
        assert!(error.contains(reason), "{list}: {error}");
    }
    let nine = (0..9)
        .map(|i| alloc::format!("k{i}=path:1"))
        .collect::<Vec<_>>();
    let error = RouteAttribute::parse_list(&nine.join(",")).unwrap_err();
    assert!(error.to_string().contains("more than 8"), "{error}");
}

#[test]
fn values_are_found_as_origins_read_them() {
    let query = |q, name| query_value(q, name).map(Cow::into_owned);
    assert_eq!(query("a=1&stage=beta&b", "stage").as_deref(), Some("beta"));
    assert_eq!(query("a=1&b", "b").as_deref(), Some(""));
    assert_eq!(query("stagex=1", "stage"), None);
    assert_eq!(query("", "stage"), None);
    // Decoded as forms are, names and values: origins read these as stage=canary.
    assert_eq!(query("st%61ge=canary", "stage").as_deref(), Some("canary"));
    assert_eq!(query("stage=c%61nary", "stage").as_deref(), Some("canary"));
    assert_eq!(query("q=a+b%2B", "q").as_deref(), Some("a b+"));
    assert_eq!(query("gr%C3%B6%C3%9Fe=x", "größe").as_deref(), Some("x"));
    // Twice: PHP and Rails act on the last, others on the first; neither routes.
    assert_eq!(query("stage=prod&stage=canary", "stage"), None);
    assert_eq!(query("stage=prod&st%61ge=canary", "stage"), None);
    for (sent, read) in [
        ("/admin/users", "/admin/users"),
        ("//admin/users", "/admin/users"),
        ("/%61dmin/users", "/admin/users"),
        ("/admin;x/users", "/admin/users"),
        ("/a/./b/../admin/", "/a/admin/"),
        ("/", "/"),
    ] {
        assert_eq!(routing_path(sent), read, "{sent}");
    }
    assert!(matches!(routing_path("/admin/users"), Cow::Borrowed(_)));
    assert_eq!(path_segment("/api/v1/x", 1), Some("api"));
    assert_eq!(path_segment("//api//v1", 2), Some("v1"));
    assert_eq!(path_segment("/api", 2), None);
    assert_eq!(path_segment("/", 1), None);
    assert_eq!(path_segment("/api", 0), None);
}

fn prefixes(list: &str) -> Vec<PathPrefix> {
    let attributes = RouteAttribute::parse_list(&alloc::format!("v=prefix:{list}")).unwrap();
    match &attributes[0].source {
        AttributeSource::PathPrefix(rules) => rules.clone(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_longest_prefix_by_whole_segments_gives_the_value() {
    let rules = prefixes(" /v2 = v2 | /legacy/api/=v1|/=v3|/v2/beta=beta");
    assert_eq!(rules.len(), 4);
    for (path, value) in [
        ("/v2", Some("v2")),
        ("/v2/", Some("v2")),
        ("/v2/users", Some("v2")),
        ("/v2/beta/x", Some("beta")),
        ("/v2/betas", Some("v2")),
        ("/v2beta", Some("v3")),
        ("/legacy/api", Some("v1")),
        ("/legacy/apis", Some("v3")),
        ("/", Some("v3")),
        ("", Some("v3")),
    ] {
        assert_eq!(prefix_value(path, &rules), value, "{path}");
    }
    // Read as origins read the path: each of these is /admin to some.
    let pools = prefixes("/admin=admin|/=public");
    for sent in [
        "/admin/users",
        "//admin/users",
        "/%61dmin/users",
        "/ADMIN/users",
        "/admin;x/users",
    ] {
        assert_eq!(
            prefix_value(&routing_path(sent), &pools),
            Some("admin"),
            "{sent}"
        );
    }
    for prefix in ["/a%62", "/a;b"] {
        let list = alloc::format!("v=prefix:{prefix}=x");
        assert!(RouteAttribute::parse_list(&list).is_err(), "{prefix}");
    }
    let without_root = prefixes("/v2=v2");
    assert_eq!(prefix_value("/v3/x", &without_root), None);
    assert_eq!(prefix_value("/v2/x", &without_root), Some("v2"));
}

#[test]
fn prefix_lists_are_bounded() {
    let many = (0..65)
        .map(|i| alloc::format!("/p{i}=x"))
        .collect::<Vec<_>>()
        .join("|");
    let error = RouteAttribute::parse_list(&alloc::format!("v=prefix:{many}"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("more than 64 prefixes"), "{error}");
    let long = "x".repeat(257);
    assert!(RouteAttribute::parse_list(&alloc::format!("v=prefix:/a={long}")).is_err());
}
