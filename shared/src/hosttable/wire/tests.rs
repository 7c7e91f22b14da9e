#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloc::{vec, vec::Vec};

use proptest::prelude::*;

use super::*;
use crate::{SubsetError, SubsetLb};

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

/// The bytes of `table()`'s columns once `edit` has changed them.
fn edited(edit: impl FnOnce(&mut Wire)) -> Vec<u8> {
    let mut wire = Wire::new(&table()).unwrap();
    edit(&mut wire);
    frame(
        &TABLE_MAGIC,
        &rkyv::to_bytes::<rkyv::rancor::Failure>(&wire).unwrap(),
    )
}

/// Both decoders refuse `bytes` with `expected`.
fn refused(bytes: &[u8], expected: HostTableError) {
    assert_eq!(HostTable::decode(bytes), Err(expected.clone()));
    let built = SubsetLb::decode(bytes).map(|lb| lb.len());
    assert_eq!(built, Err(SubsetError::Table(expected)));
}

#[test]
fn pairs_and_keys_are_stored_once() {
    let wire = Wire::new(&table()).unwrap();
    assert_eq!(wire.keys, ["a", "b", "c"]);
    // a=1 (hosts 0 and 1), b=é, c=3, c=4.
    assert_eq!(wire.pair_keys, [0, 1, 2, 2]);
    assert_eq!(wire.values, "1é34");
    assert_eq!(wire.labels, [0, 1, 2, 0, 3]);
    assert_eq!(wire.label_ends, [3, 5, 5]);
    assert_eq!(wire.addresses, "http://h0http://h1http://h2");
    let bytes = table().encode().unwrap();
    assert_eq!(HostTable::decode(&bytes).unwrap(), table());
    assert_eq!(SubsetLb::decode(&bytes).unwrap().len(), 3);
}

/// Pairs are written ascending by key and value whatever order hosts name them in, which
/// a decoder checks; one written otherwise (repeated, out of order) decodes all the same.
#[test]
fn pairs_ascend_as_written() {
    let mut table = table();
    table.hosts.reverse();
    let wire = Wire::new(&table).unwrap();
    assert_eq!(wire.pair_keys, [0, 1, 2, 2]);
    assert_eq!(wire.values, "1é34");
    assert_eq!(wire.labels, [0, 3, 0, 1, 2]);
    let ascend = |bytes: &[u8]| {
        let aligned = crate::hosttable::table_archive(bytes).unwrap();
        let columns = Columns::new(aligned.access().unwrap()).unwrap();
        columns.pairs_ascend()
    };
    assert!(ascend(&table.encode().unwrap()));
    let repeated = table.encode_pair_per_label();
    assert!(!ascend(&repeated));
    assert_eq!(HostTable::decode(&repeated).unwrap(), table);
    assert_eq!(SubsetLb::decode(&repeated).unwrap().len(), 3);
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
fn labels_out_of_key_order_or_repeating_a_key_are_refused() {
    let out_of_order = HostTableError::LabelsOutOfOrder { index: 1 };
    refused(&edited(|w| w.labels.swap(3, 4)), out_of_order.clone());
    // Host 1 with c=3 and c=4.
    refused(&edited(|w| w.labels[3] = 2), out_of_order);
}

#[test]
fn columns_that_disagree_are_malformed() {
    let edits: [fn(&mut Wire); 10] = [
        |w| w.labels[0] = 4,
        |w| w.pair_keys[0] = 3,
        |w| {
            w.weights.pop();
        },
        |w| {
            w.healthy.pop();
        },
        |w| {
            w.value_ends.pop();
        },
        // Inside `é`.
        |w| w.value_ends[1] = 2,
        |w| w.address_ends[0] = 20,
        |w| w.address_ends[2] = 26,
        |w| w.label_ends[2] = 4,
        |w| w.keys.swap(0, 1),
    ];
    for edit in edits {
        refused(&edited(edit), HostTableError::Malformed);
    }
}

/// An address end inside a character is malformed, with or without `list_as_any` (whose
/// build reads the labels host by host). No address the scan finds plain has one: those are
/// ASCII. Not checked before the scan, nor for plain addresses at all (see [`Dictionary`]).
#[test]
fn address_ends_inside_a_character_are_malformed() {
    for list_as_any in [false, true] {
        let with_ends = |ends: [u32; 3]| {
            edited(|w| {
                // `http://h0/` and a two-byte `é`: 12 bytes.
                w.addresses = "http://h0/éhttp://h1http://h2".into();
                w.address_ends = ends.into();
                w.subset.list_as_any = list_as_any;
            })
        };
        refused(&with_ends([11, 21, 30]), HostTableError::Malformed);
        // Cut at the characters, the address is read and refused by name.
        let whole = with_ends([12, 21, 30]);
        let refusal = HostTable::decode(&whole).unwrap_err();
        assert!(matches!(
            refusal,
            HostTableError::InvalidAddress { index: 0, .. }
        ));
        refused(&whole, refusal);
    }
}

#[test]
fn entries_no_host_names_are_malformed() {
    // Interned in place but not by a build from the decoded table, they could route apart
    // (a known key takes a request's metadata slot; an unknown one does not).
    refused(
        &edited(|w| {
            w.pair_keys.push(0);
            w.values.push('5');
            w.value_ends.push(w.values.len() as u32);
        }),
        HostTableError::Malformed,
    );
    refused(
        &edited(|w| w.keys.push("d".into())),
        HostTableError::Malformed,
    );
}

#[test]
fn a_bad_pair_a_host_names_is_refused_by_name() {
    let bytes = edited(|w| {
        w.values = alloc::format!("1é{}4", "3".repeat(crate::MAX_VALUE_LEN + 1));
        let ends = [1, 3, 3 + crate::MAX_VALUE_LEN as u32 + 1];
        w.value_ends = ends.into_iter().chain([w.values.len() as u32]).collect();
    });
    let expected = HostTableError::ValueTooLong {
        place: "host 0".into(),
        key: "c".into(),
    };
    refused(&bytes, expected);
}

fn word() -> impl Strategy<Value = alloc::string::String> {
    prop::sample::select(vec!["a", "b", "zone", "é", "a,b", ""]).prop_map(Into::into)
}

proptest! {
    /// Any table encodes to columns that decode to it.
    #[test]
    fn columns_round_trip(
        hosts in prop::collection::vec(
            prop::collection::btree_map(word(), word(), 0..4), 0..12),
        weights in prop::collection::vec(1u32..5, 12),
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
    }
}
