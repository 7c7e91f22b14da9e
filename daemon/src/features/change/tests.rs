#![allow(clippy::unwrap_used)]

use super::*;

fn upsert(table: &str, key: u64, values: &[f32]) -> Upsert {
    Upsert {
        table: table.into(),
        key,
        values: values.to_vec(),
    }
}

fn batch(upserts: Vec<Upsert>, deletes: Vec<Delete>) -> Change {
    Change::Batch { upserts, deletes }
}

fn rows(snapshot: &FeatureSnapshot, table: &str) -> Vec<(u64, Vec<f32>)> {
    let mut rows: Vec<_> = snapshot
        .table(table)
        .map(|t| t.rows.iter().map(|(k, v)| (*k, v.clone())).collect())
        .unwrap_or_default();
    rows.sort_by_key(|(k, _)| *k);
    rows
}

#[test]
fn batches_upsert_and_delete_and_drop_emptied_tables() {
    let mut snapshot = FeatureSnapshot::default();
    batch(
        vec![
            upsert("user", 1, &[1.0, 2.0]),
            upsert("user", 2, &[3.0, 4.0]),
            upsert("ip", 9, &[0.5]),
        ],
        vec![],
    )
    .apply(&mut snapshot)
    .unwrap();
    assert_eq!(
        rows(&snapshot, "user"),
        [(1, vec![1.0, 2.0]), (2, vec![3.0, 4.0])]
    );
    let deletes = vec![
        Delete {
            table: "user".into(),
            key: 1,
        },
        Delete {
            table: "ip".into(),
            key: 9,
        },
        Delete {
            table: "none".into(),
            key: 5,
        },
    ];
    batch(vec![upsert("user", 2, &[5.0, 6.0])], deletes)
        .apply(&mut snapshot)
        .unwrap();
    assert_eq!(rows(&snapshot, "user"), [(2, vec![5.0, 6.0])]);
    assert!(
        snapshot.table("ip").is_none(),
        "an emptied table is dropped"
    );
}

#[test]
fn one_bad_row_refuses_the_whole_batch() {
    let mut snapshot = FeatureSnapshot::default();
    batch(vec![upsert("user", 1, &[1.0, 2.0])], vec![])
        .apply(&mut snapshot)
        .unwrap();
    let before = snapshot.clone();
    let cases = [
        (
            upsert("user", 2, &[1.0]),
            ChangeError::Dimension {
                table: "user".into(),
                key: 2,
                expected: 2,
                found: 1,
            },
        ),
        (
            upsert("user", 2, &[]),
            ChangeError::Values {
                table: "user".into(),
                key: 2,
            },
        ),
        (
            upsert("user", 2, &[f32::NAN, 1.0]),
            ChangeError::Values {
                table: "user".into(),
                key: 2,
            },
        ),
        (upsert("bad name", 2, &[1.0]), ChangeError::TableName(8)),
        (upsert("", 2, &[1.0]), ChangeError::TableName(0)),
    ];
    for (bad, expected) in cases {
        let change = batch(vec![upsert("user", 3, &[7.0, 8.0]), bad], vec![]);
        assert_eq!(change.apply(&mut snapshot).unwrap_err(), expected);
        assert_eq!(snapshot, before);
    }
    // A new table's rows must agree among themselves too.
    let mixed = batch(
        vec![upsert("new", 1, &[1.0]), upsert("new", 2, &[1.0, 2.0])],
        vec![],
    );
    assert!(matches!(
        mixed.apply(&mut snapshot),
        Err(ChangeError::Dimension { .. })
    ));
    assert_eq!(snapshot, before);
}

#[test]
fn tables_are_replaced_whole_and_limits_hold() {
    let mut snapshot = FeatureSnapshot::default();
    batch(
        vec![upsert("user", 1, &[1.0, 2.0]), upsert("ip", 1, &[1.0])],
        vec![],
    )
    .apply(&mut snapshot)
    .unwrap();
    let mut user = FeatureTable::new("user");
    user.rows.insert(5, vec![9.0]);
    let replacement = Change::ReplaceTables(vec![user]);
    replacement.apply(&mut snapshot).unwrap();
    assert_eq!(
        rows(&snapshot, "user"),
        [(5, vec![9.0])],
        "a new dimension is fine for a whole table"
    );
    assert_eq!(rows(&snapshot, "ip"), [(1, vec![1.0])]);

    let upserts = (0..=MAX_TABLES as u64)
        .map(|i| upsert(&format!("t{i}"), 1, &[1.0]))
        .collect();
    assert_eq!(
        batch(upserts, vec![]).apply(&mut snapshot).unwrap_err(),
        ChangeError::TooManyTables
    );

    let mut all = FeatureSnapshot::default();
    all.table_mut("a").rows.insert(1, vec![1.0]);
    all.tables.push(all.tables[0].clone());
    assert_eq!(
        Change::ReplaceAll(all).apply(&mut snapshot).unwrap_err(),
        ChangeError::DuplicateTable("a".into())
    );
    let mut all = FeatureSnapshot::default();
    all.table_mut("only").rows.insert(1, vec![1.0]);
    Change::ReplaceAll(all).apply(&mut snapshot).unwrap();
    assert_eq!(snapshot.tables.len(), 1);
}
