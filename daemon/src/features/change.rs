//! A change to the feature snapshot, validated whole before any of it is applied: a batch
//! with one bad row changes nothing.

use std::collections::HashMap;

use edgewise::{FeatureSnapshot, FeatureTable};
use serde::Deserialize;

use super::ingest::csv::MAX_DIMENSION;

/// Most tables a snapshot may hold.
pub const MAX_TABLES: usize = 1024;

/// One change; each accepted change becomes one published version.
#[derive(Debug)]
#[non_exhaustive]
pub enum Change {
    /// Row upserts and deletes (`PUT /v1/features`).
    Batch {
        /// Rows to insert or replace.
        upserts: Vec<Upsert>,
        /// Rows to remove (absent rows are no error).
        deletes: Vec<Delete>,
    },
    /// Tables replaced wholesale, the others kept (a `<table>.csv` or Parquet file).
    ReplaceTables(Vec<FeatureTable>),
    /// Everything replaced (a native archive file, a snapshot from the source).
    ReplaceAll(FeatureSnapshot),
}

/// Insert or replace one row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Upsert {
    /// Table name.
    pub table: String,
    /// Row key.
    pub key: u64,
    /// The features.
    pub values: Vec<f32>,
}

/// Remove one row.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delete {
    /// Table name.
    pub table: String,
    /// Row key.
    pub key: u64,
}

/// Why a change was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ChangeError {
    /// A table name outside `[A-Za-z0-9_.-]{1,64}`, by its length: names may come from files
    /// and buckets, whose bytes never reach a log.
    #[error("a table name ({0} bytes) must be 1-64 characters of A-Z a-z 0-9 _ . -")]
    TableName(usize),
    /// A row with no features, too many, or a non-finite one.
    #[error("table {table:?}, key {key}: rows need 1 to {MAX_DIMENSION} finite features")]
    Values {
        /// The table.
        table: String,
        /// The row.
        key: u64,
    },
    /// A row whose length differs from the table's other rows.
    #[error("table {table:?}, key {key}: {found} features, the table's rows have {expected}")]
    Dimension {
        /// The table.
        table: String,
        /// The row.
        key: u64,
        /// The table's row length.
        expected: usize,
        /// This row's length.
        found: usize,
    },
    /// More tables than a snapshot may hold (1024).
    #[error("more than {MAX_TABLES} tables")]
    TooManyTables,
    /// A table listed twice in a snapshot.
    #[error("table {0:?} appears twice")]
    DuplicateTable(String),
}

impl Change {
    /// Checks the change against `snapshot` and applies it; on error nothing changed.
    pub fn apply(self, snapshot: &mut FeatureSnapshot) -> Result<(), ChangeError> {
        self.validate(snapshot)?;
        match self {
            Change::Batch { upserts, deletes } => {
                for upsert in upserts {
                    snapshot
                        .table_mut(&upsert.table)
                        .rows
                        .insert(upsert.key, upsert.values);
                }
                for delete in deletes {
                    if let Some(table) = snapshot.tables.iter_mut().find(|t| t.name == delete.table)
                    {
                        table.rows.remove(&delete.key);
                    }
                }
                snapshot.tables.retain(|t| !t.rows.is_empty());
            }
            Change::ReplaceTables(tables) => {
                for table in tables {
                    snapshot.table_mut(&table.name).rows = table.rows;
                }
                snapshot.tables.retain(|t| !t.rows.is_empty());
            }
            Change::ReplaceAll(all) => snapshot.tables = all.tables,
        }
        Ok(())
    }

    fn validate(&self, snapshot: &FeatureSnapshot) -> Result<(), ChangeError> {
        match self {
            Change::Batch { upserts, deletes } => {
                deletes.iter().try_for_each(|d| table_name(&d.table))?;
                let mut dimensions = Dimensions::of(snapshot);
                for u in upserts {
                    table_name(&u.table)?;
                    row(&u.table, u.key, &u.values)?;
                    dimensions.check(&u.table, u.key, u.values.len())?;
                }
                dimensions.count()
            }
            Change::ReplaceTables(tables) => {
                whole_tables(tables)?;
                let mut all = Dimensions::of(snapshot);
                for table in tables {
                    all.0.entry(&table.name).or_insert(0);
                }
                all.count()
            }
            Change::ReplaceAll(all) => whole_tables(&all.tables)?.count(),
        }
    }
}

/// Checks tables that replace others whole: each named once, each row valid and of its
/// table's length.
fn whole_tables(tables: &[FeatureTable]) -> Result<Dimensions<'_>, ChangeError> {
    let mut seen = Dimensions::default();
    for table in tables {
        if seen.0.contains_key(table.name.as_str()) {
            return Err(ChangeError::DuplicateTable(table.name.clone()));
        }
        table_name(&table.name)?;
        let mut dimensions = Dimensions::default();
        for (key, values) in &table.rows {
            row(&table.name, *key, values)?;
            dimensions.check(&table.name, *key, values.len())?;
        }
        seen.0.insert(&table.name, 0);
    }
    Ok(seen)
}

/// Row length per table (0: not known yet).
#[derive(Default)]
struct Dimensions<'a>(HashMap<&'a str, usize>);

impl<'a> Dimensions<'a> {
    fn of(snapshot: &'a FeatureSnapshot) -> Dimensions<'a> {
        let known = snapshot.tables.iter().map(|t| {
            let dimension = t.rows.values().next().map_or(0, Vec::len);
            (t.name.as_str(), dimension)
        });
        Dimensions(known.collect())
    }

    fn check(&mut self, table: &'a str, key: u64, found: usize) -> Result<(), ChangeError> {
        let expected = self.0.entry(table).or_insert(0);
        if *expected == 0 {
            *expected = found;
        }
        if *expected != found {
            return Err(ChangeError::Dimension {
                table: table.to_owned(),
                key,
                expected: *expected,
                found,
            });
        }
        Ok(())
    }

    fn count(&self) -> Result<(), ChangeError> {
        if self.0.len() > MAX_TABLES {
            return Err(ChangeError::TooManyTables);
        }
        Ok(())
    }
}

/// `[A-Za-z0-9_.-]{1,64}`: safe in file names, URLs and memcached keys.
pub fn table_name(name: &str) -> Result<(), ChangeError> {
    let ok = (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(ChangeError::TableName(name.len()))
    }
}

fn row(table: &str, key: u64, values: &[f32]) -> Result<(), ChangeError> {
    if values.is_empty() || values.len() > MAX_DIMENSION || !values.iter().all(|v| v.is_finite()) {
        return Err(ChangeError::Values {
            table: table.to_owned(),
            key,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
