//! The isolate's routing state: one subset load balancer and when the daemon's table was last
//! checked.
//!
//! Requests interleave at every `await`, so the state is only borrowed between awaits, and a
//! pick remembers the version it was made under: a host released or retried after a rebuild
//! refers to the old table and is left alone.

use std::cell::{Cell, RefCell};

use edgewise::{HostId, Metadata, Origin, SubsetLb};
use worker::{Request, RequestInit, console_error, console_log};

use super::Source;
use crate::failure::Failure;

struct Live {
    /// Built from the daemon's bytes in place ([`SubsetLb::decode`]), or from the JSON var's
    /// table; the origin of a host is parsed when it is picked (a table change at 100k hosts
    /// would otherwise parse and copy 100k addresses for the few the isolate forwards to).
    lb: SubsetLb,
    /// ETag of the daemon's answer this was built from.
    etag: Option<String>,
    /// When the daemon was last asked (ms since the epoch).
    checked_at: u64,
}

thread_local! {
    static LIVE: RefCell<Option<Live>> = const { RefCell::new(None) };
    /// A request is already asking the daemon: others keep using the current table.
    static CHECKING: Cell<bool> = const { Cell::new(false) };
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A chosen host. Dropping it ends the request for least-request accounting.
#[derive(Debug)]
pub(crate) struct Pick {
    /// Where to forward.
    pub(crate) origin: Origin,
    host: HostId,
    version: u64,
    metadata: Metadata,
}

impl Drop for Pick {
    fn drop(&mut self) {
        with_live(self.version, |live| live.lb.release(self.host));
    }
}

/// Makes sure a table is loaded and, for the daemon's, fresh enough.
pub(super) async fn ensure(source: &Source) -> Result<(), Failure> {
    match source {
        Source::Static(table) => {
            if LIVE.with(|l| l.borrow().is_none()) {
                let lb = SubsetLb::build_validated(table)
                    .map_err(|e| Failure::Config(format!("host table rejected: {e}")))?;
                LIVE.with(|l| *l.borrow_mut() = Some(Live::new(lb, None, now_ms())));
            }
            Ok(())
        }
        Source::Daemon {
            daemon,
            url,
            refresh,
        } => {
            let now = now_ms();
            let (loaded, due, etag) = LIVE.with(|l| match &*l.borrow() {
                Some(live) => (
                    true,
                    now.saturating_sub(live.checked_at) >= refresh.as_millis() as u64,
                    live.etag.clone(),
                ),
                None => (false, true, None),
            });
            if !due || (loaded && CHECKING.with(Cell::get)) {
                return Ok(());
            }
            CHECKING.with(|c| c.set(true));
            let fetched = fetch(daemon, url, etag.as_deref()).await;
            CHECKING.with(|c| c.set(false));
            settle(fetched, now)
        }
    }
}

/// What the daemon said about the table.
enum Fetched {
    NotModified,
    Table {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
}

async fn fetch(
    daemon: &crate::daemon::Daemon,
    url: &str,
    etag: Option<&str>,
) -> Result<Fetched, String> {
    let headers = daemon.headers()?;
    if let Some(etag) = etag {
        headers
            .set("if-none-match", etag)
            .map_err(|e| e.to_string())?;
    }
    let mut init = RequestInit::new();
    init.with_headers(headers);
    let request = Request::new_with_init(url, &init).map_err(|e| e.to_string())?;
    let mut response = daemon.send(request).await?;
    match response.status_code() {
        304 => Ok(Fetched::NotModified),
        200 => Ok(Fetched::Table {
            etag: response.headers().get("etag").ok().flatten(),
            bytes: response.bytes().await.map_err(|e| e.to_string())?,
        }),
        status => Err(format!(
            "daemon answered {status}: {}",
            response.text().await.unwrap_or_default()
        )),
    }
}

/// Installs a fetched table. Errors keep the current table (checked again after the refresh
/// interval, not on every request); they fail requests only while there is no table at all.
fn settle(fetched: Result<Fetched, String>, now: u64) -> Result<(), Failure> {
    let fetched = fetched.and_then(|fetched| match fetched {
        Fetched::NotModified => Ok(None),
        Fetched::Table { bytes, etag } => SubsetLb::decode(&bytes)
            .map(|lb| Some((lb, etag)))
            .map_err(|e| format!("host table from the daemon rejected: {e}")),
    });
    LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let failed = match (fetched, slot.as_mut()) {
            (Ok(None), Some(live)) => {
                live.checked_at = now;
                return Ok(());
            }
            (Ok(Some((lb, etag))), Some(live)) if live.lb.version() == lb.version() => {
                live.etag = etag;
                live.checked_at = now;
                return Ok(());
            }
            (Ok(Some((lb, etag))), _) => {
                console_log!(
                    "edgewise: routing by host table version {} ({} hosts, {} subsets)",
                    lb.version(),
                    lb.len(),
                    lb.stats().subsets_active
                );
                if let Some(old) = slot.replace(Live::new(lb, etag, now)) {
                    console_log!(
                        "edgewise: the previous table's routing: {:?}",
                        old.lb.stats()
                    );
                }
                return Ok(());
            }
            (Ok(None), None) => "the daemon answered 304 to a first request".to_owned(),
            (Err(why), _) => why,
        };
        match slot.as_mut() {
            Some(live) => {
                console_error!("edgewise: {failed}; the current host table keeps serving");
                live.checked_at = now;
                Ok(())
            }
            None => Err(Failure::HostsUnavailable(failed)),
        }
    })
}

/// Picks a host for the request's metadata.
pub(super) fn pick(values: &[(&str, String)]) -> Result<Pick, Failure> {
    LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let live = slot
            .as_mut()
            .ok_or_else(|| Failure::HostsUnavailable("no host table".to_owned()))?;
        let mut metadata = live.lb.metadata();
        for (key, value) in values {
            live.lb.set(&mut metadata, key, value);
        }
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
    LIVE.with(|l| {
        let mut slot = l.borrow_mut();
        let live = slot
            .as_mut()
            .filter(|live| live.lb.version() == failed.version)?;
        let selection = live
            .lb
            .select_retry(&failed.metadata, entropy(), failed.host)?;
        live.pick(selection.host, failed.metadata)
    })
}

impl Live {
    fn new(lb: SubsetLb, etag: Option<String>, checked_at: u64) -> Live {
        Live {
            lb,
            etag,
            checked_at,
        }
    }

    fn pick(&self, host: HostId, metadata: Metadata) -> Option<Pick> {
        // Validated with the table: `Origin::check` accepts exactly what `parse` does.
        let origin = Origin::parse(self.lb.address(host)?).ok()?;
        Some(Pick {
            origin,
            host,
            version: self.lb.version(),
            metadata,
        })
    }
}

/// Runs `f` on the live state if it is still at `version`.
fn with_live(version: u64, f: impl FnOnce(&mut Live)) {
    LIVE.with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut()
            && let Some(live) = slot.as_mut().filter(|live| live.lb.version() == version)
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
