//! `HostTable::decode` on arbitrary bytes: never panics; whatever it accepts is valid, builds a
//! subset load balancer, and encodes back to a table that decodes equal. The load balancer's
//! in-place `SubsetLb::decode` accepts and refuses the same bytes, with the same error.
#![no_main]

use edgewise::{HostTable, SubsetError, SubsetLb};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let in_place = SubsetLb::decode(data);
    let table = match HostTable::decode(data) {
        Ok(table) => table,
        Err(e) => {
            assert_eq!(in_place.err(), Some(SubsetError::Table(e)));
            return;
        }
    };
    let in_place = in_place.expect("decoded in place as well");
    assert_eq!(
        (in_place.version(), in_place.len()),
        (table.version, table.hosts.len())
    );
    assert!(table.validate().is_ok());
    let lb = SubsetLb::build(&table).expect("a decoded table builds");
    assert_eq!(lb.version(), table.version);
    assert_eq!(lb.stats(), in_place.stats());
    let bytes = table.encode().expect("a decoded table encodes");
    assert_eq!(HostTable::decode(&bytes).expect("round trip"), table);
});
