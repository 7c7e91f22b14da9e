//! Apache Parquet snapshots, as pandas, Polars and Spark write them: a `key` column of
//! unsigned (or non-negative signed) integers and the features either as one list column of
//! floats or as float columns `f0` .. `fN`. An optional `table` column of strings spreads the
//! rows over several tables; without one, every row belongs to the table the caller names.
//! Other columns are not read.
//!
//! Errors name the row (from 1, across row groups) and the column, never a value. Decoding
//! stops once the rows would take more than the caller's byte limit in memory (8 bytes a key,
//! 4 a feature), so a small file that expands a lot is refused, not held.

use std::{collections::HashMap, sync::Arc};

use arrow_array::{
    Array, ArrayRef, Float32Array, LargeListArray, RecordBatch,
    cast::AsArray,
    types::{Float32Type, UInt64Type},
};
use arrow_schema::{DataType, Field, Schema};
use edgewise::FeatureTable;
use parquet::{
    arrow::{ProjectionMask, arrow_reader::ParquetRecordBatchReaderBuilder},
    file::reader::ChunkReader,
};

use super::{
    super::change::MAX_TABLES,
    csv::{MAX_DIMENSION, row_bytes},
};

/// Rows decoded at a time.
const BATCH_ROWS: usize = 8192;

/// Why a Parquet snapshot was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum ParquetError {
    /// Not a readable Parquet file (bad magic, footer or page), as the decoder says.
    #[error("not a readable Parquet file: {0}")]
    Read(String),
    /// The columns do not describe feature rows.
    #[error("columns: {0}")]
    Schema(String),
    /// A value is missing or out of range.
    #[error("row {row}, column {column:?}: {problem}")]
    Value {
        /// Row number, from 1.
        row: u64,
        /// The column.
        column: String,
        /// What is wrong with it.
        problem: &'static str,
    },
    /// A key appears twice in one table.
    #[error("row {row}: the key of an earlier row of table {table:?} again")]
    Duplicate {
        /// Row number, from 1.
        row: u64,
        /// The table.
        table: String,
    },
    /// The rows need more memory than allowed.
    #[error("the rows take more than {limit} bytes decoded")]
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// No `table` column and no table name given.
    #[error("no table column, and no table name for the rows")]
    NoTable,
}

/// Where the features are.
enum Features {
    /// One list column.
    List(String),
    /// Columns `f0` .. `f{n-1}`.
    Columns(usize),
}

/// Decodes a whole file into tables; rows without a `table` column go to `table`.
pub fn parse<R: ChunkReader + 'static>(
    file: R,
    table: Option<&str>,
    max_bytes: u64,
) -> Result<Vec<FeatureTable>, ParquetError> {
    // The decoder is a large library reading hostile bytes: should it panic, the file is refused.
    let decode = std::panic::AssertUnwindSafe(|| decode(file, table, max_bytes));
    std::panic::catch_unwind(decode).unwrap_or_else(|_| {
        Err(ParquetError::Read(
            "the decoder failed on a malformed file".into(),
        ))
    })
}

fn decode<R: ChunkReader + 'static>(
    file: R,
    table: Option<&str>,
    max_bytes: u64,
) -> Result<Vec<FeatureTable>, ParquetError> {
    let read = |e: parquet::errors::ParquetError| ParquetError::Read(e.to_string());
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(read)?;
    let schema = Arc::clone(builder.schema());
    let (features, wanted) = layout(&schema)?;
    let has_table = schema.column_with_name("table").is_some();
    if !has_table && table.is_none() {
        return Err(ParquetError::NoTable);
    }
    // The row count is the footer's claim: it only refuses early what decoding would refuse.
    let rows = u64::try_from(builder.metadata().file_metadata().num_rows()).unwrap_or(0);
    if rows.saturating_mul(row_bytes(1)) > max_bytes {
        return Err(ParquetError::TooLarge { limit: max_bytes });
    }
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
    let reader = builder
        .with_projection(mask)
        .with_batch_size(BATCH_ROWS)
        .build()
        .map_err(read)?;
    let mut tables = Tables::new(table, max_bytes);
    for batch in reader {
        let batch = batch.map_err(|e| ParquetError::Read(e.to_string()))?;
        tables.add(&batch, &features)?;
    }
    Ok(tables.finish())
}

/// Which columns hold the features, and the root columns to decode.
fn layout(schema: &Schema) -> Result<(Features, Vec<usize>), ParquetError> {
    let schema_error = |s: String| Err(ParquetError::Schema(s));
    let index = |name: &str| schema.index_of(name).ok();
    let Some(key) = index("key") else {
        return schema_error("no `key` column".into());
    };
    let mut wanted = vec![key];
    wanted.extend(index("table"));
    let lists: Vec<&Field> = schema
        .fields()
        .iter()
        .filter(|f| is_float_list(f.data_type()))
        .map(|f| &**f)
        .collect();
    let columns = (0..)
        .take_while(|i| index(&format!("f{i}")).is_some())
        .count();
    let features = match (lists.as_slice(), columns) {
        ([list], 0) => {
            wanted.extend(index(list.name()));
            Features::List(list.name().clone())
        }
        ([], 1..=MAX_DIMENSION) => {
            wanted.extend((0..columns).filter_map(|i| index(&format!("f{i}"))));
            Features::Columns(columns)
        }
        ([], 0) => {
            return schema_error(
                "no features: expected one list<float> column or float columns f0..fN".into(),
            );
        }
        ([], _) => return schema_error(format!("more than {MAX_DIMENSION} feature columns")),
        _ => {
            return schema_error(
                "features must be one list<float> column or float columns f0..fN, not both or \
                 several lists"
                    .into(),
            );
        }
    };
    wanted.sort_unstable();
    Ok((features, wanted))
}

fn is_float_list(data_type: &DataType) -> bool {
    match data_type {
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            item.data_type().is_floating()
        }
        _ => false,
    }
}

/// Rows collected so far, per table.
struct Tables<'a> {
    default: Option<&'a str>,
    tables: HashMap<String, FeatureTable>,
    /// Rows read, across batches.
    row: u64,
    bytes: u64,
    max_bytes: u64,
}

impl<'a> Tables<'a> {
    fn new(default: Option<&'a str>, max_bytes: u64) -> Self {
        Tables {
            default,
            tables: HashMap::new(),
            row: 0,
            bytes: 0,
            max_bytes,
        }
    }

    fn add(&mut self, batch: &RecordBatch, features: &Features) -> Result<(), ParquetError> {
        let first = self.row + 1;
        let keys = cast(batch, "key", &DataType::UInt64, first)?;
        let keys = keys.as_primitive::<UInt64Type>();
        let names = match batch.column_by_name("table") {
            Some(_) => Some(cast(batch, "table", &DataType::Utf8, first)?),
            None => None,
        };
        let names = names.as_ref().map(|n| n.as_string::<i32>());
        let values = Values::of(batch, features, first)?;
        for i in 0..batch.num_rows() {
            self.row += 1;
            let row = self.row;
            let key = keys.value(i);
            let vector = values.row(i, row)?;
            self.bytes += row_bytes(vector.len());
            if self.bytes > self.max_bytes {
                return Err(ParquetError::TooLarge {
                    limit: self.max_bytes,
                });
            }
            let name = match (names, self.default) {
                (Some(names), _) => names.value(i),
                (None, Some(name)) => name,
                (None, None) => return Err(ParquetError::NoTable),
            };
            if !self.tables.contains_key(name) {
                if self.tables.len() == MAX_TABLES {
                    return Err(ParquetError::Schema(format!(
                        "more than {MAX_TABLES} tables"
                    )));
                }
                self.tables.insert(name.to_owned(), FeatureTable::new(name));
            }
            let table = self.tables.get_mut(name).ok_or(ParquetError::NoTable)?;
            if table.rows.insert(key, vector).is_some() {
                return Err(ParquetError::Duplicate {
                    row,
                    table: name.to_owned(),
                });
            }
        }
        Ok(())
    }

    fn finish(self) -> Vec<FeatureTable> {
        let mut tables: Vec<FeatureTable> = self.tables.into_values().collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }
}

/// A batch's list column: its offsets and all its items.
struct List {
    name: String,
    list: LargeListArray,
    items: Float32Array,
}

/// One batch's features, cast to `f32`, typed once per batch.
enum Values {
    List(Box<List>),
    Columns(Vec<Float32Array>),
}

impl Values {
    fn of(batch: &RecordBatch, features: &Features, first: u64) -> Result<Values, ParquetError> {
        match features {
            Features::List(name) => {
                let item = Arc::new(Field::new_list_field(DataType::Float32, true));
                let list = cast(batch, name, &DataType::LargeList(item), first)?;
                let list = list.as_list::<i64>().clone();
                let items = list.values().as_primitive::<Float32Type>().clone();
                Ok(Values::List(Box::new(List {
                    name: name.clone(),
                    list,
                    items,
                })))
            }
            Features::Columns(n) => (0..*n)
                .map(|i| {
                    let column = cast(batch, &format!("f{i}"), &DataType::Float32, first)?;
                    Ok(column.as_primitive::<Float32Type>().clone())
                })
                .collect::<Result<_, _>>()
                .map(Values::Columns),
        }
    }

    /// The features of the batch's row `i` (the file's row `row`).
    fn row(&self, i: usize, row: u64) -> Result<Vec<f32>, ParquetError> {
        let value = |column: &str, problem| ParquetError::Value {
            row,
            column: column.to_owned(),
            problem,
        };
        match self {
            Values::List(list) => {
                let List { name, list, items } = &**list;
                if list.is_null(i) {
                    return Err(value(name, "no list"));
                }
                let offsets = list.value_offsets();
                let range = offsets[i] as usize..offsets[i + 1] as usize;
                if range.is_empty() || range.len() > MAX_DIMENSION {
                    return Err(value(name, "rows need 1 to 4096 features"));
                }
                if items.null_count() > 0 && range.clone().any(|j| items.is_null(j)) {
                    return Err(value(name, "a feature is missing"));
                }
                let floats = &items.values()[range];
                if !floats.iter().all(|v| v.is_finite()) {
                    return Err(value(name, "a feature is not a finite 32-bit float"));
                }
                Ok(floats.to_vec())
            }
            Values::Columns(columns) => columns
                .iter()
                .enumerate()
                .map(|(f, column)| {
                    if column.is_null(i) {
                        return Err(value(&format!("f{f}"), "missing"));
                    }
                    let v = column.value(i);
                    if !v.is_finite() {
                        return Err(value(&format!("f{f}"), "not a finite 32-bit float"));
                    }
                    Ok(v)
                })
                .collect(),
        }
    }
}

/// Column `name` of `batch` as `to`; a value that does not convert (a negative key, a string
/// that is not a number) or is missing is refused with its row.
fn cast(
    batch: &RecordBatch,
    name: &str,
    to: &DataType,
    first: u64,
) -> Result<ArrayRef, ParquetError> {
    let column = batch
        .column_by_name(name)
        .ok_or_else(|| ParquetError::Schema(format!("no {name:?} column")))?;
    let cast = arrow_cast::cast(column, to)
        .map_err(|_| ParquetError::Schema(format!("column {name:?} cannot be read as {to}")))?;
    // Floats are checked per row, list items per list: only keys and names must be whole here.
    let whole = matches!(to, DataType::UInt64 | DataType::Utf8);
    if whole && let Some(i) = (0..cast.len()).find(|&i| cast.is_null(i)) {
        let problem = if column.is_null(i) {
            "missing"
        } else if *to == DataType::UInt64 {
            "not an unsigned 64-bit integer"
        } else {
            "not a string"
        };
        return Err(ParquetError::Value {
            row: first + i as u64,
            column: name.to_owned(),
            problem,
        });
    }
    Ok(cast)
}

#[cfg(test)]
mod tests;
