//! Spend-once records for Privacy Pass tokens.
//!
//! A redemption is one atomic set-if-absent of the token's spend key: the first caller gets
//! `fresh`, every later one `spent`. Anything that prevents a decision -- a timeout, a reset
//! connection, a full or failing server -- is `unavailable`, which the worker turns into a 503:
//! the cache fails closed. Failing open is an operator's explicit choice, logged and counted,
//! and covers transient I/O faults only ([`Fault::transient`]).

mod embedded;
mod memcached;

#[cfg(test)]
mod tests;

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;

pub use self::{embedded::Embedded, memcached::Memcached};
use crate::{
    config::{TokensConfig, WorkspaceSettings},
    metrics::{Counter, Exposition, Histogram},
};

/// The answer to a redemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// First spend: accept the token.
    Fresh,
    /// Spent before: refuse it.
    Spent,
    /// No decision could be made: refuse it (unless failing open).
    Unavailable,
}

/// A decision a backend reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    Fresh,
    Spent,
}

/// Why a backend reached no decision.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fault {
    #[error("no reply before the deadline")]
    Timeout,
    #[error("request queue full")]
    Overloaded,
    /// Connecting, writing or reading failed (refused, reset, closed): transient.
    #[error("connection failed: {0}")]
    Connection(String),
    /// A reply that cannot be trusted (malformed, out of step, too many): the connection is
    /// dropped.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The store refused (memcached's `SERVER_ERROR`, the embedded store full).
    #[error("{0}")]
    Server(String),
    /// The issuer key expires later than a record may live (`max_ttl_secs`): a record kept
    /// the longest it may would die before the key, and its token could be spent again.
    #[error("the issuer key expires after tokens.max_ttl_secs: spend records would die first")]
    KeyOutlivesRecords,
}

impl Fault {
    /// Whether this is a transient I/O fault (a timeout, a refused or reset connection), the
    /// only kind `fail_open` may admit a token on. A full store, an overloaded queue, a reply
    /// that cannot be trusted or a record that could not outlive its key are refusals.
    pub(crate) fn transient(&self) -> bool {
        matches!(self, Fault::Timeout | Fault::Connection(_))
    }
}

/// One token to spend.
#[derive(Debug, Clone, Copy)]
pub struct Spend {
    /// The double-spend key: a digest of token type, issuer key id and nonce.
    pub key: [u8; 32],
    /// When the issuer key expires (Unix seconds); the record must outlive every token it
    /// signed. `None` uses the configured default.
    pub not_after: Option<u64>,
}

/// The configured backend with the fail policy and metrics around it.
#[derive(Debug)]
pub struct TokenCache {
    backend: Backend,
    fail_open: bool,
    default_ttl: u64,
    max_ttl: u64,
    counters: OutcomeCounters,
}

#[derive(Debug)]
enum Backend {
    Memcached(Memcached),
    Embedded(Embedded),
}

#[derive(Debug, Default)]
struct OutcomeCounters {
    fresh: Counter,
    spent: Counter,
    unavailable: Counter,
    failed_open: Counter,
    latency: Histogram,
}

/// Records shorter-lived than this are not worth a round trip to refuse later.
const MIN_TTL: u64 = 60;

/// How much later than the daemon's clock (and memcached's) the edge's may run: a record
/// outlives its key's expiry by this, so a token the worker still accepts in the key's last
/// second (`now <= not_after` there) finds its record.
const CLOCK_SKEW_SECS: u64 = 300;

impl TokenCache {
    /// Starts the configured backend (memcached if servers are listed, else the embedded store)
    /// and says which one at warn level when it is not production-grade.
    pub fn start(
        config: &TokensConfig,
        workspace: &WorkspaceSettings,
    ) -> anyhow::Result<TokenCache> {
        let backend = if config.memcached.servers.is_empty() {
            tracing::warn!(
                "token cache: no memcached configured, using the EMBEDDED in-process store; \
                 tokens are spend-once only within this daemon (set [tokens.memcached] servers)"
            );
            Backend::Embedded(Embedded::new(config.embedded_max_records))
        } else {
            let memcached = Memcached::start(&config.memcached, &config.key_prefix, workspace)?;
            tracing::info!(backend = %memcached.describe(), "token cache");
            Backend::Memcached(memcached)
        };
        if config.fail_open {
            tracing::warn!(
                "token cache: FAIL-OPEN is on: when the store cannot decide, tokens are accepted \
                 and may be spent more than once"
            );
        }
        Ok(TokenCache {
            backend,
            fail_open: config.fail_open,
            default_ttl: config.default_ttl_secs,
            max_ttl: config.max_ttl_secs.max(MIN_TTL),
            counters: OutcomeCounters::default(),
        })
    }

    /// Spends `spend` once; see the module docs for the policy.
    pub async fn redeem(&self, spend: &Spend) -> Outcome {
        let started = Instant::now();
        let now = unix_now();
        let decision = match (self.expiry(now, spend.not_after), &self.backend) {
            (Err(fault), _) => Err(fault),
            (Ok(at), Backend::Memcached(m)) => m.spend(&spend.key, now, at).await,
            (Ok(at), Backend::Embedded(e)) => e.spend(&spend.key, now, at),
        };
        let outcome = self.judge(decision);
        self.counters.latency.observe(started.elapsed());
        outcome
    }

    /// Until when the record of a token of a key expiring at `not_after` lives: past the
    /// key's expiry by the clock skew allowed; `default_ttl` for a key without one (a caller
    /// other than the worker, which requires expiries); refused for a key that would outlive
    /// the longest-lived record.
    fn expiry(&self, now: u64, not_after: Option<u64>) -> Result<u64, Fault> {
        let wanted = match not_after {
            Some(t) if t > now.saturating_add(self.max_ttl) => {
                return Err(Fault::KeyOutlivesRecords);
            }
            Some(t) => t.saturating_add(CLOCK_SKEW_SECS + 1),
            None => now.saturating_add(self.default_ttl.min(self.max_ttl)),
        };
        Ok(wanted.max(now + MIN_TTL))
    }

    fn judge(&self, decision: Result<Decision, Fault>) -> Outcome {
        let c = &self.counters;
        match decision {
            Ok(Decision::Fresh) => {
                c.fresh.inc();
                Outcome::Fresh
            }
            Ok(Decision::Spent) => {
                c.spent.inc();
                Outcome::Spent
            }
            Err(fault) if self.fail_open && fault.transient() => {
                c.failed_open.inc();
                tracing::warn!(%fault, "token cache undecided: accepting the token (fail-open)");
                Outcome::Fresh
            }
            Err(fault) => {
                c.unavailable.inc();
                tracing::warn!(%fault, "token cache undecided: refusing the token");
                Outcome::Unavailable
            }
        }
    }

    /// Whether redemptions can be decided now; the detail says by what, or why not.
    pub async fn readiness(&self) -> Result<String, String> {
        match &self.backend {
            Backend::Memcached(m) => m.readiness().await,
            Backend::Embedded(e) => Ok(format!("embedded store, {} records", e.records())),
        }
    }

    /// Writes the token families (and the backend's) to `page`.
    pub fn render(&self, page: &mut Exposition) {
        let c = &self.counters;
        let name = "edgewise_token_redemptions_total";
        page.family(name, "counter", "Token redemptions by outcome.");
        for (outcome, counter) in [
            ("fresh", &c.fresh),
            ("spent", &c.spent),
            ("unavailable", &c.unavailable),
            ("failed_open", &c.failed_open),
        ] {
            page.sample(name, &[("outcome", outcome)], counter.get());
        }
        let name = "edgewise_token_redeem_duration_seconds";
        page.family(name, "histogram", "Time to decide a redemption.");
        page.histogram(name, &[], &c.latency);
        page.gauge(
            "edgewise_token_fail_open",
            "1 if undecided redemptions are accepted (fail-open).",
            u8::from(self.fail_open),
        );
        match &self.backend {
            Backend::Memcached(m) => m.render(page),
            Backend::Embedded(e) => page.gauge(
                "edgewise_token_embedded_records",
                "Spend records held by the embedded store.",
                e.records(),
            ),
        }
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
