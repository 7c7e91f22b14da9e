#![allow(clippy::unwrap_used, clippy::expect_used)]
extern crate std;

use alloc::{collections::BTreeMap, format, string::String, vec};

use proptest::prelude::*;

use super::*;

fn sample() -> HostTable {
    let mut subset = SubsetConfig {
        fallback_policy: FallbackPolicy::DefaultSubset,
        default_subset: BTreeMap::from([("zone".into(), "a".into())]),
        panic_mode_any: true,
        list_as_any: true,
        allow_redundant_keys: true,
        metadata_fallbacks: vec![BTreeMap::from([("version".into(), "v1".into())])],
        child_policy: LbPolicy::LeastRequest,
        panic_threshold: 30,
        ..SubsetConfig::default()
    };
    subset.selectors.push(SubsetSelector::new(["zone"]));
    subset.selectors.push(SubsetSelector {
        keys: vec!["zone".into(), "version".into()],
        fallback_policy: SelectorFallback::KeysSubset,
        fallback_keys_subset: vec!["zone".into()],
        single_host_per_subset: true,
        fallback_on_unhealthy: true,
    });
    HostTable {
        version: 42,
        hosts: vec![
            Host::new("http://10.0.0.1:8080").with_label("zone", "a"),
            Host {
                weight: 7,
                healthy: false,
                ..Host::new("https://origin.example/prefix").with_label("version", "v1,v2")
            },
        ],
        subset,
    }
}

#[test]
fn rkyv_round_trip() {
    let table = sample();
    let bytes = table.encode().unwrap();
    assert_eq!(HostTable::decode(&bytes).unwrap(), table);
    // Decoding copes with any alignment of the input.
    let mut shifted = vec![0u8];
    shifted.extend_from_slice(&bytes);
    assert_eq!(HostTable::decode(&shifted[1..]).unwrap(), table);
}

#[test]
fn json_round_trip_and_defaults() {
    let table = sample();
    let json = serde_json::to_string(&table).unwrap();
    assert_eq!(serde_json::from_str::<HostTable>(&json).unwrap(), table);
    let minimal: HostTable =
        serde_json::from_str(r#"{"version": 1, "hosts": [{"address": "http://a"}]}"#).unwrap();
    assert_eq!(minimal.hosts[0], Host::new("http://a"));
    assert_eq!(minimal.subset, SubsetConfig::default());
    assert_eq!(minimal.subset.panic_threshold, 50);
    let spelled: SubsetConfig = serde_json::from_str(
        r#"{"fallback_policy": "ANY_ENDPOINT", "child_policy": "ROUND_ROBIN",
            "selectors": [{"keys": ["a", "b"], "fallback_policy": "KEYS_SUBSET",
                           "fallback_keys_subset": ["a"]}]}"#,
    )
    .unwrap();
    assert_eq!(spelled.fallback_policy, FallbackPolicy::AnyEndpoint);
    assert!(serde_json::from_str::<HostTable>(r#"{"version": 1, "hostz": []}"#).is_err());
}

#[test]
fn encode_refuses_an_invalid_table() {
    let mut table = sample();
    table.hosts[0].weight = 0;
    assert_eq!(table.encode(), Err(HostTableError::ZeroWeight { index: 0 }));
}

/// `sample()` changed by `edit` fails validation with `expected`, from `validate` and from
/// `decode` of its archive alike.
fn refused(edit: impl FnOnce(&mut HostTable), expected: HostTableError) {
    let mut table = sample();
    edit(&mut table);
    assert_eq!(table.validate(), Err(expected.clone()));
    let bytes = table.encode_unchecked();
    assert_eq!(HostTable::decode(&bytes), Err(expected.clone()));
    let built = crate::SubsetLb::decode(&bytes).map(|lb| lb.len());
    assert_eq!(built, Err(crate::SubsetError::Table(expected)));
}

#[test]
fn each_host_rule_has_its_error() {
    refused(
        |t| t.hosts[1].address.clear(),
        HostTableError::EmptyAddress { index: 1 },
    );
    refused(
        |t| t.hosts[0].address = "ftp://x".into(),
        HostTableError::InvalidAddress {
            index: 0,
            address: "ftp://x".into(),
            reason: "scheme must be http or https",
        },
    );
    refused(
        |t| t.hosts[1].address = t.hosts[0].address.clone(),
        HostTableError::DuplicateAddress {
            first: 0,
            index: 1,
            address: "http://10.0.0.1:8080".into(),
        },
    );
    for (address, normal) in [
        ("HTTP://10.0.0.9:8080", "http://10.0.0.9:8080"),
        ("http://Host.Example", "http://host.example"),
        ("http://10.0.0.9:8080/", "http://10.0.0.9:8080"),
        ("https://h/api//", "https://h/api"),
    ] {
        refused(
            |t| t.hosts[1].address = address.into(),
            HostTableError::AddressNotNormal {
                index: 1,
                address: address.into(),
                normal: normal.into(),
            },
        );
    }
    refused(
        |t| t.hosts[1].weight = 0,
        HostTableError::ZeroWeight { index: 1 },
    );
    refused(
        |t| t.hosts[0].weight = MAX_WEIGHT + 1,
        HostTableError::WeightTooLarge {
            index: 0,
            weight: MAX_WEIGHT + 1,
        },
    );
    refused(
        |t| {
            (1..=MAX_LABELS)
                .for_each(|i| drop(t.hosts[0].labels.insert(format!("k{i}"), "v".into())))
        },
        HostTableError::TooManyLabels {
            index: 0,
            count: MAX_LABELS + 1,
        },
    );
    refused(
        |t| drop(t.hosts[0].labels.insert(String::new(), "v".into())),
        HostTableError::EmptyKey {
            place: "host 0".into(),
        },
    );
    let long = "k".repeat(MAX_KEY_LEN + 1);
    refused(
        |t| drop(t.hosts[0].labels.insert(long.clone(), "v".into())),
        HostTableError::KeyTooLong {
            place: "host 0".into(),
            key: format!("{}...", &long[..64]),
        },
    );
    refused(
        |t| {
            drop(
                t.hosts[0]
                    .labels
                    .insert("zone".into(), "v".repeat(MAX_VALUE_LEN + 1)),
            )
        },
        HostTableError::ValueTooLong {
            place: "host 0".into(),
            key: "zone".into(),
        },
    );
}

/// Two spellings of one origin are refused, and once written in normal form they are one
/// address twice.
#[test]
fn normalized_addresses_are_one_spelling_an_origin() {
    for (first, second) in [
        ("http://a.example:8080", "HTTP://A.Example:8080/"),
        ("http://a.example", "http://a.example:80"),
        ("https://a.example/p", "https://a.example:0443/p/"),
        ("http://a.example:8080", "http://a.example:08080"),
    ] {
        let mut table = sample();
        table.hosts[0].address = first.into();
        table.hosts[1].address = second.into();
        assert!(matches!(
            table.validate(),
            Err(HostTableError::AddressNotNormal { index: 1, .. })
        ));
        table.normalize_addresses();
        assert_eq!(table.hosts[1].address, first);
        assert_eq!(
            table.validate(),
            Err(HostTableError::DuplicateAddress {
                first: 0,
                index: 1,
                address: first.into(),
            })
        );
    }
    let mut table = sample();
    table.hosts[0].address = "ftp://Not.An.Origin/".into();
    table.normalize_addresses();
    assert_eq!(
        table.hosts[0].address, "ftp://Not.An.Origin/",
        "left for validate"
    );
}

#[test]
fn too_many_hosts() {
    let table = HostTable {
        hosts: vec![Host::new("http://a"); MAX_HOSTS + 1],
        ..HostTable::default()
    };
    assert_eq!(
        table.validate(),
        Err(HostTableError::TooManyHosts(MAX_HOSTS + 1))
    );
}

#[test]
fn each_config_rule_has_its_error() {
    refused(
        |t| t.subset.selectors = vec![SubsetSelector::new(["a"]); MAX_SELECTORS + 1],
        HostTableError::TooManySelectors(MAX_SELECTORS + 1),
    );
    refused(
        |t| t.subset.selectors[0].keys.clear(),
        HostTableError::EmptySelector { index: 0 },
    );
    refused(
        |t| t.subset.selectors[0].keys = (0..=MAX_SELECTOR_KEYS).map(|i| format!("k{i}")).collect(),
        HostTableError::TooManySelectorKeys {
            index: 0,
            count: MAX_SELECTOR_KEYS + 1,
        },
    );
    refused(
        |t| t.subset.selectors[0].keys.push("zone".into()),
        HostTableError::DuplicateSelectorKey {
            index: 0,
            key: "zone".into(),
        },
    );
    refused(
        |t| t.subset.selectors[0].keys.push(String::new()),
        HostTableError::EmptyKey {
            place: "selector 0".into(),
        },
    );
    refused(
        |t| {
            t.subset
                .selectors
                .push(SubsetSelector::new(["version", "zone"]))
        },
        HostTableError::DuplicateSelector { first: 1, index: 2 },
    );
    for subset in [
        vec![],
        vec!["zone".into(), "version".into()],
        vec!["other".into()],
    ] {
        refused(
            |t| t.subset.selectors[1].fallback_keys_subset = subset,
            HostTableError::InvalidKeysSubset { index: 1 },
        );
    }
    refused(
        |t| t.subset.selectors[0].fallback_keys_subset = vec!["zone".into()],
        HostTableError::UnusedKeysSubset { index: 0 },
    );
    refused(
        |t| drop(t.subset.default_subset.insert(String::new(), "x".into())),
        HostTableError::EmptyKey {
            place: "default_subset".into(),
        },
    );
    refused(
        |t| {
            t.subset.metadata_fallbacks =
                vec![BTreeMap::from([("a".into(), "b".into())]); MAX_METADATA_FALLBACKS + 1]
        },
        HostTableError::TooManyMetadataFallbacks(MAX_METADATA_FALLBACKS + 1),
    );
    refused(
        |t| t.subset.metadata_fallbacks.push(BTreeMap::new()),
        HostTableError::EmptyMetadataFallback { index: 1 },
    );
    refused(
        |t| {
            t.subset.metadata_fallbacks[0] = (0..=MAX_SELECTOR_KEYS)
                .map(|i| (format!("k{i}"), "v".into()))
                .collect()
        },
        HostTableError::TooManyEntries {
            place: "metadata_fallbacks 0".into(),
            count: MAX_SELECTOR_KEYS + 1,
            max: MAX_SELECTOR_KEYS,
        },
    );
    refused(
        |t| t.subset.panic_threshold = 101,
        HostTableError::PanicThreshold(101),
    );
}

#[test]
fn errors_echo_escaped_and_cut() {
    let mut table = sample();
    table.hosts[0].address = format!("\u{1}{}", "x".repeat(100));
    let message = format!("{}", table.validate().unwrap_err());
    assert!(message.contains("\\x01xxx"), "{message}");
    assert!(message.contains("..."), "{message}");
}

proptest! {
    #[test]
    fn truncated_archives_are_refused(cut in 0usize..1000) {
        let bytes = sample().encode().unwrap();
        let cut = cut % bytes.len();
        prop_assert!(HostTable::decode(&bytes[..cut]).is_err());
    }

    #[test]
    fn garbage_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _decoded = same_verdict(&bytes)?;
    }

    #[test]
    fn garbage_behind_a_header_never_panics(body in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut bytes = sample().encode().unwrap()[..16].to_vec();
        bytes.extend_from_slice(&body);
        let _decoded = same_verdict(&bytes)?;
    }

    #[test]
    fn flipped_bytes_never_panic(at in any::<usize>(), bit in 0u8..8) {
        let mut bytes = sample().encode().unwrap();
        let at = at % bytes.len();
        bytes[at] ^= 1 << bit;
        if let Ok(table) = same_verdict(&bytes)? {
            prop_assert!(table.validate().is_ok());
        }
    }
}

/// `HostTable::decode` and the load balancer's in-place `SubsetLb::decode` accept and refuse
/// the same bytes, with the same error; returns the decoded table.
fn same_verdict(bytes: &[u8]) -> Result<Result<HostTable, HostTableError>, TestCaseError> {
    let table = HostTable::decode(bytes);
    let lb = crate::SubsetLb::decode(bytes);
    match (&table, lb) {
        (Ok(t), Ok(lb)) => prop_assert_eq!((lb.version(), lb.len()), (t.version, t.hosts.len())),
        (Err(e), Err(crate::SubsetError::Table(f))) => prop_assert_eq!(e, &f),
        (t, lb) => prop_assert!(false, "decode {t:?}, in place {:?}", lb.map(|l| l.len())),
    }
    Ok(table)
}

/// The maps of an archive not made by `encode` (patched: the inline key `z` of its only
/// occurrence replaced) are refused rather than sorted or merged on the way in, by both
/// decoders: out of order (`ka`) and repeated (`kq`).
fn patched_maps_refused(table: &HostTable, z: &[u8; 3], expected: HostTableError) {
    let bytes = table.encode().unwrap();
    let found: Vec<usize> = (0..bytes.len() - 2)
        .filter(|&i| &bytes[i..i + 3] == z)
        .collect();
    assert_eq!(found.len(), 1, "{z:?} occurs once");
    for patch in [b"ka", b"kq"] {
        let mut patched = bytes.clone();
        patched[found[0]..found[0] + 2].copy_from_slice(patch);
        assert_eq!(same_verdict(&patched).unwrap(), Err(expected.clone()));
    }
}

#[test]
fn maps_out_of_order_or_repeated_are_refused() {
    let labels = BTreeMap::from([("kq9".into(), "1".into()), ("kz9".into(), "2".into())]);
    let mut table = HostTable {
        version: 1,
        hosts: vec![Host {
            labels: labels.clone(),
            ..Host::new("http://10.0.0.1")
        }],
        subset: SubsetConfig::default(),
    };
    let index = 0;
    patched_maps_refused(&table, b"kz9", HostTableError::LabelsOutOfOrder { index });
    table.hosts[0].labels.clear();
    table.subset.default_subset = labels.clone();
    let place = "default_subset".into();
    patched_maps_refused(&table, b"kz9", HostTableError::EntriesOutOfOrder { place });
    table.subset.default_subset.clear();
    table.subset.metadata_fallbacks = vec![BTreeMap::new(), labels];
    table.subset.metadata_fallbacks[0].insert("a".into(), "b".into());
    let place = "metadata_fallbacks 1".into();
    patched_maps_refused(&table, b"kz9", HostTableError::EntriesOutOfOrder { place });
}

#[test]
fn decoded_tables_build() {
    let table = HostTable::decode(&sample().encode().unwrap()).unwrap();
    let lb = crate::SubsetLb::build(&table).unwrap();
    assert_eq!((lb.version(), lb.len()), (42, 2));
}
