//! RouteAttribute::parse_list on arbitrary text (the `ROUTE_ATTRIBUTES` var), then each source
//! read from an arbitrary path and query, against the obvious answers.
#![no_main]

use edgewise::{
    AttributeSource, MAX_PATH_PREFIXES, MAX_ROUTE_ATTRIBUTES, RouteAttribute, path_segment,
    prefix_value, query_value, routing_path,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The list, then a path and a query on the lines after it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let (list, path, query) = (
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
        lines.next().unwrap_or(""),
    );
    let Ok(attributes) = RouteAttribute::parse_list(list) else {
        return;
    };
    assert!(attributes.len() <= MAX_ROUTE_ATTRIBUTES);
    assert!(
        attributes.windows(2).all(|w| w[0].key < w[1].key),
        "keys sorted and unique"
    );
    for attribute in &attributes {
        match &attribute.source {
            AttributeSource::Header(name) => assert_eq!(name, &name.to_ascii_lowercase()),
            AttributeSource::Query(name) => {
                // The one parameter of that name, decoded as forms are; none if given twice.
                // Text that does not decode to UTF-8 stays as it was sent.
                let decode = |sent: &str| -> String {
                    let t = sent.replace('+', " ");
                    let (b, mut out, mut i) = (t.as_bytes(), Vec::new(), 0);
                    while i < b.len() {
                        let hex = b
                            .get(i + 1..i + 3)
                            .and_then(|h| std::str::from_utf8(h).ok());
                        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
                            (b'%', Some(byte)) if !hex.unwrap().starts_with(['+', '-']) => {
                                out.push(byte);
                                i += 3;
                            }
                            (byte, _) => {
                                out.push(byte);
                                i += 1;
                            }
                        }
                    }
                    String::from_utf8(out).unwrap_or_else(|_| sent.to_owned())
                };
                let matches: Vec<String> = query
                    .split('&')
                    .filter_map(|pair| {
                        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                        let k = if k.contains(['%', '+']) {
                            decode(k)
                        } else {
                            k.to_owned()
                        };
                        let v = if v.contains(['%', '+']) {
                            decode(v)
                        } else {
                            v.to_owned()
                        };
                        (&k == name).then_some(v)
                    })
                    .collect();
                let expected = (matches.len() == 1).then(|| matches[0].clone());
                assert_eq!(query_value(query, name).map(|v| v.into_owned()), expected);
            }
            AttributeSource::PathSegment(n) => {
                if let Some(segment) = path_segment(path, *n) {
                    assert!(!segment.is_empty() && !segment.contains('/'));
                }
            }
            AttributeSource::PathPrefix(rules) => {
                assert!(!rules.is_empty() && rules.len() <= MAX_PATH_PREFIXES);
                // Matched against the path as origins read it, ignoring ASCII case.
                let read = routing_path(path).to_ascii_lowercase();
                let under = |prefix: &str| {
                    let prefix = prefix.trim_end_matches('/').to_ascii_lowercase();
                    read == prefix || read.starts_with(&format!("{prefix}/"))
                };
                // The longest prefix the path is under, by whole segments.
                let expected = rules
                    .iter()
                    .filter(|r| under(&r.prefix))
                    .max_by_key(|r| r.prefix.trim_end_matches('/').len())
                    .map(|r| r.value.as_str());
                assert_eq!(prefix_value(&routing_path(path), rules), expected);
            }
            _ => {}
        }
    }
});
