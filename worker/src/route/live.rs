//! The isolate's routing state: one subset load balancer and when the daemon's table was last
//! checked.
//!
//! Requests interleave at every `await`, so the state is only borrowed between awaits, and a
//! pick remembers the load balancer it was made by: a host released or retried after a
//! rebuild refers to the old one and is left alone. A delta from the daemon changes the load
//! balancer in place, so picks made before it are released into it as usual.

use std::cell::{Cell, RefCell};
use std::time::Duration;

use edgewise::{
    HOST_DELTA_MEDIA_TYPE, HOST_TABLE_MEDIA_TYPE, HostDelta, HostId, Metadata, Origin,
    OutlierPolicy, OutlierVerdict, Outliers, RequestKeys, RouteAttribute, SubsetLb,
};
use worker::{Delay, Request, RequestInit, Response, console_error, console_log};

use super::Source;
use crate::daemon::Daemon;
use crate::failure::Failure;

struct Live {
    /// Built from the daemon's bytes in place ([`SubsetLb::decode`]) and brought up to date by
    /// its deltas ([`SubsetLb::apply`]), or built from the JSON var's table; the origin of a host is parsed when it is picked (a table change at 100k hosts
    /// would otherwise parse and copy 100k addresses for the few the isolate forwards to).
    lb: SubsetLb,
    /// ETag of the daemon's table this was built from, or brought to by deltas.
    etag: Option<String>,
    /// When the daemon was last asked (ms since the epoch).
    checked_at: u64,
    /// Tells load balancers apart (a pick is released only into the one it came from).
    epoch: u64,
    /// Hosts changed by deltas since the build.
    churn: usize,
    /// The route attributes' keys, resolved against `lb` at the first pick.
    keys: Option<RequestKeys>,
    /// Hosts failing to answer, some ejected from `lb`; handed on to the next load balancer.
    outliers: Outliers,
    /// The check (see `CHECKS`) whose table this is, or that last brought it a delta.
    check: u64,
}

thread_local! {
    static LIVE: RefCell<Option<Live>> = const { RefCell::new(None) };
    /// When a request began asking the daemon (ms since the epoch): others keep using the
    /// current table meanwhile. A time, not a flag: a request whose client went away may never
    /// be resumed to clear it, and a flag left set stopped every later check in the isolate.
    static CHECKING_SINCE: Cell<Option<u64>> = const { Cell::new(None) };
    /// Checks begun, counted: a table is installed only if no check begun later installed one
    /// (first loads run at once, and the slowest answer used to win).
    static CHECKS: Cell<u64> = const { Cell::new(0) };
    /// The last first load that failed, while no table is held: requests waiting on it, and
    /// those arriving for [`FIRST_LOAD_RETRY_MS`] after, answer with its reason at once. Each
    /// waiter used to start a check of its own in turn behind a daemon that did not answer,
    /// the k-th waiting k deadlines.
    static FIRST_LOAD_FAILED: RefCell<Option<FailedLoad>> = const { RefCell::new(None) };
    static RNG: Cell<u64> = const { Cell::new(0) };
    static EPOCHS: Cell<u64> = const { Cell::new(0) };
}

/// A chosen host. Dropping it ends the request for least-request accounting.
#[derive(Debug)]
pub(crate) struct Pick {
    /// Where to forward.
    pub(crate) origin: Origin,
    host: HostId,
    epoch: u64,
    metadata: Metadata,
}

impl Drop for Pick {
    fn drop(&mut self) {
        with_live(self.epoch, |live| live.lb.release(self.host));
    }
}

/// Makes sure a table is loaded and, for the daemon's, fresh enough.
pub(super) async fn ensure(source: &Source, outliers: OutlierPolicy) -> Result<(), Failure> {
    match source {
        Source::Static(table) => {
            if LIVE.with(|l| l.borrow().is_none()) {
                let lb = SubsetLb::build_validated(table)
                    .map_err(|e| Failure::Config(format!("host table rejected: {e}")))?;
                let outliers = Outliers::new(outliers);
                LIVE.with(|l| *l.borrow_mut() = Some(Live::new(lb, None, now_ms(), outliers)));
            }
            Ok(())
        }
        Source::Daemon {
            daemon,
            url,
            refresh,
        } => from_daemon(daemon, url, *refresh, outliers).await,
    }
}

/// Checks the daemon's table when due, one check at a time per isolate: meanwhile the other
/// requests route by the table held or, before the first, wait for it (each fetching and
/// decoding a table of 100k hosts, 5 MiB and ~5 ms of CPU, at an isolate's start added up).
async fn from_daemon(
    daemon: &Daemon,
    url: &str,
    refresh: Duration,
    outliers: OutlierPolicy,
) -> Result<(), Failure> {
    // A check outlives its deadline only if it was abandoned.
    let deadline = 2 * daemon.timeout().as_millis() as u64;
    let checking = |now: u64| {
        CHECKING_SINCE
            .with(Cell::get)
            .is_some_and(|t| now.saturating_sub(t) < deadline)
    };
    let mut now = now_ms();
    let (loaded, due, etag) = LIVE.with(|l| match &*l.borrow() {
        Some(live) => (
            true,
            now.saturating_sub(live.checked_at) >= refresh.as_millis() as u64,
            live.etag.clone(),
        ),
        None => (false, true, None),
    });
    if !due || (loaded && checking(now)) {
        return Ok(());
    }
    if !loaded {
        now = first_load_turn(now, checking).await?;
        if LIVE.with(|l| l.borrow().is_some()) {
            return Ok(());
        }
    }
    CHECKING_SINCE.with(|c| c.set(Some(now)));
    let check = CHECKS.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let fetched = fetch(daemon, url, etag.as_deref()).await;
    CHECKING_SINCE.with(|c| c.set(None));
    settle(fetched, now, outliers, check)
}

/// Before an isolate's first table: waits while another request checks, and returns the time
/// when this one may check itself (if the other loaded a table, the caller finds it). The
/// failure of the check awaited, or of one just before, is the answer: no waiter tries again
/// behind it.
async fn first_load_turn(mut now: u64, checking: impl Fn(u64) -> bool) -> Result<u64, Failure> {
    loop {
        if let Some(why) = first_load_failed(now) {
            return Err(Failure::HostsUnavailable(why));
        }
        if !checking(now) || LIVE.with(|l| l.borrow().is_some()) {
            return Ok(now);
        }
        Delay::from(FIRST_LOAD_POLL).await;
        now = now_ms();
    }
}

/// How often a request waiting for an isolate's first table looks for it.
const FIRST_LOAD_POLL: Duration = Duration::from_millis(5);

/// How long a failed first load answers for the daemon before a request tries again.
const FIRST_LOAD_RETRY_MS: u64 = 1000;

/// A first load that failed: when it ended, why.
struct FailedLoad {
    at: u64,
    why: String,
}

/// Why the first load failed, if it failed within the retry time before `now`.
fn first_load_failed(now: u64) -> Option<String> {
    FIRST_LOAD_FAILED.with(|f| {
        let failed = f.borrow();
        let failed = failed.as_ref()?;
        (now.saturating_sub(failed.at) < FIRST_LOAD_RETRY_MS).then(|| failed.why.clone())
    })
}

/// What the daemon said about the table.
enum Fetched {
    NotModified,
    Table {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
    /// The changes from the table of the ETag the worker sent.
    Delta {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
}

/// A fetched answer, read.
enum Update {
    None,
    Table(Box<SubsetLb>, Option<String>),
    Delta(HostDelta, Option<String>),
}

async fn fetch(daemon: &Daemon, url: &str, etag: Option<&str>) -> Result<Fetched, String> {
    let headers = daemon.headers()?;
    // The delta first: `GET /v1/hosts` answers a worker that names an earlier table in
    // `If-None-Match` with its changes when the daemon has them.
    let accept = format!("{HOST_DELTA_MEDIA_TYPE}, {HOST_TABLE_MEDIA_TYPE}");
    headers.set("accept", &accept).map_err(|e| e.to_string())?;
    if let Some(etag) = etag {
        headers
            .set("if-none-match", etag)
            .map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_headers(headers);
    let request = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    daemon.call(request, answer).await
}

/// What a response of `GET /v1/hosts` says, body read.
async fn answer(mut response: Response) -> Result<Fetched, String> {
    match response.status_code() {
        304 => Ok(Fetched::NotModified),
        200 => {
            let header = |name| response.headers().get(name).ok().flatten();
            let (etag, kind) = (header("etag"), header("content-type"));
            let bytes = response.bytes().await.map_err(|e| e.to_string())?;
            Ok(
                match kind.is_some_and(|t| t.starts_with(HOST_DELTA_MEDIA_TYPE)) {
                    true => Fetched::Delta { bytes, etag },
                    false => Fetched::Table { bytes, etag },
                },
            )
        }
        status => Err(format!(
            "daemon answered {status}: {}",
            response.text().await.unwrap_or_default()
        )),
    }
}

/// Installs a fetched table. Errors keep the current table (checked again after the refresh
/// interval, not on every request); they fail requests only while there is no table at all.
fn settle(
    fetched: Result<Fetched, String>,
    now: u64,
    policy: OutlierPolicy,
    check: u64,
) -> Result<(), Failure> {
    let fetched = fetched.map(held_as_not_modified).and_then(read);
    LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let failed = match (fetched, slot.as_mut()) {
            // A check begun later has answered already: its table stays.
            (Ok(Update::Table(..) | Update::Delta(..)), Some(live)) if live.check > check => {
                return Ok(());
            }
            (Ok(Update::None), Some(live)) => {
                // A check begun before another that answered already moves nothing back.
                live.checked_at = live.checked_at.max(now);
                return Ok(());
            }
            (Ok(Update::Delta(delta, etag)), Some(live)) => match live.apply(&delta, etag) {
                Ok(()) => {
                    (live.checked_at, live.check) = (now, check);
                    return Ok(());
                }
                Err(why) => why,
            },
            (Ok(Update::Table(lb, etag)), _) => {
                console_log!(
                    "edgewise: routing by host table version {} ({} hosts, {} subsets)",
                    lb.version(),
                    lb.len(),
                    lb.stats().subsets_active
                );
                let outliers = match slot.take() {
                    Some(old) => {
                        console_log!(
                            "edgewise: the previous table's routing: {:?}",
                            old.lb.stats()
                        );
                        old.outliers
                    }
                    None => Outliers::new(policy),
                };
                let mut live = Live::new(*lb, etag, now, outliers);
                live.check = check;
                live.outliers.rebuilt(&mut live.lb);
                *slot = Some(live);
                return Ok(());
            }
            (Ok(Update::None), None) => "the daemon answered 304 to a first request".to_owned(),
            (Ok(Update::Delta(..)), None) => {
                "the daemon answered a delta to a first request".to_owned()
            }
            (Err(why), _) => why,
        };
        match slot.as_mut() {
            Some(live) => {
                console_error!("edgewise: {failed}; the current host table keeps serving");
                live.checked_at = now;
                Ok(())
            }
            None => {
                let (at, why) = (now_ms(), failed.clone());
                FIRST_LOAD_FAILED.with(|f| *f.borrow_mut() = Some(FailedLoad { at, why }));
                Err(Failure::HostsUnavailable(failed))
            }
        }
    })
}

/// The table held, sent whole (a proxy dropped `If-None-Match`), as the 304 it stands for: not
/// decoded and indexed only to be dropped. Only its ETag says so: a version can name other
/// content than the held one's (a daemon refuses that only against the table it serves at the
/// time).
fn held_as_not_modified(fetched: Fetched) -> Fetched {
    let held = |etag: &Option<String>| {
        LIVE.with(|l| match &*l.borrow() {
            Some(live) => live.etag.is_some() && live.etag == *etag && !live.stale(),
            None => false,
        })
    };
    match fetched {
        Fetched::Table { etag, .. } if held(&etag) => Fetched::NotModified,
        other => other,
    }
}

/// Decodes a fetched answer (the delta only as far as its own rules go: whether it fits the
/// table held is [`Live::apply`]'s business).
fn read(fetched: Fetched) -> Result<Update, String> {
    match fetched {
        Fetched::NotModified => Ok(Update::None),
        Fetched::Table { bytes, etag } => SubsetLb::decode(&bytes)
            .map(|lb| Update::Table(Box::new(lb), etag))
            .map_err(|e| format!("host table from the daemon rejected: {e}")),
        Fetched::Delta { bytes, etag } => HostDelta::decode(&bytes)
            .map(|delta| Update::Delta(delta, etag))
            .map_err(|e| {
                // Asked for again by the table's old ETag, it would be refused again.
                forget_etag();
                format!("host delta from the daemon rejected: {e}")
            }),
    }
}

/// The next check asks for the whole table.
fn forget_etag() {
    LIVE.with(|l| {
        if let Some(live) = l.borrow_mut().as_mut() {
            live.etag = None;
        }
    });
}

/// Picks a host for the request's metadata: the value of each attribute of `attributes` it
/// has, by the attribute's position.
pub(super) fn pick(
    attributes: &[RouteAttribute],
    values: &[(usize, String)],
) -> Result<Pick, Failure> {
    LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let live = slot
            .as_mut()
            .ok_or_else(|| Failure::HostsUnavailable("no host table".to_owned()))?;
        // The clock is a call out of Wasm: asked only while hosts are out.
        if live.outliers.ejected() > 0 {
            live.outliers.restore_due(&mut live.lb, now_ms());
        }
        let metadata = live.metadata(attributes, values);
        let selection = live
            .lb
            .select(&metadata, entropy())
            .ok_or(Failure::NoHost)?;
        live.pick(selection.host, metadata)
            .ok_or_else(|| Failure::Internal("picked a host without an origin".to_owned()))
    })
}

/// Another host of `failed`'s subset, if the table is still the one it was picked from.
pub(super) fn retry(failed: &Pick) -> Option<Pick> {
    let again = LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let live = slot.as_mut().filter(|live| live.epoch == failed.epoch)?;
        let selection = live
            .lb
            .select_retry(&failed.metadata, entropy(), failed.host)?;
        live.pick(selection.host, failed.metadata)
    })?;
    // A delta applied while the request was out may have moved the failed host to another
    // slot (new labels: removed, added back), which the retry does not exclude. Dropped
    // outside the borrow above: releasing it borrows the live state.
    (again.origin != failed.origin).then_some(again)
}

/// Counts `pick`'s host's answer, or its failure to answer: see [`Outliers`]. Left alone when
/// the table was rebuilt since the pick.
pub(super) fn report(pick: &Pick, reached: bool) {
    with_live(pick.epoch, |live| {
        if reached && live.outliers.failing() == 0 {
            return;
        }
        let Some(address) = live.lb.address(pick.host) else {
            return;
        };
        if reached {
            live.outliers.success(address);
            return;
        }
        let (address, now) = (address.to_owned(), now_ms());
        match live.outliers.failure(&mut live.lb, &address, now) {
            OutlierVerdict::Ejected { until } => console_error!(
                "edgewise: {address} ejected for {} ms after {} failures in a row ({} of the hosts out)",
                until.saturating_sub(now),
                live.outliers.policy().consecutive_failures,
                live.outliers.ejected()
            ),
            // Once per host and run of failures, not once per request of a zone gone dark.
            OutlierVerdict::AtLimit { failures }
                if failures == live.outliers.policy().consecutive_failures =>
            {
                console_error!(
                    "edgewise: {address} not ejected: {} hosts are out already, the most allowed",
                    live.outliers.ejected()
                )
            }
            _ => {}
        }
    });
}

impl Live {
    fn new(lb: SubsetLb, etag: Option<String>, checked_at: u64, outliers: Outliers) -> Live {
        let epoch = EPOCHS.with(|e| {
            e.set(e.get() + 1);
            e.get()
        });
        Live {
            lb,
            etag,
            checked_at,
            epoch,
            churn: 0,
            keys: None,
            outliers,
            check: 0,
        }
    }

    /// Whether the next table from the daemon replaces this one even when it is the one held:
    /// deltas have changed about half the hosts, and what removed hosts leave in the index (the
    /// values no host has any more, such as unique pod names) goes only with a build. Small
    /// tables leave little behind: rebuilt for churn only past 64 changes.
    fn stale(&self) -> bool {
        self.churn > (self.lb.len() / 2).max(64)
    }

    /// Applies a delta from the daemon in place; on error the load balancer is unchanged and
    /// the next check asks for the whole table.
    fn apply(&mut self, delta: &HostDelta, etag: Option<String>) -> Result<(), String> {
        if delta.from != delta.version && delta.version == self.lb.version() {
            // Two checks crossed (a first load and a refresh) and both got it: applied once.
            self.etag = etag;
            return Ok(());
        }
        let applied = self.lb.apply(delta).map_err(|e| {
            self.etag = None;
            format!("host delta from the daemon rejected: {e}")
        })?;
        self.outliers.applied(&mut self.lb, delta);
        self.churn += delta.changes();
        self.etag = if self.stale() { None } else { etag };
        console_log!(
            "edgewise: routing by host table version {} (a delta: {applied:?}; {} hosts)",
            self.lb.version(),
            self.lb.len()
        );
        Ok(())
    }

    /// The metadata of a request's attribute values, by keys resolved once per load balancer
    /// (again after a delta brings keys; cheap otherwise).
    fn metadata(&mut self, attributes: &[RouteAttribute], values: &[(usize, String)]) -> Metadata {
        let lb = &self.lb;
        let names = || attributes.iter().map(|a| a.key.as_str());
        let keys = self.keys.get_or_insert_with(|| lb.request_keys(names()));
        // Positions name the attributes the keys were resolved from: one list per isolate.
        debug_assert!(keys.names().eq(names()));
        lb.resolve(keys);
        let mut md = lb.metadata();
        lb.set_values(&mut md, keys, values.iter().map(|(i, v)| (*i, v.as_str())));
        md
    }

    fn pick(&self, host: HostId, metadata: Metadata) -> Option<Pick> {
        // Validated with the table: `Origin::check` accepts exactly what `parse` does.
        let origin = Origin::parse(self.lb.address(host)?).ok()?;
        Some(Pick {
            origin,
            host,
            epoch: self.epoch,
            metadata,
        })
    }
}

/// Runs `f` on the live state if it is still of `epoch`.
fn with_live(epoch: u64, f: impl FnOnce(&mut Live)) {
    LIVE.with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut()
            && let Some(live) = slot.as_mut().filter(|live| live.epoch == epoch)
        {
            f(live);
        }
    });
}

/// xorshift64*, seeded once per isolate from the runtime's randomness.
fn entropy() -> u64 {
    RNG.with(|rng| {
        let mut x = rng.get();
        if x == 0 {
            x = (worker::js_sys::Math::random() * (u64::MAX as f64)) as u64 | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        rng.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    })
}

fn now_ms() -> u64 {
    worker::Date::now().as_millis()
}
