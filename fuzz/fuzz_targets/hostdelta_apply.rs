//! `HostDelta::decode` on arbitrary bytes, then `SubsetLb::apply` of what it accepts to a small
//! index: never panics; an accepted delta encodes back to itself; an applied one leaves the
//! index at the delta's version with the hosts the delta describes, and a refused one leaves
//! the index exactly as it was.
#![no_main]

use edgewise::{Host, HostDelta, HostTable, SubsetConfig, SubsetLb, SubsetSelector};
use libfuzzer_sys::fuzz_target;

fn table() -> HostTable {
    let mut subset = SubsetConfig::default();
    subset.selectors.push(SubsetSelector::new(["zone"]));
    let hosts = (0..4)
        .map(|i| Host::new(format!("http://10.0.0.{i}")).with_label("zone", ["a", "b"][i % 2]))
        .collect();
    HostTable {
        version: 1,
        hosts,
        subset,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(delta) = HostDelta::decode(data) else {
        return;
    };
    assert!(delta.validate().is_ok());
    let bytes = delta.encode().expect("a decoded delta encodes");
    assert_eq!(HostDelta::decode(&bytes).expect("round trip"), delta);
    let mut lb = SubsetLb::build(&table()).expect("valid table");
    let before = (lb.version(), lb.len(), lb.stats());
    let delta = HostDelta { from: 1, ..delta };
    match lb.apply(&delta) {
        Ok(_) => {
            assert_eq!(lb.version(), delta.version);
            for host in &delta.upserts {
                let id = lb.host_id(&host.address).expect("upserted");
                assert_eq!(lb.weight(id), Some(host.weight));
                assert_eq!(lb.is_healthy(id), Some(host.healthy));
            }
            for address in &delta.removed {
                assert_eq!(lb.host_id(address), None);
            }
        }
        Err(_) => assert_eq!((lb.version(), lb.len(), lb.stats()), before),
    }
});
