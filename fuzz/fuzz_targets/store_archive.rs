//! `FeatureSnapshot::from_archive` on arbitrary bytes: an error or a snapshot, never a panic,
//! a hang or an out-of-bounds read. Half the inputs get a valid header and checksum in front,
//! so the fuzzer reaches rkyv's validation and the table layout's checks, not just the
//! checksum. A snapshot that comes out must archive again and read back equal.
#![no_main]

use edgewise::FeatureSnapshot;
use libfuzzer_sys::fuzz_target;

/// The header `to_archive` writes, recomputed for `body` (magic, generation 0, length,
/// checksum, version, time, reserved, header checksum).
fn with_header(body: &[u8]) -> Vec<u8> {
    let words = [
        u64::from_le_bytes(*b"EWFEAT01"),
        0,
        body.len() as u64,
        xxhash_rust::xxh3::xxh3_64(body),
        0,
        0,
        0,
    ];
    let mut out: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let sum = xxhash_rust::xxh3::xxh3_64(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    out.extend_from_slice(body);
    out
}

/// A table's name and its rows, each a key and its features as bits.
type Table = (String, Vec<(u64, Vec<u32>)>);

/// The snapshot with floats as bits (NaN == NaN) and rows in key order.
fn canonical(s: &FeatureSnapshot) -> (u64, u64, Vec<Table>) {
    let tables = s
        .tables
        .iter()
        .map(|t| {
            let mut rows: Vec<_> = t
                .rows
                .iter()
                .map(|(&k, v)| (k, v.iter().map(|f| f.to_bits()).collect()))
                .collect();
            rows.sort_unstable();
            (t.name.clone(), rows)
        })
        .collect();
    (s.version, s.created_unix_ms, tables)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let bytes = if mode & 1 == 0 {
        rest.to_vec()
    } else {
        with_header(rest)
    };
    if let Ok(snapshot) = FeatureSnapshot::from_archive(&bytes) {
        let again = snapshot.to_archive().expect("re-archive");
        let back = FeatureSnapshot::from_archive(&again).expect("read back");
        assert_eq!(canonical(&back), canonical(&snapshot));
    }
});
