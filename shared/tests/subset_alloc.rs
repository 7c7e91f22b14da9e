//! `SubsetLb::set` and `SubsetLb::select` allocate nothing: checked with a global allocator
//! that counts the allocations of the current thread (this file is its own test binary, so the
//! allocator sees only these tests).
#![allow(clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use edgewise::{FallbackPolicy, Host, HostTable, LbPolicy, SubsetLb, SubsetSelector};

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator, which upholds the
// `GlobalAlloc` contract; the counter is a thread-local `Cell` with a const initializer, so
// touching it never allocates (no recursion into the allocator).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|n| n.set(n.get() + 1));
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` (see `alloc`).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn lookups_allocate_nothing() {
    let mut table = HostTable::default();
    for i in 0..1000 {
        let host = Host::new(format!("http://10.0.{}.{}", i / 250, i % 250))
            .with_label("zone", ["a", "b", "c"][i % 3])
            .with_label("version", ["v1", "v2"][i % 2])
            .with_label("id", i.to_string());
        table.hosts.push(host);
    }
    table.subset.fallback_policy = FallbackPolicy::AnyEndpoint;
    table.subset.selectors = vec![
        SubsetSelector::new(["zone"]),
        SubsetSelector::new(["zone", "version"]),
        SubsetSelector::new(["id"]),
    ];
    let requests: [&[(&str, &str)]; 5] = [
        &[("zone", "a"), ("version", "v2")],
        &[("id", "17")],
        &[("zone", "q")],
        &[("unknown", "x"), ("zone", "b")],
        &[],
    ];
    for policy in [
        LbPolicy::RoundRobin,
        LbPolicy::Weighted,
        LbPolicy::Random,
        LbPolicy::LeastRequest,
    ] {
        table.subset.child_policy = policy;
        let start = allocations();
        let mut lb = SubsetLb::build(&table).unwrap();
        let before = allocations();
        assert!(before > start, "the counter sees the build's allocations");
        lookups(&mut lb, &requests, 500);
        assert_eq!(allocations() - before, 0, "{policy:?}");
    }
}

/// With weights that differ, a set makes its prefix sums at its first weighted pick (one
/// allocation, kept through later changes; a set that grows makes room as it grows); lookups
/// after that allocate nothing, also after a health change or a new host makes them again.
#[test]
fn lookups_over_uneven_weights_allocate_only_a_sets_first_sums() {
    let mut table = HostTable::default();
    for i in 0..1000u32 {
        let host = Host::new(format!("http://10.1.{}.{}", i / 250, i % 250))
            .with_label("zone", ["a", "b", "c"][i as usize % 3]);
        // A few heavy hosts per set: rejection sampling then often falls through to the sums,
        // so weighted and least request make them too.
        let weight = if i % 100 == 0 { 10_000 } else { 1 + i % 7 };
        table.hosts.push(Host { weight, ..host });
    }
    table.subset.fallback_policy = FallbackPolicy::AnyEndpoint;
    table.subset.selectors = vec![SubsetSelector::new(["zone"])];
    let requests: [&[(&str, &str)]; 3] = [&[("zone", "a")], &[("zone", "b")], &[("zone", "q")]];
    for policy in [
        LbPolicy::RoundRobin,
        LbPolicy::Weighted,
        LbPolicy::LeastRequest,
    ] {
        table.subset.child_policy = policy;
        let mut lb = SubsetLb::build(&table).unwrap();
        lookups(&mut lb, &requests, 300);
        lb.set_healthy("http://10.1.0.3", false).unwrap();
        // Sets and the table grow past their sums' room (in zone a, and the fallback's all).
        for i in 0..700 {
            let host = Host::new(format!("http://10.2.{}.{}", i / 250, i % 250));
            lb.add_host(Host {
                weight: 1 + i % 5,
                ..host.with_label("zone", "a")
            })
            .unwrap();
        }
        let before = allocations();
        lookups(&mut lb, &requests, 500);
        assert_eq!(allocations() - before, 0, "{policy:?}");
    }
}

/// `count` lookups cycling through `requests`, each with a retry on another host.
fn lookups(lb: &mut SubsetLb, requests: &[&[(&str, &str)]], count: usize) {
    for (n, pairs) in requests.iter().cycle().take(count).enumerate() {
        let mut md = lb.metadata();
        for (k, v) in *pairs {
            lb.set(&mut md, k, v);
        }
        let chosen = lb.select(&md, n as u64).unwrap();
        if let Some(retry) = lb.select_retry(&md, !(n as u64), chosen.host) {
            lb.release(retry.host);
        }
        lb.release(chosen.host);
    }
}
