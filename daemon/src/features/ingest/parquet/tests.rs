#![allow(clippy::unwrap_used)]

use arrow_array::{
    Float32Array, Float64Array, Int64Array, LargeStringArray, StringArray, UInt64Array,
    builder::{Float32Builder, ListBuilder},
};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;

use super::*;

/// A Parquet file of `columns`, as the `parquet` crate writes it.
fn file(columns: Vec<(&str, ArrayRef)>) -> Bytes {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let mut out = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out.into()
}

fn list(rows: &[Option<&[Option<f32>]>]) -> ArrayRef {
    let mut builder = ListBuilder::new(Float32Builder::new());
    for row in rows {
        match row {
            Some(values) => {
                builder.values().extend(values.iter().copied());
                builder.append(true);
            }
            None => builder.append(false),
        }
    }
    Arc::new(builder.finish())
}

fn keys(keys: &[u64]) -> ArrayRef {
    Arc::new(UInt64Array::from(keys.to_vec()))
}

fn refusal(bytes: Bytes, table: Option<&str>) -> String {
    parse(bytes, table, 1 << 20).unwrap_err().to_string()
}

#[test]
fn a_list_column_and_float_columns_read_alike() {
    let listed = file(vec![
        ("key", keys(&[1, 2])),
        (
            "embedding",
            list(&[Some(&[Some(1.0), Some(2.0)]), Some(&[Some(3.0), Some(4.0)])]),
        ),
        ("note", Arc::new(StringArray::from(vec!["x", "y"]))),
    ]);
    let columns = file(vec![
        ("f1", Arc::new(Float64Array::from(vec![2.0, 4.0]))),
        ("key", Arc::new(Int64Array::from(vec![1, 2]))),
        ("f0", Arc::new(Float32Array::from(vec![1.0, 3.0]))),
    ]);
    for bytes in [listed, columns] {
        let tables = parse(bytes, Some("users"), 1 << 20).unwrap();
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].name, "users");
        assert_eq!(tables[0].rows[&1], [1.0, 2.0]);
        assert_eq!(tables[0].rows[&2], [3.0, 4.0]);
    }
}

#[test]
fn a_table_column_spreads_rows_over_tables() {
    let bytes = file(vec![
        ("key", keys(&[1, 1, 2])),
        (
            "table",
            Arc::new(LargeStringArray::from(vec!["a", "b", "a"])),
        ),
        ("f0", Arc::new(Float32Array::from(vec![1.0, 2.0, 3.0]))),
    ]);
    let tables = parse(bytes, None, 1 << 20).unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(tables[0].rows.len(), 2);
    assert_eq!(tables[1].rows[&1], [2.0]);
}

#[test]
fn bad_files_are_refused_with_the_row_and_column_named() {
    let f0 = |v: Vec<Option<f32>>| -> ArrayRef { Arc::new(Float32Array::from(v)) };
    let cases: Vec<(Vec<(&str, ArrayRef)>, &str)> = vec![
        (vec![("f0", f0(vec![Some(1.0)]))], "no `key` column"),
        (vec![("key", keys(&[1]))], "no features"),
        (
            vec![
                ("key", keys(&[1])),
                ("f0", f0(vec![Some(1.0)])),
                ("v", list(&[Some(&[Some(1.0)])])),
            ],
            "not both",
        ),
        (
            vec![
                ("key", Arc::new(Int64Array::from(vec![1, -2]))),
                ("f0", f0(vec![Some(1.0), Some(2.0)])),
            ],
            "row 2, column \"key\": not an unsigned 64-bit integer",
        ),
        (
            vec![
                ("key", Arc::new(UInt64Array::from(vec![Some(1), None]))),
                ("f0", f0(vec![Some(1.0), Some(2.0)])),
            ],
            "row 2, column \"key\": missing",
        ),
        (
            vec![("key", keys(&[1, 2])), ("f0", f0(vec![Some(1.0), None]))],
            "row 2, column \"f0\": missing",
        ),
        (
            vec![("key", keys(&[1])), ("f0", f0(vec![Some(f32::NAN)]))],
            "row 1, column \"f0\": not a finite",
        ),
        (
            vec![
                ("key", keys(&[1])),
                ("f0", Arc::new(Float64Array::from(vec![1e300]))),
            ],
            "row 1, column \"f0\": not a finite",
        ),
        (
            vec![
                ("key", keys(&[1, 2])),
                ("v", list(&[Some(&[Some(1.0)]), None])),
            ],
            "row 2, column \"v\": no list",
        ),
        (
            vec![("key", keys(&[1])), ("v", list(&[Some(&[])]))],
            "row 1, column \"v\": rows need 1 to 4096",
        ),
        (
            vec![
                ("key", keys(&[1])),
                ("v", list(&[Some(&[Some(1.0), None])])),
            ],
            "row 1, column \"v\": a feature is missing",
        ),
        (
            vec![
                ("key", keys(&[7, 7])),
                ("f0", f0(vec![Some(1.0), Some(2.0)])),
            ],
            "row 2: the key of an earlier row",
        ),
    ];
    for (columns, expected) in cases {
        let error = refusal(file(columns), Some("t"));
        assert!(error.contains(expected), "{error:?} lacks {expected:?}");
    }
    let no_table = file(vec![("key", keys(&[1])), ("f0", f0(vec![Some(1.0)]))]);
    assert!(refusal(no_table, None).contains("no table"));
    assert!(refusal(Bytes::from_static(b"1,2\n"), Some("t")).starts_with("not a readable"));
    let mut cut = file(vec![("key", keys(&[1])), ("f0", f0(vec![Some(1.0)]))]).to_vec();
    cut.truncate(cut.len() - 9);
    assert!(refusal(cut.into(), Some("t")).starts_with("not a readable"));
}

#[test]
fn rows_past_the_byte_limit_are_refused() {
    let rows = 1000u64;
    let bytes = file(vec![
        ("key", keys(&(0..rows).collect::<Vec<_>>())),
        (
            "v",
            list(&vec![Some(&[Some(1.0f32); 16][..]); rows as usize]),
        ),
    ]);
    // Each row takes row_bytes(16) decoded; the file is far smaller (all rows alike).
    let decoded = rows * row_bytes(16);
    assert!((bytes.len() as u64) < decoded / 4);
    assert!(parse(bytes.clone(), Some("t"), decoded).is_ok());
    assert_eq!(
        parse(bytes, Some("t"), decoded - 1).unwrap_err(),
        ParquetError::TooLarge { limit: decoded - 1 }
    );
}

#[test]
fn mangled_files_are_refused_or_read_never_a_crash() {
    let rows: Vec<u64> = (0..200).collect();
    let good = file(vec![
        ("key", keys(&rows)),
        (
            "v",
            list(&vec![Some(&[Some(0.5f32), Some(1.5)][..]); rows.len()]),
        ),
    ]);
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for cut in 0..good.len() {
        assert!(parse(good.slice(..cut), Some("t"), 1 << 20).is_err());
    }
    for _ in 0..3000 {
        let mut bytes = good.to_vec();
        for _ in 0..1 + random() % 4 {
            let at = (random() % bytes.len() as u64) as usize;
            bytes[at] ^= 1 << (random() % 8);
        }
        // Ok (a flip in a value, or in bytes nothing reads) or a refusal; within the cap.
        if let Ok(tables) = parse(Bytes::from(bytes), Some("t"), 1 << 20) {
            assert!(tables.iter().map(|t| t.rows.len()).sum::<usize>() <= 1 << 20);
        }
    }
}
