#![allow(clippy::unwrap_used, clippy::expect_used)]
extern crate std;

use alloc::{collections::BTreeMap, format, string::String, vec, vec::Vec};

use proptest::prelude::*;

use super::*;
use crate::{SubsetConfig, SubsetSelector};

fn table(version: u64, hosts: Vec<Host>) -> HostTable {
    let mut subset = SubsetConfig::default();
    subset.selectors.push(SubsetSelector::new(["zone"]));
    HostTable {
        version,
        hosts,
        subset,
    }
}

fn host(i: u32, zone: &str) -> Host {
    Host::new(format!("http://10.0.0.{i}:8080")).with_label("zone", zone)
}

#[test]
fn between_names_what_changed_and_only_that() {
    let old = table(
        1,
        vec![host(1, "a"), host(2, "a"), host(3, "b"), host(4, "b")],
    );
    let mut hosts = vec![host(4, "b"), host(3, "c"), host(1, "a"), host(5, "a")];
    hosts[2].healthy = false;
    let new = table(2, hosts);
    let delta = HostDelta::between(&old, &new).unwrap();
    assert_eq!((delta.from, delta.version), (1, 2));
    let upserted: Vec<&str> = delta.upserts.iter().map(|h| h.address.as_str()).collect();
    // Host 4 only moved in the list: not a change.
    assert_eq!(
        upserted,
        [
            "http://10.0.0.3:8080",
            "http://10.0.0.1:8080",
            "http://10.0.0.5:8080"
        ]
    );
    assert_eq!(delta.removed, ["http://10.0.0.2:8080"]);
    assert_eq!(delta.changes(), 4);
    assert!(
        HostDelta::between(&old, &table(3, old.hosts.clone()))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_configuration_change_is_not_a_delta() {
    let old = table(1, vec![host(1, "a")]);
    let mut new = old.clone();
    new.subset.list_as_any = true;
    assert_eq!(HostDelta::between(&old, &new), None);
}

#[test]
fn encoding_round_trips_and_damage_is_refused() {
    let old = table(1, vec![host(1, "a"), host(2, "b")]);
    let new = table(2, vec![host(1, "b"), host(3, "c")]);
    let delta = HostDelta::between(&old, &new).unwrap();
    let bytes = delta.encode().unwrap();
    assert_eq!(HostDelta::decode(&bytes).unwrap(), delta);
    // Unaligned bytes are copied, not refused.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    assert_eq!(HostDelta::decode(&shifted[1..]).unwrap(), delta);
    for cut in [0, 1, bytes.len() / 2, bytes.len() - 1] {
        assert_eq!(
            HostDelta::decode(&bytes[..cut]),
            Err(HostTableError::Malformed)
        );
    }
    // A host table is not a delta, nor is a delta of another format.
    assert_eq!(
        HostDelta::decode(&new.encode().unwrap()),
        Err(HostTableError::Malformed)
    );
    let mut other = bytes.clone();
    other[14] = 1;
    let expected = HostTableError::UnsupportedFormat {
        found: 1,
        supported: crate::hosttable::wire::FORMAT,
    };
    assert_eq!(HostDelta::decode(&other), Err(expected));
}

#[test]
fn invalid_deltas_are_refused_with_their_rule() {
    let twice = HostDelta {
        from: 1,
        version: 2,
        upserts: vec![host(1, "a")],
        removed: vec!["http://10.0.0.2:8080".into(), "http://10.0.0.1:8080".into()],
    };
    let error = HostTableError::DeltaRepeatsAddress {
        address: "http://10.0.0.1:8080".into(),
    };
    assert_eq!(twice.validate(), Err(error.clone()));
    assert_eq!(twice.encode(), Err(error));
    let bad = HostDelta {
        upserts: vec![host(1, "a"), Host::new("not a url")],
        removed: vec![],
        ..twice.clone()
    };
    assert!(matches!(
        bad.validate(),
        Err(HostTableError::InvalidAddress { index: 1, .. })
    ));
    let repeated = HostDelta {
        upserts: vec![host(1, "a"), host(1, "b")],
        removed: vec![],
        ..twice
    };
    assert!(matches!(
        repeated.validate(),
        Err(HostTableError::DuplicateAddress {
            first: 0,
            index: 1,
            ..
        })
    ));
}

fn hosts() -> impl Strategy<Value = BTreeMap<u8, (u8, bool)>> {
    prop::collection::btree_map(any::<u8>(), (0..3u8, any::<bool>()), 0..40)
}

fn listed(hosts: &BTreeMap<u8, (u8, bool)>, version: u64) -> HostTable {
    let list = hosts
        .iter()
        .map(|(&i, &(zone, healthy))| Host {
            healthy,
            ..host(u32::from(i), ["a", "b", "c"][usize::from(zone)])
        })
        .rev()
        .collect();
    table(version, list)
}

proptest! {
    /// The old hosts, less the removed ones, with the upserts put in, are the new hosts.
    #[test]
    fn a_delta_turns_the_old_hosts_into_the_new(old in hosts(), new in hosts()) {
        let (old, new) = (listed(&old, 1), listed(&new, 2));
        let delta = HostDelta::between(&old, &new).unwrap();
        let mut model: BTreeMap<String, Host> =
            old.hosts.iter().map(|h| (h.address.clone(), h.clone())).collect();
        for address in &delta.removed {
            prop_assert!(model.remove(address).is_some());
        }
        for h in &delta.upserts {
            let before = model.insert(h.address.clone(), h.clone());
            prop_assert_ne!(before.as_ref(), Some(h));
        }
        let expected: BTreeMap<String, Host> =
            new.hosts.iter().map(|h| (h.address.clone(), h.clone())).collect();
        prop_assert_eq!(model, expected);
        prop_assert_eq!(HostDelta::decode(&delta.encode().unwrap()).unwrap(), delta);
    }
}
