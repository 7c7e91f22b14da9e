#![allow(clippy::unwrap_used, clippy::expect_used)]
extern crate std;

use std::collections::BTreeSet;
use std::format;
use std::string::String;
use std::vec::Vec;

use proptest::prelude::*;

use super::{OutlierPolicy, OutlierVerdict, Outliers};
use crate::{Host, HostDelta, HostTable, SubsetConfig, SubsetLb, SubsetSelector};

fn address(i: usize) -> String {
    format!("http://10.0.0.{i}:8080")
}

/// `n` hosts in zone `a`.
fn table(n: usize) -> HostTable {
    let mut subset = SubsetConfig::default();
    subset.selectors.push(SubsetSelector::new(["zone"]));
    HostTable {
        version: 1,
        hosts: (0..n)
            .map(|i| Host::new(address(i)).with_label("zone", "a"))
            .collect(),
        subset,
    }
}

fn lb(n: usize) -> SubsetLb {
    SubsetLb::build(&table(n)).unwrap()
}

fn policy(failures: u32) -> OutlierPolicy {
    OutlierPolicy {
        consecutive_failures: failures,
        base_ejection_ms: 1_000,
        max_ejection_ms: 5_000,
        max_ejected_percent: 50,
    }
}

/// The addresses requests for zone `a` reach.
fn reached(lb: &mut SubsetLb) -> BTreeSet<String> {
    crate::subset::tests::picked(lb, "a")
}

fn healthy(lb: &SubsetLb, i: usize) -> bool {
    lb.is_healthy(lb.host_id(&address(i)).unwrap()).unwrap()
}

#[test]
fn failures_in_a_row_eject_a_host_until_its_time_is_up() {
    let mut lb = lb(4);
    let mut out = Outliers::new(policy(3));
    let dead = address(0);
    assert_eq!(
        out.failure(&mut lb, &dead, 10),
        OutlierVerdict::Counted { failures: 1 }
    );
    assert_eq!(
        out.failure(&mut lb, &dead, 11),
        OutlierVerdict::Counted { failures: 2 }
    );
    assert!(reached(&mut lb).contains(&dead));
    assert_eq!(
        out.failure(&mut lb, &dead, 12),
        OutlierVerdict::Ejected { until: 1_012 }
    );
    assert!(out.is_ejected(&dead));
    assert_eq!(out.ejected(), 1);
    assert!(!reached(&mut lb).contains(&dead));
    assert_eq!(reached(&mut lb).len(), 3);
    // Requests that were out when it was ejected fail too: no longer counted.
    assert_eq!(out.failure(&mut lb, &dead, 13), OutlierVerdict::Ignored);

    assert_eq!(out.restore_due(&mut lb, 1_011), 0);
    assert!(!healthy(&lb, 0));
    assert_eq!(out.restore_due(&mut lb, 1_012), 1);
    assert!(healthy(&lb, 0));
    assert_eq!(out.ejected(), 0);
    assert_eq!(reached(&mut lb).len(), 4);
}

#[test]
fn a_success_between_failures_starts_the_count_again() {
    let mut lb = lb(4);
    let mut out = Outliers::new(policy(2));
    let flaky = address(1);
    out.failure(&mut lb, &flaky, 0);
    out.success(&flaky);
    assert_eq!(
        out.failure(&mut lb, &flaky, 2),
        OutlierVerdict::Counted { failures: 1 }
    );
    out.success(&flaky);
    assert_eq!(
        out.failure(&mut lb, &flaky, 4),
        OutlierVerdict::Counted { failures: 1 }
    );
    assert!(healthy(&lb, 1));
}

#[test]
fn each_ejection_lasts_longer_up_to_the_cap_and_a_quiet_spell_resets_it() {
    let mut lb = lb(2);
    let mut out = Outliers::new(policy(1));
    let dead = address(0);
    let mut now = 0;
    let mut lengths = Vec::new();
    for _ in 0..7 {
        let OutlierVerdict::Ejected { until } = out.failure(&mut lb, &dead, now) else {
            panic!("not ejected");
        };
        lengths.push(until - now);
        now = until;
        assert_eq!(out.restore_due(&mut lb, now), 1);
    }
    assert_eq!(lengths, [1_000, 2_000, 3_000, 4_000, 5_000, 5_000, 5_000]);
    // In service for the longest ejection since it came back: a first ejection again.
    now += 5_000;
    assert_eq!(
        out.failure(&mut lb, &dead, now),
        OutlierVerdict::Ejected { until: now + 1_000 }
    );
}

#[test]
fn no_more_than_the_percentage_is_ejected_but_one_always_may_be() {
    let mut lb = lb(4);
    let mut out = Outliers::new(policy(1));
    assert!(matches!(
        out.failure(&mut lb, &address(0), 0),
        OutlierVerdict::Ejected { .. }
    ));
    assert!(matches!(
        out.failure(&mut lb, &address(1), 0),
        OutlierVerdict::Ejected { .. }
    ));
    assert_eq!(
        out.failure(&mut lb, &address(2), 0),
        OutlierVerdict::AtLimit { failures: 1 }
    );
    assert!(healthy(&lb, 2));
    assert_eq!(reached(&mut lb).len(), 2);

    let mut small = SubsetLb::build(&table(1)).unwrap();
    let mut out = Outliers::new(OutlierPolicy {
        max_ejected_percent: 10,
        ..policy(1)
    });
    assert!(matches!(
        out.failure(&mut small, &address(0), 0),
        OutlierVerdict::Ejected { .. }
    ));
}

#[test]
fn off_and_unknown_hosts_are_ignored() {
    let mut lb = lb(2);
    let mut off = Outliers::new(policy(0));
    assert_eq!(
        off.failure(&mut lb, &address(0), 0),
        OutlierVerdict::Ignored
    );
    let mut out = Outliers::new(policy(1));
    assert_eq!(
        out.failure(&mut lb, "http://10.9.9.9:1", 0),
        OutlierVerdict::Ignored
    );
    assert_eq!(out.ejected(), 0);
    assert!(healthy(&lb, 0));
}

#[test]
fn a_host_its_table_marks_unhealthy_is_not_counted() {
    // Picked only in a panic: ejecting it would use up the one host that may be ejected.
    let mut t = table(4);
    t.hosts[0].healthy = false;
    let mut lb = SubsetLb::build(&t).unwrap();
    let mut out = Outliers::new(OutlierPolicy {
        max_ejected_percent: 25,
        ..policy(1)
    });
    assert_eq!(
        out.failure(&mut lb, &address(0), 0),
        OutlierVerdict::Ignored
    );
    assert_eq!((out.ejected(), out.failing()), (0, 0));
    assert!(matches!(
        out.failure(&mut lb, &address(1), 0),
        OutlierVerdict::Ejected { .. }
    ));
}

#[test]
fn the_cap_never_shortens_the_base_time() {
    let mut lb = lb(2);
    let mut out = Outliers::new(OutlierPolicy {
        max_ejection_ms: 0,
        ..policy(1)
    });
    assert_eq!(
        out.failure(&mut lb, &address(0), 5),
        OutlierVerdict::Ejected { until: 1_005 }
    );
}

#[test]
fn successes_cost_nothing_while_no_host_is_failing() {
    let mut lb = lb(3);
    let mut out = Outliers::new(policy(2));
    out.failure(&mut lb, &address(0), 0);
    assert_eq!(out.failing(), 1);
    out.success(&address(0));
    assert_eq!(out.failing(), 0);
    // Ejected and back: remembered for the next ejection's length, but not failing.
    out.failure(&mut lb, &address(1), 0);
    out.failure(&mut lb, &address(1), 0);
    out.restore_due(&mut lb, 1_000);
    assert_eq!(out.failing(), 0);
    out.failure(&mut lb, &address(1), 1_001);
    assert_eq!(
        out.failure(&mut lb, &address(1), 1_002),
        OutlierVerdict::Ejected { until: 3_002 }
    );
}

/// `from` edited by `edit`, as a delta applied to `lb` and told to `out`.
fn change(
    lb: &mut SubsetLb,
    out: &mut Outliers,
    from: &HostTable,
    edit: impl FnOnce(&mut HostTable),
) -> HostTable {
    let mut to = from.clone();
    to.version += 1;
    edit(&mut to);
    let delta = HostDelta::between(from, &to).unwrap();
    lb.apply(&delta).unwrap();
    out.applied(lb, &delta);
    to
}

#[test]
fn a_delta_gives_an_ejected_host_its_health_for_later_and_removals_are_forgotten() {
    let old = table(4);
    let mut lb = SubsetLb::build(&old).unwrap();
    let mut out = Outliers::new(policy(1));
    out.failure(&mut lb, &address(0), 0);
    out.failure(&mut lb, &address(1), 0);

    // The daemon's health checks find host 0 down too, and host 1 is removed.
    let new = change(&mut lb, &mut out, &old, |t| {
        t.hosts[0].healthy = false;
        t.hosts.remove(1);
    });
    assert_eq!(out.ejected(), 1);
    assert!(!out.is_ejected(&address(1)));
    assert!(!healthy(&lb, 0));
    assert_eq!(out.restore_due(&mut lb, 1_000), 1);
    assert!(!healthy(&lb, 0), "the daemon said down");

    // Down, then up again by the daemon while ejected: stays out until its time is up.
    out.failure(&mut lb, &address(2), 2_000);
    let down = change(&mut lb, &mut out, &new, |t| t.hosts[1].healthy = false);
    change(&mut lb, &mut out, &down, |t| t.hosts[1].healthy = true);
    assert!(!healthy(&lb, 2), "ejected still");
    assert_eq!(out.restore_due(&mut lb, 4_000), 1);
    assert!(healthy(&lb, 2));
}

#[test]
fn a_rebuild_keeps_ejections_of_hosts_still_there() {
    let old = table(4);
    let mut lb = SubsetLb::build(&old).unwrap();
    let mut out = Outliers::new(policy(1));
    out.failure(&mut lb, &address(0), 0);
    out.failure(&mut lb, &address(3), 0);
    let mut new = table(3);
    new.version = 2;
    let mut rebuilt = SubsetLb::build(&new).unwrap();
    out.rebuilt(&mut rebuilt);
    assert_eq!(out.ejected(), 1);
    assert!(!healthy(&rebuilt, 0));
    assert_eq!(reached(&mut rebuilt).len(), 2);
    assert_eq!(out.restore_due(&mut rebuilt, 1_000), 1);
    assert!(healthy(&rebuilt, 0));
}

#[derive(Debug, Clone)]
enum Event {
    Failure(usize),
    Success(usize),
    Tick(u64),
    /// The table's health of a host set, by a delta.
    Health(usize, bool),
    /// A host's routing label changed, by a delta (removed and added again in the index).
    Relabel(usize),
    /// A host removed, or added back, by a delta.
    Toggle(usize),
    /// The same table built again.
    Rebuild,
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0..6usize).prop_map(Event::Failure),
        3 => (0..6usize).prop_map(Event::Success),
        2 => (0..3_000u64).prop_map(Event::Tick),
        1 => (0..6usize, any::<bool>()).prop_map(|(i, h)| Event::Health(i, h)),
        1 => (0..6usize).prop_map(Event::Relabel),
        1 => (0..6usize).prop_map(Event::Toggle),
        1 => Just(Event::Rebuild),
    ]
}

/// Six hosts' state in their table.
#[derive(Debug, Clone, Copy)]
struct Hosts {
    present: [bool; 6],
    healthy: [bool; 6],
    zone_b: [bool; 6],
}

impl Hosts {
    fn table(&self, version: u64) -> HostTable {
        let mut t = table(0);
        t.version = version;
        t.hosts = (0..6)
            .filter(|&i| self.present[i])
            .map(|i| {
                let zone = if self.zone_b[i] { "b" } else { "a" };
                let mut host = Host::new(address(i)).with_label("zone", zone);
                host.healthy = self.healthy[i];
                host
            })
            .collect();
        t
    }
}

proptest! {
    /// For any run of failures, successes, time, table changes (by delta) and rebuilds: the
    /// load balancer's health is the table's except for the hosts ejected, no more are
    /// ejected than allowed, the counts agree with the hosts, and once every ejection is over
    /// every host has its table's health.
    #[test]
    fn health_is_the_tables_but_for_the_ejected(events in prop::collection::vec(event(), 0..200)) {
        let mut hosts = Hosts { present: [true; 6], healthy: [true; 6], zone_b: [false; 6] };
        let mut current = hosts.table(1);
        let mut lb = SubsetLb::build(&current).unwrap();
        let mut out = Outliers::new(OutlierPolicy { max_ejected_percent: 34, ..policy(2) });
        let mut now = 0;
        for event in events {
            match event {
                Event::Failure(i) => { out.failure(&mut lb, &address(i), now); }
                Event::Success(i) => out.success(&address(i)),
                Event::Tick(ms) => now += ms,
                Event::Rebuild => {
                    lb = SubsetLb::build(&current).unwrap();
                    out.rebuilt(&mut lb);
                }
                Event::Health(i, h) => hosts.healthy[i] = h,
                Event::Relabel(i) => hosts.zone_b[i] = !hosts.zone_b[i],
                Event::Toggle(i) => hosts.present[i] = !hosts.present[i],
            }
            if matches!(event, Event::Health(..) | Event::Relabel(_) | Event::Toggle(_)) {
                let next = hosts.table(current.version + 1);
                let delta = HostDelta::between(&current, &next).unwrap();
                lb.apply(&delta).unwrap();
                out.applied(&mut lb, &delta);
                current = next;
            }
            out.restore_due(&mut lb, now);
            // 34% of six hosts; removals since may leave more out than 34% of fewer.
            prop_assert!(out.ejected() <= 2);
            let (mut ejected, mut failing) = (0, 0);
            for i in (0..6).filter(|&i| hosts.present[i]) {
                let is_out = out.is_ejected(&address(i));
                prop_assert_eq!(healthy(&lb, i), hosts.healthy[i] && !is_out, "host {}", i);
                ejected += usize::from(is_out);
                failing += usize::from(out.hosts.get(&address(i)).is_some_and(|r| r.failures > 0));
            }
            prop_assert_eq!(ejected, out.ejected());
            prop_assert_eq!(failing, out.failing());
            prop_assert!(out.hosts.keys().all(|a| lb.host_id(a).is_some()), "only hosts of the table");
        }
        out.restore_due(&mut lb, now + 5_000);
        prop_assert_eq!(out.ejected(), 0);
        for i in (0..6).filter(|&i| hosts.present[i]) {
            prop_assert_eq!(healthy(&lb, i), hosts.healthy[i]);
        }
    }
}
