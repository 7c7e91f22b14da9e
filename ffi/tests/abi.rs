//! The C ABI driven from Rust: statuses, error messages, and vectors that stay put until the
//! next call.
#![allow(clippy::unwrap_used)]

use std::{
    ffi::{CStr, CString},
    ptr,
};

use edgewise::{FeatureSnapshot, FeatureTable, FeatureWriter, WriterOptions};
use edgewise_ffi::*;

fn last_error() -> String {
    // SAFETY: ew_last_error returns a NUL-terminated string valid until the next failing call.
    unsafe { CStr::from_ptr(ew_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn open(dir: &std::path::Path) -> (EwStatus, *mut EwReader) {
    let dir = CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    let mut reader = ptr::null_mut();
    // SAFETY: a NUL-terminated path and a place for the reader.
    let status = unsafe { ew_reader_open(dir.as_ptr(), &mut reader) };
    (status, reader)
}

fn get(reader: *mut EwReader, table: &str, key: u64) -> (EwStatus, Option<Vec<f32>>) {
    let (mut values, mut len) = (ptr::null(), 0);
    // SAFETY: a live reader, `table.len()` bytes at `table`, places for the results.
    let status = unsafe {
        ew_reader_get(
            reader,
            table.as_ptr(),
            table.len(),
            key,
            &mut values,
            &mut len,
        )
    };
    // SAFETY: on EW_STATUS_OK, `len` floats at `values`, valid until the next call.
    let found =
        (status == EwStatus::Ok).then(|| unsafe { std::slice::from_raw_parts(values, len) });
    (status, found.map(<[f32]>::to_vec))
}

#[test]
fn a_reader_reads_statuses_say_why_and_nulls_are_refused() {
    let dir = std::env::temp_dir().join(format!("edgewise-ffi-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    let (status, reader) = open(&dir);
    assert_eq!((status, reader), (EwStatus::Io, ptr::null_mut()));
    assert!(
        last_error().contains(dir.to_str().unwrap()),
        "{}",
        last_error()
    );

    let mut writer = FeatureWriter::open(&dir, WriterOptions::default()).unwrap();
    let (status, reader) = open(&dir);
    assert_eq!(status, EwStatus::Ok);
    assert_eq!(get(reader, "t", 1).0, EwStatus::NothingPublished);

    let mut table = FeatureTable::new("t");
    table.rows.insert(1, vec![0.5, 1.5]);
    writer
        .publish(&FeatureSnapshot {
            version: 7,
            created_unix_ms: 0,
            tables: vec![table],
        })
        .unwrap();
    assert_eq!(get(reader, "t", 1), (EwStatus::Ok, Some(vec![0.5, 1.5])));
    assert_eq!(get(reader, "t", 2), (EwStatus::NotFound, None));
    assert_eq!(get(reader, "u", 1), (EwStatus::NotFound, None));
    assert_eq!(get(reader, "", 1), (EwStatus::NotFound, None));
    let mut version = 0;
    // SAFETY: a live reader and a place for the version.
    assert_eq!(
        unsafe { ew_reader_version(reader, &mut version) },
        EwStatus::Ok
    );
    assert_eq!(version, 7);

    // Bad arguments are refused, never dereferenced.
    let (mut values, mut len) = (ptr::null(), 0);
    // SAFETY: each call passes a NULL where a pointer belongs: refused before any use.
    unsafe {
        assert_eq!(
            ew_reader_get(ptr::null_mut(), b"t".as_ptr(), 1, 1, &mut values, &mut len),
            EwStatus::InvalidArgument
        );
        assert_eq!(
            ew_reader_get(reader, ptr::null(), 1, 1, &mut values, &mut len),
            EwStatus::InvalidArgument
        );
        assert_eq!(
            ew_reader_get(reader, b"t".as_ptr(), 1, 1, ptr::null_mut(), &mut len),
            EwStatus::InvalidArgument
        );
        assert_eq!(
            ew_reader_get(reader, [0xff].as_ptr(), 1, 1, &mut values, &mut len),
            EwStatus::InvalidArgument
        );
        assert!(last_error().contains("UTF-8"));
        assert_eq!(
            ew_reader_version(reader, ptr::null_mut()),
            EwStatus::InvalidArgument
        );
        assert_eq!(
            ew_reader_open(ptr::null(), ptr::null_mut()),
            EwStatus::InvalidArgument
        );
        ew_reader_release(ptr::null_mut());
        ew_reader_close(ptr::null_mut());
        ew_reader_release(reader);
        ew_reader_close(reader);
    }
    drop(writer);
    let _ = std::fs::remove_dir_all(&dir);
}
