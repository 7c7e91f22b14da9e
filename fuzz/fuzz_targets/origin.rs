//! Origin::parse on arbitrary strings: never panics, normalisation is idempotent, and
//! upstream_url only ever extends the base.
#![no_main]

use edgewise::Origin;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (url, target) = text.split_once('\n').unwrap_or((&text, "/"));
    let Ok(origin) = Origin::parse(url) else {
        return;
    };
    assert_eq!(Origin::parse(origin.as_str()).as_ref(), Ok(&origin));
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (target, None),
    };
    if let Ok(upstream) = origin.upstream_url(path, query) {
        assert!(upstream.starts_with(origin.as_str()));
    }
});
