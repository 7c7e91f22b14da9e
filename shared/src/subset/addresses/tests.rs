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
        assert_eq!(addresses.find(&records, address), Some(s as u32));
    }
    for missing in [
        "",
        "http://10.0.0.0",
        "http://10.0.0.0500",
        "http://10.0.0.100",
        "z",
    ] {
        assert_eq!(addresses.find(&records, missing), None, "{missing}");
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
                assert_eq!(addresses.find(&records, address), Some(s as u32));
            }
        }
    }
}

#[test]
fn changes_keep_the_build_order_for_the_hosts_they_leave_alone() {
    // 16 hosts: the order serves until more than 2 are gone.
    let list = [
        "a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p",
    ];
    let mut records = recorded(&list);
    let mut addresses = Addresses::claim(&records, 16, None).unwrap();
    addresses.remove(&records, 1);
    records.remove(1);
    assert!(addresses.hashed.is_none());
    assert_eq!(addresses.find(&records, "b"), None);
    assert_eq!(addresses.find(&records, "a"), Some(0));
    assert_eq!(addresses.find(&records, "c"), Some(2));

    // A host added out of order, in a new slot, then one in the freed slot.
    records.start(16, "0");
    records.seal(16, false);
    addresses.insert(&records, 16);
    records.start(1, "z");
    records.seal(1, false);
    addresses.insert(&records, 1);
    for (address, s) in [("a", 0), ("z", 1), ("c", 2), ("p", 15), ("0", 16)] {
        assert_eq!(addresses.find(&records, address), Some(s), "{address}");
    }
    assert_eq!(addresses.find(&records, "b"), None);
    assert!(addresses.hashed.is_none());
}

/// Random adds and removes (freed slots reused first, as the load balancer does) against a
/// map: every live address is found at its slot and no other is, before and after the build's
/// order gives way to one table.
#[test]
fn random_changes_find_what_a_map_finds() {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let built: Vec<String> = (0..64).map(|i| format!("http://h{i:03}")).collect();
    let list: Vec<&str> = built.iter().map(String::as_str).collect();
    let mut records = recorded(&list);
    let mut addresses = Addresses::claim(&records, 64, None).unwrap();
    let mut live: alloc::collections::BTreeMap<String, u32> =
        (built.iter().cloned()).zip(0..).collect();
    let (mut free, mut slots, mut fresh) = (Vec::new(), 64u32, 0);
    let mut hashed_at = None;
    for step in 0..400 {
        if next() % 2 == 0 && !live.is_empty() {
            let nth = (next() % live.len() as u64) as usize;
            let (address, s) = live.iter().nth(nth).map(|(a, &s)| (a.clone(), s)).unwrap();
            addresses.remove(&records, s);
            records.remove(s);
            live.remove(&address);
            free.push(s);
        } else {
            let s = free.pop().unwrap_or_else(|| {
                slots += 1;
                slots - 1
            });
            fresh += 1;
            let address = format!("http://{}{fresh}", ["a", "h050x", "z"][fresh % 3]);
            records.start(s, &address);
            records.seal(s, false);
            addresses.insert(&records, s);
            live.insert(address, s);
        }
        if hashed_at.is_none() && addresses.hashed.is_some() {
            hashed_at = Some(step);
        }
        for (address, &s) in &live {
            assert_eq!(
                addresses.find(&records, address),
                Some(s),
                "{step}: {address}"
            );
        }
        for gone in [
            "http://h000",
            "http://h031",
            "http://h063",
            "http://a1",
            "x",
        ] {
            if !live.contains_key(gone) {
                assert_eq!(addresses.find(&records, gone), None, "{step}: {gone}");
            }
        }
    }
    // An eighth of the build's 64 hosts gone (9 removals of them) made the one table.
    assert!(hashed_at.is_some_and(|step| step >= 8), "{hashed_at:?}");
}
