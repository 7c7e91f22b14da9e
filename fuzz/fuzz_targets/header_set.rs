//! HeaderSet::new / from_list on arbitrary entries, and contains() against the obvious answer
//! (ASCII case ignored, `_` read as `-`).
#![no_main]

use edgewise::HeaderSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // Entries separated by '\n'; the last entry is the probe, not a member.
    let mut parts: Vec<&[u8]> = data.split(|&b| b == b'\n').collect();
    let probe = parts.pop().unwrap_or_default();
    if let Ok(list) = std::str::from_utf8(data) {
        let _ = HeaderSet::from_list(list, &["x-default", "x-family-*"]);
    }
    let Ok(set) = HeaderSet::new(&parts) else {
        return;
    };
    // Names are one to a CGI-style gateway: upper-cased, `-` as `_`.
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
    let expected = parts.iter().any(|entry| match entry.strip_suffix(b"*") {
        Some(prefix) => probe.len() >= prefix.len() && cgi(&probe[..prefix.len()]) == cgi(prefix),
        None => cgi(entry) == cgi(probe),
    });
    assert_eq!(set.contains(probe), expected);

    let mut headers: Vec<(&[u8], ())> = parts
        .iter()
        .map(|p| (*p, ()))
        .chain([(probe, ())])
        .collect();
    set.strip(&mut headers);
    assert!(headers.iter().all(|(name, _)| !set.contains(name)));
});
