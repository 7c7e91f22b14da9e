//! The text snapshot format: one table per file, `<table>.csv`, one row per line:
//! `key,f0,f1,...,fn` with the key an unsigned 64-bit integer and the features `f32`s.
//! Blank lines and lines starting with `#` are skipped; a first line starting with `key` is a
//! header. Every row of a file has the same number of features. Errors name the line and
//! field, never their text: the error goes to logs and `.error` files, and the file may not be
//! what its name says (a secret linked into the ingest directory).

use std::collections::HashMap;

/// Rows of one table, keyed.
pub type Rows = HashMap<u64, Vec<f32>>;

/// Most features per row: beyond this a line is almost certainly not a feature vector.
pub const MAX_DIMENSION: usize = 4096;

/// Memory a decoded row takes besides its floats: the key and the vector's header in the hash
/// table (with its spare capacity), and the vector's allocation rounding, rounded up.
const ROW_OVERHEAD: u64 = 80;

/// Memory a decoded row of `dimension` features takes, as counted against
/// `features.max_ingest_bytes`.
pub fn row_bytes(dimension: usize) -> u64 {
    ROW_OVERHEAD + 4 * dimension as u64
}

/// Why a text snapshot was refused.
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum CsvError {
    /// A line's key is not an unsigned 64-bit integer.
    #[error("line {line}: the key is not an unsigned 64-bit integer")]
    Key {
        /// Line number, from 1.
        line: usize,
    },
    /// A feature is not a finite number.
    #[error("line {line}, field {field}: not a finite number")]
    Feature {
        /// Line number, from 1.
        line: usize,
        /// Field number, from 1 (the key is field 0).
        field: usize,
    },
    /// A row has a different number of features than the first row.
    #[error("line {line}: {found} features, the first row has {expected}")]
    Dimension {
        /// Line number, from 1.
        line: usize,
        /// Features on the first row.
        expected: usize,
        /// Features on this row.
        found: usize,
    },
    /// A row has no features, or more than [`MAX_DIMENSION`].
    #[error("line {line}: {found} features, rows need 1 to {MAX_DIMENSION}")]
    Width {
        /// Line number, from 1.
        line: usize,
        /// Features on this row.
        found: usize,
    },
    /// A key appears twice.
    #[error("line {line}: the key of an earlier line again")]
    Duplicate {
        /// Line number of the second occurrence, from 1.
        line: usize,
    },
    /// The rows decoded so far take more memory than allowed.
    #[error("line {line}: the rows take more than {limit} bytes decoded")]
    TooLarge {
        /// Line number, from 1.
        line: usize,
        /// `features.max_ingest_bytes`.
        limit: u64,
    },
}

/// Parses a whole file whose rows take at most `max_bytes` decoded ([`row_bytes`]).
pub fn parse(text: &str, max_bytes: u64) -> Result<Rows, CsvError> {
    let mut rows = Rows::new();
    let mut dimension = None;
    let mut bytes = 0u64;
    for (index, line) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || (rows.is_empty() && is_header(line)) {
            continue;
        }
        let (key, features) = parse_row(line, line_no)?;
        let expected = *dimension.get_or_insert(features.len());
        if features.len() != expected {
            return Err(CsvError::Dimension {
                line: line_no,
                expected,
                found: features.len(),
            });
        }
        bytes += row_bytes(features.len());
        if bytes > max_bytes {
            return Err(CsvError::TooLarge {
                line: line_no,
                limit: max_bytes,
            });
        }
        if rows.insert(key, features).is_some() {
            return Err(CsvError::Duplicate { line: line_no });
        }
    }
    Ok(rows)
}

fn is_header(line: &str) -> bool {
    line.split(',')
        .next()
        .is_some_and(|f| f.trim().eq_ignore_ascii_case("key"))
}

fn parse_row(line: &str, line_no: usize) -> Result<(u64, Vec<f32>), CsvError> {
    let mut fields = line.split(',').map(str::trim);
    let key_field = fields.next().unwrap_or_default();
    let key = key_field
        .parse()
        .map_err(|_| CsvError::Key { line: line_no })?;
    let features = fields
        .enumerate()
        .map(|(i, value)| feature(value, line_no, i + 1))
        .collect::<Result<Vec<_>, _>>()?;
    if features.is_empty() || features.len() > MAX_DIMENSION {
        return Err(CsvError::Width {
            line: line_no,
            found: features.len(),
        });
    }
    Ok((key, features))
}

fn feature(value: &str, line: usize, field: usize) -> Result<f32, CsvError> {
    value
        .parse::<f32>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or(CsvError::Feature { line, field })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rows_parse_with_header_comments_and_blanks() {
        let rows = parse(
            "key,f0,f1\n# comment\n\n1, 0.5, -2\n18446744073709551615,1e3,0\n",
            u64::MAX,
        )
        .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[&1], [0.5, -2.0]);
        assert_eq!(rows[&u64::MAX], [1000.0, 0.0]);
        assert!(parse("", u64::MAX).unwrap().is_empty());
    }

    #[test]
    fn every_bad_line_is_named() {
        let cases: [(&str, CsvError); 7] = [
            ("x,1", CsvError::Key { line: 1 }),
            ("-1,1", CsvError::Key { line: 1 }),
            ("1,1\n2,nan", CsvError::Feature { line: 2, field: 1 }),
            ("1,1,inf", CsvError::Feature { line: 1, field: 2 }),
            (
                "1,1\n2,1,2",
                CsvError::Dimension {
                    line: 2,
                    expected: 1,
                    found: 2,
                },
            ),
            ("1", CsvError::Width { line: 1, found: 0 }),
            ("1,1\n1,2", CsvError::Duplicate { line: 2 }),
        ];
        for (text, expected) in cases {
            let error = parse(text, u64::MAX).unwrap_err();
            assert_eq!(error, expected, "{text:?}");
            // The message names where, never what: the file's text stays out of logs.
            let message = error.to_string();
            for field in text.split(['\n', ',']).filter(|f| f.len() > 1) {
                assert!(!message.contains(field), "{message} quotes {field:?}");
            }
        }
        let wide = format!("1{}", ",0".repeat(MAX_DIMENSION + 1));
        assert!(matches!(
            parse(&wide, u64::MAX),
            Err(CsvError::Width { .. })
        ));
        // A header is only a header on the first row.
        assert!(matches!(
            parse("1,1\nkey,2", u64::MAX),
            Err(CsvError::Key { line: 2, .. })
        ));
    }

    #[test]
    fn rows_past_the_byte_limit_are_refused_by_line() {
        // Decoded, a 4-byte line takes row_bytes(1): far more than its text.
        let text = "1,0\n2,0\n3,0\n";
        assert_eq!(parse(text, 3 * row_bytes(1)).unwrap().len(), 3);
        let limit = 3 * row_bytes(1) - 1;
        assert_eq!(
            parse(text, limit).unwrap_err(),
            CsvError::TooLarge { line: 3, limit }
        );
    }
}
