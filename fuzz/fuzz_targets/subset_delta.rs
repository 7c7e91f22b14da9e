//! Deltas applied to the worker's index read in place from the daemon's bytes and to one built
//! from the owned table, against a fresh build of the table each delta makes: a small valid
//! table drawn from the input, then one to four changes of it (hosts removed, relabelled,
//! reweighted, flipped in health, added, the table sometimes re-sorted), each sent as
//! `HostDelta::between` the two tables. Both indexes must take every delta, keep the same
//! counters as each other and as many active subsets as the fresh build, and route as it does:
//! for each host's labels, and for each request missing one of them, the same fallback and,
//! over two round-robin cycles, the same addresses. The paths under test are the first change
//! after a build (room found in the build's arrays, its address order kept) and the ones after.
#![no_main]

use edgewise::{Host, HostDelta, HostTable, SubsetLb};
use libfuzzer_sys::fuzz_target;

#[path = "common/tables.rs"]
mod tables;

use tables::{Draw, agree, host, table};

/// The table after one drawn change of each host (most kept), a few hosts added after the
/// last host ever drawn (`next` on), and sometimes a sort; its version one more.
fn changed(old: &HostTable, d: &mut Draw, next: &mut usize) -> HostTable {
    let mut new = HostTable {
        version: old.version + 1,
        hosts: Vec::new(),
        subset: old.subset.clone(),
    };
    for (i, kept) in old.hosts.iter().enumerate() {
        match d.below(8) {
            0 => {}
            // Labels, weight and health drawn anew, at its address.
            1 => new.hosts.push(Host {
                address: kept.address.clone(),
                ..host(d, i)
            }),
            2 => new.hosts.push(Host {
                healthy: !kept.healthy,
                ..kept.clone()
            }),
            3 => new.hosts.push(Host {
                weight: kept.weight % 3 + 1,
                ..kept.clone()
            }),
            _ => new.hosts.push(kept.clone()),
        }
    }
    for _ in 0..d.below(4) {
        new.hosts.push(host(d, *next));
        *next += 1;
    }
    if d.below(2) == 0 {
        new.sort_hosts();
    }
    new
}

fuzz_target!(|data: &[u8]| {
    let mut d = Draw(data);
    let mut current = table(&mut d);
    let Ok(bytes) = current.encode() else {
        return;
    };
    let mut in_place = SubsetLb::decode(&bytes).expect("a valid table decodes in place");
    let mut built = SubsetLb::build(&current).expect("a valid table builds");
    let mut next = current.hosts.len();
    for _ in 0..1 + d.below(4) {
        let new = changed(&current, &mut d, &mut next);
        let delta = HostDelta::between(&current, &new).expect("the same configuration");
        let applied = in_place
            .apply(&delta)
            .expect("in place: a valid delta applies");
        assert_eq!(built.apply(&delta), Ok(applied));
        assert_eq!(in_place.stats(), built.stats());
        let mut fresh = SubsetLb::build(&new).expect("a valid table builds");
        assert_eq!(
            (in_place.version(), in_place.len()),
            (fresh.version(), fresh.len())
        );
        assert_eq!(
            in_place.stats().subsets_active,
            fresh.stats().subsets_active
        );
        // A set that changed goes on from its old turn, where a fresh one starts at random:
        // its first cycle may give a member two turns and another none; its second is whole.
        agree(&mut in_place, &mut fresh, &new, 2);
        agree(&mut built, &mut fresh, &new, 2);
        current = new;
    }
});
