//! The table index and the lookups it bounds: against the owned map, and over bytes changed
//! after the index was read (the Miri run covers these: the lookup path is what a damaged file
//! reaches).

use std::collections::HashMap;
use std::prelude::rust_2024::*;
use std::vec;

use proptest::prelude::*;

/// Tables to try: small ones under Miri, which interprets every serialization.
fn rows() -> impl Strategy<Value = HashMap<u64, Vec<f32>>> {
    let (keys, dims) = if cfg!(miri) {
        (0..6, 0..3)
    } else {
        (0..64, 0..9)
    };
    let row = prop::collection::vec(
        any::<f32>().prop_filter("NaN != NaN", |f| !f.is_nan()),
        dims,
    );
    prop::collection::hash_map(any::<u64>(), row, keys)
}
use crate::store::format::{HEADER, Header};
use crate::store::index::{self, TableIndex};
use crate::store::writer::write_into;
use crate::store::{FeatureSnapshot, FeatureTable};

/// A data file's bytes for `snapshot`, as the writer lays them out, and its checked index.
fn file_of(snapshot: &FeatureSnapshot) -> (rkyv::util::AlignedVec<64>, Vec<TableIndex>) {
    let size =
        snapshot.size_bound().unwrap() + HEADER + index::bound(snapshot.tables.len()).unwrap();
    let mut file = rkyv::util::AlignedVec::<64>::with_capacity(size);
    file.resize(size, 0);
    write_into(&mut file, 1, snapshot).unwrap();
    let header = Header::decode(&file).unwrap();
    let tables = index::read(&file, header.len, header.index_len).unwrap();
    (file, tables)
}

fn one_table(rows: HashMap<u64, Vec<f32>>) -> FeatureSnapshot {
    FeatureSnapshot {
        version: 1,
        created_unix_ms: 0,
        tables: vec![FeatureTable {
            name: "t".into(),
            rows,
        }],
    }
}

/// Every slice a lookup returns lies inside `file`.
fn inside(file: &[u8], row: &[f32]) -> bool {
    let (start, end) = (file.as_ptr() as usize, file.as_ptr() as usize + file.len());
    let (at, to) = (row.as_ptr() as usize, row.as_ptr() as usize + row.len() * 4);
    start <= at && to <= end
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 256 }))]

    #[test]
    fn lookups_match_the_map(rows in rows(), probes in prop::collection::vec(any::<u64>(), 0..32)) {
        let (file, tables) = file_of(&one_table(rows.clone()));
        let table = &tables[0];
        prop_assert_eq!(&*table.name, "t");
        prop_assert_eq!(table.len(), rows.len());
        for (key, row) in &rows {
            prop_assert_eq!(table.get(&file, *key), Some(&row[..]));
        }
        for key in probes {
            prop_assert_eq!(table.get(&file, key), rows.get(&key).map(|r| &r[..]));
        }
        prop_assert_eq!(table.iter(&file).count(), rows.len());
    }

    /// Bytes changed after the index was read -- anywhere in the file, as a process with write
    /// access or a disk error would -- give wrong answers or none, never a slice outside the
    /// file or a panic.
    #[test]
    fn changed_bytes_never_reach_outside_the_file(
        rows in rows(),
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..64),
        probes in prop::collection::vec(any::<u64>(), 0..16),
    ) {
        let (mut file, tables) = file_of(&one_table(rows.clone()));
        let len = file.len();
        for (at, byte) in changes {
            file[at.index(len)] = byte;
        }
        let table = &tables[0];
        for key in rows.keys().copied().chain(probes) {
            if let Some(row) = table.get(&file, key) {
                prop_assert!(inside(&file, row));
            }
        }
        for (_, row) in table.iter(&file) {
            prop_assert!(inside(&file, row));
        }
    }

    /// An index read from damaged bytes is refused or bounded: whatever `index::read` accepts,
    /// lookups through it stay inside the file.
    #[test]
    fn a_damaged_index_is_refused_or_bounded(
        rows in rows(),
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        probes in prop::collection::vec(any::<u64>(), 0..16),
    ) {
        let (mut file, _) = file_of(&one_table(rows));
        let header = Header::decode(&file).unwrap();
        let start = index::offset(header.len).unwrap() as usize;
        let end = start + header.index_len as usize;
        for (at, byte) in changes {
            file[start + at.index(end - start)] = byte;
        }
        if let Ok(tables) = index::read(&file, header.len, header.index_len) {
            for table in &tables {
                for &key in &probes {
                    if let Some(row) = table.get(&file, key) {
                        prop_assert!(inside(&file, row));
                    }
                }
            }
        }
    }
}

#[test]
fn index_words_that_point_outside_the_archive_are_refused() {
    let mut rows = HashMap::new();
    rows.insert(7, vec![1.0, 2.0]);
    let (file, _) = file_of(&one_table(rows));
    let header = Header::decode(&file).unwrap();
    let start = index::offset(header.len).unwrap() as usize;
    let words = header.index_len as usize / 8 - 1;
    // Each word of the table's entry (not the count), set far past the file, checksum redone.
    for word in 1..words {
        let mut damaged = file.to_vec();
        let at = start + word * 8;
        damaged[at..at + 8].copy_from_slice(&(u64::MAX / 3).to_le_bytes());
        let sum_at = start + words * 8;
        let sum = xxhash_rust::xxh3::xxh3_64(&damaged[start..sum_at]);
        damaged[sum_at..sum_at + 8].copy_from_slice(&sum.to_le_bytes());
        if word == 7 {
            // The key count is only reported, never used to index.
            assert!(index::read(&damaged, header.len, header.index_len).is_ok());
            continue;
        }
        assert!(
            index::read(&damaged, header.len, header.index_len).is_err(),
            "word {word}"
        );
    }
    // A length that leaves the file, and none at all.
    assert!(index::read(&file, header.len, header.index_len + 8).is_err());
    assert!(index::read(&file, header.len, 0).is_err());
}
