//! Passive health checking, as Envoy's outlier detection does it: a host that fails to answer
//! several requests in a row is ejected (marked unhealthy in the subset load balancer) for a
//! while, so that later requests stop paying for a connection to it before their retry.
//!
//! Without it, round robin over a subset of a dead host and a live one sends every request to
//! the dead host first (the retry takes the next turn); on Cloudflare a connection that times
//! out answers 522 after ~15 s, so every request would wait that long.
//!
//! Ejection follows Envoy's rules: after [`OutlierPolicy::consecutive_failures`] failures with no
//! success between; for the base ejection time times the number of times the host was ejected,
//! capped at the maximum; never more than [`OutlierPolicy::max_ejected_percent`] of the hosts at
//! once (but one always may be). An ejected host comes back when its time is up, with the health
//! its table gives it: the table's word on health (a daemon's health checks) and the edge's
//! are both needed for a host to serve, and neither overrides the other.
//!
//! Time is the caller's: milliseconds on any clock that does not go back.

use alloc::string::String;

use foldhash::fast::FixedState;
use hashbrown::HashMap;

use crate::{HostDelta, SubsetLb};

#[cfg(test)]
mod tests;

/// When hosts are ejected and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlierPolicy {
    /// Failures in a row that eject a host; 0 turns ejection off.
    pub consecutive_failures: u32,
    /// How long a first ejection lasts; the n-th lasts n times as long.
    pub base_ejection_ms: u64,
    /// The longest an ejection lasts (never less than the base time). A host that stays in
    /// service this long afterwards starts again from the base time.
    pub max_ejection_ms: u64,
    /// At most this percentage of the table's hosts is ejected at once (at least one host may
    /// always be): past it, a whole zone gone dark is left to retries rather than emptying the
    /// table.
    pub max_ejected_percent: u8,
}

impl Default for OutlierPolicy {
    /// Envoy's defaults, except three failures in a row where Envoy waits for five: the
    /// failures counted here are connections that did not happen, not 5xx answers.
    fn default() -> OutlierPolicy {
        OutlierPolicy {
            consecutive_failures: 3,
            base_ejection_ms: 30_000,
            max_ejection_ms: 300_000,
            max_ejected_percent: 10,
        }
    }
}

/// What [`Outliers::failure`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutlierVerdict {
    /// Counted; not (yet) ejected.
    Counted {
        /// Failures in a row so far.
        failures: u32,
    },
    /// Ejected until `until`.
    Ejected {
        /// When the host comes back, on the caller's clock.
        until: u64,
    },
    /// Would be ejected, but as many hosts as the policy allows are already out.
    AtLimit {
        /// Failures in a row so far ([`OutlierPolicy::consecutive_failures`] the first time).
        failures: u32,
    },
    /// Already ejected, or unhealthy by its table, or ejection is off, or the host is not in
    /// the table.
    Ignored,
}

/// The hosts with failures, by address (addresses outlive a rebuild of the load balancer;
/// host ids do not).
#[derive(Debug)]
pub struct Outliers {
    policy: OutlierPolicy,
    hosts: HashMap<String, Record, FixedState>,
    ejected: usize,
    /// Hosts with failures counted toward an ejection: while none, a success has nothing to
    /// reset.
    failing: usize,
    /// The earliest end of an ejection under way (`u64::MAX` if none): a request's check for
    /// hosts to bring back is one comparison until then.
    next_return: u64,
}

#[derive(Debug, Clone, Copy)]
struct Record {
    failures: u32,
    /// Ejections so far, counted since the host last stayed in service `max_ejection_ms`.
    times: u32,
    /// When it came back from its last ejection.
    returned_at: u64,
    ejection: Option<Ejection>,
}

impl Record {
    /// Takes a record being dropped out of the counts of hosts ejected and failing.
    fn uncount(&self, ejected: &mut usize, failing: &mut usize) {
        *ejected -= usize::from(self.ejection.is_some());
        *failing -= usize::from(self.failures > 0);
    }
}

#[derive(Debug, Clone, Copy)]
struct Ejection {
    until: u64,
    /// The health its table gave the host, restored when the ejection ends.
    table_healthy: bool,
}

impl Outliers {
    /// No host counted yet.
    pub fn new(policy: OutlierPolicy) -> Outliers {
        Outliers {
            policy,
            hosts: HashMap::default(),
            ejected: 0,
            failing: 0,
            next_return: u64::MAX,
        }
    }

    /// The rules it ejects by.
    pub fn policy(&self) -> &OutlierPolicy {
        &self.policy
    }

    /// Hosts ejected now.
    pub fn ejected(&self) -> usize {
        self.ejected
    }

    /// Hosts with failures in a row counted (not ejected): while none, a success has
    /// nothing to do, and a caller need not even look up its host's address.
    pub fn failing(&self) -> usize {
        self.failing
    }

    /// Whether the host with `address` is ejected now.
    pub fn is_ejected(&self, address: &str) -> bool {
        self.hosts
            .get(address)
            .is_some_and(|r| r.ejection.is_some())
    }

    /// The host with `address` answered: its failures in a row start again from zero. One
    /// branch while no host is [`failing`](Outliers::failing).
    #[inline]
    pub fn success(&mut self, address: &str) {
        if self.failing == 0 {
            return;
        }
        let Some(record) = self.hosts.get_mut(address) else {
            return;
        };
        if record.failures > 0 {
            record.failures = 0;
            self.failing -= 1;
        }
        // Its ejections are remembered (each lasts longer) until it stays in service long
        // enough (see `failure`); with none, it is forgotten.
        if record.times == 0 && record.ejection.is_none() {
            self.hosts.remove(address);
        }
    }

    /// The host with `address` could not be reached: counted, and ejected from `lb` when that
    /// makes [`OutlierPolicy::consecutive_failures`] in a row. A host its table marks
    /// unhealthy is not counted: it is picked only in a panic (too few hosts healthy), where
    /// ejecting it would change nothing but use up the hosts that may be ejected.
    pub fn failure(&mut self, lb: &mut SubsetLb, address: &str, now: u64) -> OutlierVerdict {
        let Some(id) = lb.host_id(address) else {
            return OutlierVerdict::Ignored;
        };
        if self.policy.consecutive_failures == 0 || lb.is_healthy(id) != Some(true) {
            return OutlierVerdict::Ignored;
        }
        // As Envoy: the cap never shortens the base time.
        let max = self
            .policy
            .max_ejection_ms
            .max(self.policy.base_ejection_ms);
        let full = self.ejected >= self.limit(lb.len());
        let record = self.hosts.entry_ref(address).or_insert(Record {
            failures: 0,
            times: 0,
            returned_at: 0,
            ejection: None,
        });
        if record.ejection.is_some() {
            // Requests sent before the ejection, failing after it.
            return OutlierVerdict::Ignored;
        }
        if record.times > 0 && now.saturating_sub(record.returned_at) >= max {
            record.times = 0;
        }
        self.failing += usize::from(record.failures == 0);
        record.failures = record.failures.saturating_add(1);
        if record.failures < self.policy.consecutive_failures {
            return OutlierVerdict::Counted {
                failures: record.failures,
            };
        }
        if full {
            return OutlierVerdict::AtLimit {
                failures: record.failures,
            };
        }
        record.times = record.times.saturating_add(1);
        let length = self
            .policy
            .base_ejection_ms
            .saturating_mul(u64::from(record.times))
            .min(max);
        let until = now.saturating_add(length);
        record.ejection = Some(Ejection {
            until,
            table_healthy: true,
        });
        record.failures = 0;
        self.failing -= 1;
        self.ejected += 1;
        self.next_return = self.next_return.min(until);
        // The host is in the table (found above): marking it cannot fail.
        let _ = lb.set_healthy(address, false);
        OutlierVerdict::Ejected { until }
    }

    /// Brings back the hosts whose ejection is over at `now`, with their table's health; how
    /// many. One comparison when none is due.
    #[inline]
    pub fn restore_due(&mut self, lb: &mut SubsetLb, now: u64) -> usize {
        if now < self.next_return {
            return 0;
        }
        self.restore_due_slow(lb, now)
    }

    #[cold]
    fn restore_due_slow(&mut self, lb: &mut SubsetLb, now: u64) -> usize {
        let mut restored = 0;
        let mut next = u64::MAX;
        for (address, record) in &mut self.hosts {
            let Some(ejection) = record.ejection else {
                continue;
            };
            if ejection.until > now {
                next = next.min(ejection.until);
                continue;
            }
            record.ejection = None;
            record.returned_at = now;
            // Gone from the table since: nothing to restore.
            let _ = lb.set_healthy(address, ejection.table_healthy);
            restored += 1;
        }
        self.ejected -= restored;
        self.next_return = next;
        restored
    }

    /// `delta` was applied to `lb`: removed hosts are forgotten; a changed host that is ejected
    /// takes its new health from the delta for when it comes back, and stays out until then.
    pub fn applied(&mut self, lb: &mut SubsetLb, delta: &HostDelta) {
        if self.hosts.is_empty() {
            return;
        }
        for address in &delta.removed {
            self.forget(address);
        }
        for host in &delta.upserts {
            if let Some(ejection) = self
                .hosts
                .get_mut(host.address.as_str())
                .and_then(|r| r.ejection.as_mut())
            {
                ejection.table_healthy = host.healthy;
                let _ = lb.set_healthy(&host.address, false);
            }
        }
    }

    /// `lb` replaced the load balancer the hosts were ejected from: hosts gone from the table
    /// are forgotten, and those ejected are ejected from `lb` too until their time is up.
    pub fn rebuilt(&mut self, lb: &mut SubsetLb) {
        let (ejected, failing) = (&mut self.ejected, &mut self.failing);
        self.hosts.retain(|address, record| {
            let Some(id) = lb.host_id(address) else {
                record.uncount(ejected, failing);
                return false;
            };
            if let Some(ejection) = record.ejection.as_mut() {
                ejection.table_healthy = lb.is_healthy(id).unwrap_or(false);
                let _ = lb.set_healthy(address, false);
            }
            true
        });
    }

    fn forget(&mut self, address: &str) {
        if let Some(record) = self.hosts.remove(address) {
            record.uncount(&mut self.ejected, &mut self.failing);
        }
    }

    /// Most hosts ejected at once from a table of `hosts`.
    fn limit(&self, hosts: usize) -> usize {
        (hosts * usize::from(self.policy.max_ejected_percent.min(100)) / 100).max(1)
    }
}
