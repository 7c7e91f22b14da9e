//! `HostTable::decode` on arbitrary bytes: never panics; whatever it accepts is valid, builds a
//! subset load balancer, and encodes back to a table that decodes equal.
#![no_main]

use edgewise::{HostTable, SubsetLb};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(table) = HostTable::decode(data) else {
        return;
    };
    assert!(table.validate().is_ok());
    let lb = SubsetLb::build(&table).expect("a decoded table builds");
    assert_eq!(lb.version(), table.version);
    let bytes = table.encode().expect("a decoded table encodes");
    assert_eq!(HostTable::decode(&bytes).expect("round trip"), table);
});
