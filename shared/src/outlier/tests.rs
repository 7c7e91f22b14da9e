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
    out.success(&flaky, 1);
    assert_eq!(
        out.failure(&mut lb, &flaky, 2),
        OutlierVerdict::Counted { failures: 1 }
    );
    out.success(&flaky, 3);
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
        OutlierVerdict::AtLimit
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
fn a_host_its_table_marks_unhealthy_comes_back_unhealthy() {
    let mut t = table(3);
    t.hosts[0].healthy = false;
    let mut lb = SubsetLb::build(&t).unwrap();
    let mut out = Outliers::new(policy(1));
    out.failure(&mut lb, &address(0), 0);
    out.restore_due(&mut lb, 1_000);
    assert!(!healthy(&lb, 0));
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
}

fn events() -> impl Strategy<Value = Vec<Event>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0..6usize).prop_map(Event::Failure),
            2 => (0..6usize).prop_map(Event::Success),
            1 => (0..3_000u64).prop_map(Event::Tick),
        ],
        0..200,
    )
}

proptest! {
    /// For any run of failures, successes and time: the load balancer's health is the table's
    /// except for the hosts ejected, no more are ejected than allowed, and once every ejection
    /// is over every host is back.
    #[test]
    fn health_is_the_tables_but_for_the_ejected(events in events(), unhealthy in 0..6usize) {
        let mut t = table(6);
        t.hosts[unhealthy].healthy = false;
        let mut lb = SubsetLb::build(&t).unwrap();
        let mut out = Outliers::new(OutlierPolicy { max_ejected_percent: 34, ..policy(2) });
        let mut now = 0;
        for event in events {
            match event {
                Event::Failure(i) => { out.failure(&mut lb, &address(i), now); }
                Event::Success(i) => out.success(&address(i), now),
                Event::Tick(ms) => now += ms,
            }
            out.restore_due(&mut lb, now);
            prop_assert!(out.ejected() <= 2);
            let mut ejected = 0;
            for i in 0..6 {
                let expected = i != unhealthy && !out.is_ejected(&address(i));
                prop_assert_eq!(healthy(&lb, i), expected);
                ejected += usize::from(out.is_ejected(&address(i)));
            }
            prop_assert_eq!(ejected, out.ejected());
        }
        out.restore_due(&mut lb, now + 5_000);
        prop_assert_eq!(out.ejected(), 0);
        for i in 0..6 {
            prop_assert_eq!(healthy(&lb, i), i != unhealthy);
        }
    }
}
