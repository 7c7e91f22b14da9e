//! RouteAttribute::parse_list on arbitrary text (the `ROUTE_ATTRIBUTES` var), then each source
//! read from an arbitrary path and query, against the obvious answers.
#![no_main]

use edgewise::{
    AttributeSource, MAX_PATH_PREFIXES, MAX_ROUTE_ATTRIBUTES, RouteAttribute, path_segment,
    prefix_value, query_value,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The list, then a path and a query on the lines after it.
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut lines = text.splitn(3, '\n');
    let (list, path, query) = (lines.next().unwrap_or(""), lines.next().unwrap_or(""), lines.next().unwrap_or(""));
    let Ok(attributes) = RouteAttribute::parse_list(list) else { return };
    assert!(attributes.len() <= MAX_ROUTE_ATTRIBUTES);
    assert!(attributes.windows(2).all(|w| w[0].key < w[1].key), "keys sorted and unique");
    for attribute in &attributes {
        match &attribute.source {
            AttributeSource::Header(name) => assert_eq!(name, &name.to_ascii_lowercase()),
            AttributeSource::Query(name) => {
                // The first parameter of that name, by splitting the query.
                let expected = query.split('&').find_map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (k == name).then_some(v),
                    None => (pair == name).then_some(""),
                });
                assert_eq!(query_value(query, name), expected);
            }
            AttributeSource::PathSegment(n) => {
                if let Some(segment) = path_segment(path, *n) {
                    assert!(!segment.is_empty() && !segment.contains('/'));
                }
            }
            AttributeSource::PathPrefix(rules) => {
                assert!(!rules.is_empty() && rules.len() <= MAX_PATH_PREFIXES);
                let under = |prefix: &str| {
                    let prefix = prefix.trim_end_matches('/');
                    path == prefix || path.starts_with(&format!("{prefix}/"))
                };
                // The longest prefix the path is under, by whole segments.
                let expected = rules
                    .iter()
                    .filter(|r| under(&r.prefix))
                    .max_by_key(|r| r.prefix.trim_end_matches('/').len())
                    .map(|r| r.value.as_str());
                assert_eq!(prefix_value(path, rules), expected);
            }
            _ => {}
        }
    }
});
