use alloc::{format, string::String, vec::Vec};

use super::*;

fn recorded(addresses: &[&str]) -> Records {
    let mut records = Records::default();
    for (s, address) in addresses.iter().enumerate() {
        records.start(s as u32, address);
        records.seal(s as u32, false);
    }
    records
}

#[test]
fn ascending_addresses_keep_no_table_and_are_found_by_search() {
    let list: Vec<String> = (0..100).map(|i| format!("http://10.0.0.{i:03}")).collect();
    let list: Vec<&str> = list.iter().map(String::as_str).collect();
    let records = recorded(&list);
    let addresses = Addresses::claim(&records, 100, None).unwrap();
    assert!(addresses.hashed.is_none());
    assert_eq!(addresses.heap_bytes(), 0);
    for (s, address) in list.iter().enumerate() {
        assert_eq!(addresses.find(&records, 100, address), Some(s as u32));
    }
    for missing in [
        "",
        "http://10.0.0.0",
        "http://10.0.0.0500",
        "http://10.0.0.100",
        "z",
    ] {
        assert_eq!(addresses.find(&records, 100, missing), None, "{missing}");
    }
}

#[test]
fn repeats_are_refused_in_order_or_not() {
    for list in [
        &["a", "b", "b", "c"][..],
        &["a", "a"],
        &["c", "a", "b", "a"],
        &["b", "a", "b"],
    ] {
        let records = recorded(list);
        // Told they do not ascend (as a scan of them finds), it hashes them at once.
        for order in [None, Some(false)] {
            assert!(
                Addresses::claim(&records, list.len() as u32, order).is_none(),
                "{list:?} {order:?}"
            );
        }
    }
    for list in [
        &[][..],
        &["a"],
        &["b", "a"],
        &["a", "b", "c"],
        &["a", "ab", "b"],
    ] {
        let records = recorded(list);
        let ascending = list.windows(2).all(|w| w[0] < w[1]);
        for order in [None, Some(ascending)] {
            let addresses = Addresses::claim(&records, list.len() as u32, order).unwrap();
            for (s, address) in list.iter().enumerate() {
                assert_eq!(
                    addresses.find(&records, list.len() as u32, address),
                    Some(s as u32)
                );
            }
        }
    }
}

#[test]
fn the_first_change_hashes_the_build_order() {
    let records = recorded(&["a", "b", "c"]);
    let mut addresses = Addresses::claim(&records, 3, None).unwrap();
    addresses.remove(&records, 3, 1);
    assert!(addresses.heap_bytes() > 0);
    assert_eq!(addresses.find(&records, 3, "b"), None);
    assert_eq!(addresses.find(&records, 3, "a"), Some(0));
    assert_eq!(addresses.find(&records, 3, "c"), Some(2));

    // An added host past the build's, out of order: its slot is the first new one.
    let mut records = recorded(&["b", "c", "a"]);
    let mut addresses = Addresses::claim(&recorded(&["b", "c"]), 2, None).unwrap();
    addresses.insert(&records, 2);
    for (s, address) in ["b", "c", "a"].iter().enumerate() {
        assert_eq!(addresses.find(&records, 3, address), Some(s as u32));
    }
    records.start(3, "d");
    records.seal(3, false);
    addresses.insert(&records, 3);
    assert_eq!(addresses.find(&records, 4, "d"), Some(3));
}
