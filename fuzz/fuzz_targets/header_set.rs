//! HeaderSet::new / from_list on arbitrary entries, and contains() against the obvious answer.
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
    let Ok(set) = HeaderSet::new(&parts) else { return };
    let expected = parts.iter().any(|entry| match entry.strip_suffix(b"*") {
        Some(prefix) => probe.len() >= prefix.len() && probe[..prefix.len()].eq_ignore_ascii_case(prefix),
        None => entry.eq_ignore_ascii_case(probe),
    });
    assert_eq!(set.contains(probe), expected);

    let mut headers: Vec<(&[u8], ())> = parts.iter().map(|p| (*p, ())).chain([(probe, ())]).collect();
    set.strip(&mut headers);
    assert!(headers.iter().all(|(name, _)| !set.contains(name)));
});
