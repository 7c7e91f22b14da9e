//! The in-process spend store used when no memcached is configured, so the daemon runs out of
//! the box. It only protects one daemon: replicas behind a load balancer each keep their own
//! records, which is why startup says so loudly.
//!
//! Unlike memcached it never evicts a live record: when full it answers "unavailable" (fail
//! closed) rather than forget a spend.

use std::{collections::HashMap, sync::Mutex};

use super::{Decision, Fault};

const SHARDS: usize = 16;

/// Spend key to expiry (Unix seconds).
type Shard = Mutex<HashMap<[u8; 32], u64>>;

#[derive(Debug)]
pub struct Embedded {
    shards: Box<[Shard]>,
    per_shard: usize,
}

impl Embedded {
    pub(crate) fn new(max_records: usize) -> Embedded {
        Embedded {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            per_shard: max_records.div_ceil(SHARDS).max(1),
        }
    }

    /// Records a spend that lives until `expires_at` (Unix seconds).
    pub(crate) fn spend(
        &self,
        key: &[u8; 32],
        now: u64,
        expires_at: u64,
    ) -> Result<Decision, Fault> {
        let shard = &self.shards[usize::from(key[0]) % SHARDS];
        let mut records = shard
            .lock()
            .map_err(|_| Fault::Server("embedded store poisoned".to_owned()))?;
        if records.get(key).is_some_and(|&until| until > now) {
            return Ok(Decision::Spent);
        }
        if records.len() >= self.per_shard {
            records.retain(|_, until| *until > now);
            if records.len() >= self.per_shard {
                return Err(Fault::Server("embedded store full".to_owned()));
            }
        }
        records.insert(*key, expires_at.max(now + 1));
        Ok(Decision::Fresh)
    }

    pub(crate) fn records(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.lock().map(|r| r.len()).unwrap_or(0))
            .sum()
    }
}

#[cfg(test)]
mod tests;
