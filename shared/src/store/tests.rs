#![allow(clippy::unwrap_used, clippy::expect_used)]

mod files;
mod index;
mod protocol;
mod stalled_reader;

use std::collections::HashMap;
use std::prelude::rust_2024::*;
use std::vec;

use proptest::prelude::*;

use super::*;

/// A snapshot whose every float is `version`, `tables` tables of `keys` keys, vectors of
/// `1 + key % dims` floats (so lengths differ).
fn stamped(version: u64, tables: usize, keys: u64, dims: u64) -> FeatureSnapshot {
    let tables = (0..tables)
        .map(|t| {
            let mut table = FeatureTable::new(format!("t{t}"));
            for key in 0..keys {
                let key = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
                table
                    .rows
                    .insert(key, vec![version as f32; (1 + key % dims) as usize]);
            }
            table
        })
        .collect();
    FeatureSnapshot {
        version,
        created_unix_ms: 1_700_000_000_000 + version,
        tables,
    }
}

fn rows_strategy() -> impl Strategy<Value = HashMap<u64, Vec<f32>>> {
    prop::collection::hash_map(
        any::<u64>(),
        prop::collection::vec(
            any::<f32>().prop_filter("NaN != NaN", |f| !f.is_nan()),
            0..9,
        ),
        0..64,
    )
}

fn snapshot_strategy() -> impl Strategy<Value = FeatureSnapshot> {
    (
        any::<u64>(),
        any::<u64>(),
        prop::collection::vec(rows_strategy(), 0..4),
    )
        .prop_map(|(version, created_unix_ms, tables)| FeatureSnapshot {
            version,
            created_unix_ms,
            tables: tables
                .into_iter()
                .enumerate()
                .map(|(i, rows)| FeatureTable {
                    name: format!("table-{i}"),
                    rows,
                })
                .collect(),
        })
}

// Off under Miri: rkyv 0.8.18's own `CheckBytes` for `ArchivedString` fails Stacked Borrows
// (a retag in rkyv's string/repr.rs), and interpreting rkyv is too slow under Tree Borrows;
// the store's own `unsafe` and its protocol are what the Miri runs cover.
proptest! {

    #[test]
    #[cfg_attr(miri, ignore)]
    fn archive_round_trips(snapshot in snapshot_strategy()) {
        let bytes = snapshot.to_archive().unwrap();
        prop_assert_eq!(FeatureSnapshot::from_archive(&bytes).unwrap(), snapshot);
    }

    /// Any flipped bit, anywhere, is an error (header checksum, body checksum), never a panic
    /// nor a different snapshot.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn flipped_bits_are_refused(snapshot in snapshot_strategy(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let mut bytes = snapshot.to_archive().unwrap();
        let at = at.index(bytes.len());
        bytes[at] ^= 1 << bit;
        prop_assert!(FeatureSnapshot::from_archive(&bytes).is_err());
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn truncated_archives_are_refused(snapshot in snapshot_strategy(), cut in any::<prop::sample::Index>()) {
        let bytes = snapshot.to_archive().unwrap();
        let cut = cut.index(bytes.len());
        let err = FeatureSnapshot::from_archive(&bytes[..cut]).unwrap_err();
        prop_assert!(matches!(err, StoreError::Truncated { .. } | StoreError::DataCorrupt { .. }), "{err}");
    }

    /// Garbage with a valid header and checksum still fails validation cleanly.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn garbage_behind_a_valid_header_is_refused(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let header = format::Header { generation: 0, len: body.len() as u64, checksum: xxhash_rust::xxh3::xxh3_64(&body), version: 1, created_unix_ms: 0, index_len: 0 };
        let mut bytes = header.encode().to_vec();
        bytes.extend_from_slice(&body);
        let _ = FeatureSnapshot::from_archive(&bytes);
    }
}

#[test]
#[cfg_attr(miri, ignore)]
fn error_kinds_are_distinct() {
    let bytes = stamped(3, 1, 10, 4).to_archive().unwrap();
    let mut body_flip = bytes.clone();
    *body_flip.last_mut().unwrap() ^= 1;
    assert!(matches!(
        FeatureSnapshot::from_archive(&body_flip),
        Err(StoreError::Checksum { .. })
    ));
    let mut head_flip = bytes.clone();
    head_flip[9] ^= 1;
    let err = FeatureSnapshot::from_archive(&head_flip).unwrap_err();
    assert_eq!(
        err.to_string(),
        "<archive>: archive header checksum mismatch"
    );
    let err = FeatureSnapshot::from_archive(&bytes[..bytes.len() - 1]).unwrap_err();
    assert!(matches!(err, StoreError::Truncated { .. }), "{err}");
    assert!(matches!(
        FeatureSnapshot::from_archive(b"EWFEAT01"),
        Err(StoreError::DataCorrupt { .. })
    ));
}

#[test]
fn table_mut_adds_missing_tables_once() {
    let mut snapshot = FeatureSnapshot::default();
    snapshot.table_mut("a").rows.insert(1, vec![1.0]);
    snapshot.table_mut("a").rows.insert(2, vec![2.0]);
    assert_eq!(snapshot.tables.len(), 1);
    assert_eq!(snapshot.table("a").unwrap().rows.len(), 2);
    assert!(snapshot.table("b").is_none());
}

/// `bytes` (an archive) with each 16-byte index slot of a key tagged `tag` pointed at floats
/// `0..len`, the checksums made anew as a forger would (xxh3 is no MAC). Returns how many
/// slots it pointed.
fn forge_shared_rows(bytes: &mut [u8], tag: u64, len: u32) -> usize {
    let (mut at, mut pointed) = (format::HEADER, 0);
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    while at + 16 <= bytes.len() {
        if word(bytes, at) >> 48 == tag >> 48 {
            bytes[at + 8..at + 12].copy_from_slice(&0u32.to_le_bytes());
            bytes[at + 12..at + 16].copy_from_slice(&len.to_le_bytes());
            (at, pointed) = (at + 16, pointed + 1);
        } else {
            at += 8;
        }
    }
    let mut header = format::Header::decode(bytes).unwrap();
    header.checksum = xxhash_rust::xxh3::xxh3_64(&bytes[format::HEADER..]);
    bytes[..format::HEADER].copy_from_slice(&header.encode());
    pointed
}

/// Rows sharing floats are refused: each would be copied whole, and 65,536 keys on one run of
/// 4,096 floats (a 2.4 MB file) became 1 GiB in the daemon.
#[test]
#[cfg_attr(miri, ignore)]
fn rows_sharing_floats_are_refused() {
    const TAG: u64 = 0x5eed << 48;
    let mut table = FeatureTable::new("ip");
    table.rows.insert(TAG, vec![0.25; 64]);
    for key in 1..256 {
        table.rows.insert(TAG | key, vec![0.25]);
    }
    let snapshot = FeatureSnapshot {
        version: 1,
        created_unix_ms: 0,
        tables: vec![table],
    };
    let mut bytes = snapshot.to_archive().unwrap();
    assert_eq!(forge_shared_rows(&mut bytes, TAG, 64), 256);
    let err = FeatureSnapshot::from_archive(&bytes).unwrap_err();
    assert!(err.to_string().contains("do not add up"), "{err}");
}

/// Table names are checked unique in one sort: compared each with those before, 40k tables
/// took minutes.
#[test]
#[cfg_attr(miri, ignore)]
fn table_names_are_unique() {
    let mut snapshot = stamped(1, 3, 2, 1);
    snapshot.tables[2].name = "t0".into();
    let bytes = snapshot.to_archive().unwrap();
    let err = FeatureSnapshot::from_archive(&bytes).unwrap_err();
    assert!(err.to_string().contains("two tables share a name"), "{err}");
    snapshot.tables[2].name = "t2".into();
    assert!(FeatureSnapshot::from_archive(&snapshot.to_archive().unwrap()).is_ok());
}
