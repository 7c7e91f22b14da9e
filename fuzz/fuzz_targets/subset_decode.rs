//! The worker's in-place build from the daemon's bytes against the owned path, on tables that
//! are valid until mutated: a small table drawn from the input is encoded, then up to seven of
//! its bytes are overwritten, anywhere (offsets, label positions, weights) or inside an address
//! or label text. Such bytes mostly pass bytecheck and reach the validation and the interning,
//! which arbitrary bytes never get to. `SubsetLb::decode` and `HostTable::decode` must accept
//! and refuse the same bytes with the same error. What both accept must hold addresses
//! `Origin::parse` keeps as they are, each once, and must route alike: for each host's labels,
//! and for each request missing one of them, the same fallback and, over a round-robin cycle,
//! the same addresses.
#![no_main]

use std::collections::BTreeSet;

use edgewise::{HostTable, Origin, SubsetError, SubsetLb};
use libfuzzer_sys::fuzz_target;

#[path = "common/tables.rs"]
mod tables;

use tables::{Draw, agree, table};

/// One overwrite of the encoded table.
struct Mutation {
    kind: u8,
    a: u8,
    b: u8,
    c: u8,
    byte: u8,
}

/// Bytes URL and label checks decide on.
const SPECIAL: &[u8] = b"/:.@?#%[]-_ \x00\x7f\xc3\xff0aZ";

/// Up to 7 overwrites from the start of the input, before the table's draw takes what
/// follows: a fuzzer's short inputs mutate too.
fn mutations(d: &mut Draw) -> Vec<Mutation> {
    let n = d.below(8);
    (0..n)
        .map(|_| Mutation {
            kind: d.byte(),
            a: d.byte(),
            b: d.byte(),
            c: d.byte(),
            byte: d.byte(),
        })
        .collect()
}

/// Where `m` overwrites `bytes`: anywhere, or inside a host's address or label text (found by
/// its first occurrence), which arbitrary places seldom hit.
fn place(bytes: &[u8], table: &HostTable, m: &Mutation) -> usize {
    let anywhere = usize::from(u16::from_le_bytes([m.a, m.b])) % bytes.len();
    let host = &table.hosts[usize::from(m.a) % table.hosts.len()];
    let text = match m.kind % 3 {
        0 => return anywhere,
        1 => host.address.as_str(),
        _ => {
            let texts = host.labels.iter().flat_map(|(k, v)| [k, v]);
            match texts.clone().nth(usize::from(m.b) % texts.count().max(1)) {
                Some(text) if !text.is_empty() => text.as_str(),
                _ => return anywhere,
            }
        }
    };
    let found = bytes.windows(text.len()).position(|w| w == text.as_bytes());
    found.map_or(anywhere, |at| at + usize::from(m.c) % text.len())
}

fn mutate(bytes: &mut [u8], table: &HostTable, mutations: &[Mutation]) {
    for m in mutations {
        let at = place(bytes, table, m);
        bytes[at] = match m.kind & 0x80 {
            0 => m.byte,
            _ => SPECIAL[usize::from(m.byte) % SPECIAL.len()],
        };
    }
}

fuzz_target!(|data: &[u8]| {
    let mut d = Draw(data);
    let mutations = mutations(&mut d);
    let drawn = table(&mut d);
    let Ok(mut bytes) = drawn.encode() else {
        return;
    };
    mutate(&mut bytes, &drawn, &mutations);
    let in_place = SubsetLb::decode(&bytes);
    let table = match HostTable::decode(&bytes) {
        Ok(table) => table,
        Err(e) => {
            assert_eq!(in_place.err(), Some(SubsetError::Table(e)));
            return;
        }
    };
    // What both accept must also be what the parser calls an origin in normal form, each
    // address once.
    for host in &table.hosts {
        let normal = Origin::parse(&host.address).map(|o| o.as_str() == host.address);
        assert_eq!(normal, Ok(true), "accepted address {:?}", host.address);
    }
    let addresses: BTreeSet<&str> = table.hosts.iter().map(|h| h.address.as_str()).collect();
    assert_eq!(
        addresses.len(),
        table.hosts.len(),
        "an address accepted twice"
    );
    let mut in_place = in_place.expect("decoded in place as well");
    let mut built = SubsetLb::build(&table).expect("a decoded table builds");
    assert_eq!(
        (in_place.version(), in_place.len(), in_place.stats()),
        (built.version(), built.len(), built.stats())
    );
    agree(&mut in_place, &mut built, &table, 1);
    assert_eq!(in_place.stats(), built.stats());
});
