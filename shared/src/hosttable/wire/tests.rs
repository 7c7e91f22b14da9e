#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloc::vec;

use proptest::prelude::*;

use super::*;
use crate::{Host, SubsetConfig, SubsetError, SubsetLb};

/// Three hosts over keys `a`, `b`, `c`: host 0 has all three, host 1 `a` and `c`, host 2 none.
fn table() -> HostTable {
    HostTable {
        version: 9,
        hosts: vec![
            Host::new("http://h0")
                .with_label("a", "1")
                .with_label("b", "é")
                .with_label("c", "3"),
            Host::new("http://h1")
                .with_label("a", "1")
                .with_label("c", "4"),
            Host::new("http://h2"),
        ],
        subset: SubsetConfig::default(),
    }
}

/// Both decoders refuse `bytes` with `expected`.
fn refused(bytes: &[u8], expected: HostTableError) {
    assert_eq!(HostTable::decode(bytes), Err(expected.clone()));
    let built = SubsetLb::decode(bytes).map(|lb| lb.len());
    assert_eq!(built, Err(SubsetError::Table(expected)));
}

#[test]
fn tables_round_trip() {
    let bytes = table().encode().unwrap();
    assert_eq!(HostTable::decode(&bytes).unwrap(), table());
    assert_eq!(SubsetLb::decode(&bytes).unwrap().len(), 3);
    // Read at any address: a body is not always 16-byte aligned.
    let shifted = [&[0u8][..], &bytes].concat();
    assert_eq!(HostTable::decode(&shifted[1..]).unwrap(), table());
}

#[test]
fn header_names_the_format() {
    let bytes = table().encode().unwrap();
    assert_eq!(&bytes[..14], b"edgewise/hosts");
    let mut other = bytes.clone();
    other[14] = 7;
    let expected = HostTableError::UnsupportedFormat {
        found: 7,
        supported: FORMAT,
    };
    refused(&other, expected);
    other[..14].copy_from_slice(b"edgewise/delta");
    refused(&other, HostTableError::Malformed);
    refused(&bytes[16..], HostTableError::Malformed);
    refused(&bytes[..15], HostTableError::Malformed);
}

#[test]
fn bytes_that_are_not_an_archive_are_malformed() {
    let bytes = table().encode().unwrap();
    for cut in [17, bytes.len() / 2, bytes.len() - 1] {
        refused(&bytes[..cut], HostTableError::Malformed);
    }
}

#[test]
fn a_bad_label_is_refused_by_name() {
    let expected = HostTableError::EmptyKey {
        place: "host 1".into(),
    };
    let mut t = table();
    t.hosts[1].labels.insert("".into(), "x".into());
    refused(&t.encode_unchecked(), expected);
}

fn word() -> impl Strategy<Value = alloc::string::String> {
    prop::sample::select(vec!["a", "b", "zone", "é", "a,b", ""]).prop_map(Into::into)
}

proptest! {
    /// Any table encodes to bytes that decode to it, or are refused as the table is.
    #[test]
    fn any_table_round_trips(
        hosts in prop::collection::vec(
            prop::collection::btree_map(word(), word(), 0..4), 0..12),
        weights in prop::collection::vec(0u32..5, 12),
    ) {
        let hosts = hosts.into_iter().enumerate().map(|(i, labels)| Host {
            weight: weights[i],
            healthy: i % 3 != 0,
            labels,
            ..Host::new(alloc::format!("http://h{i}"))
        });
        let table = HostTable { version: 3, hosts: hosts.collect(), ..HostTable::default() };
        let bytes = table.encode_unchecked();
        prop_assert_eq!(HostTable::decode(&bytes), table.validate().map(|()| table.clone()));
        let built = SubsetLb::decode(&bytes).map(|lb| lb.len());
        prop_assert_eq!(built, SubsetLb::build(&table).map(|lb| lb.len()));
    }
}
