//! Subset routing at the edge: which host of the host table serves this request.
//!
//! The table comes from a wrangler var (`HOST_TABLE`, JSON) or from the daemon
//! (`HOST_TABLE = "daemon"`: `GET /v1/hosts`, revalidated with its ETag at most every
//! `HOST_TABLE_REFRESH_MS`). Each isolate keeps one subset load balancer (the daemon's table
//! is read from its bytes in place) and replaces it only when the table's version changes. A
//! table that cannot be fetched, decoded or built is logged and the current one keeps serving;
//! only an isolate that never had a table answers 503.
//!
//! Request attributes listed in `ROUTE_ATTRIBUTES` become the subset metadata. Hosts that
//! cannot be reached several times in a row are ejected for a while (`OUTLIER_*`, see
//! [`edgewise::Outliers`]).

mod live;

use std::{rc::Rc, time::Duration};

use edgewise::{
    AttributeSource, HostTable, OutlierPolicy, RouteAttribute, path_segment, prefix_value,
    query_value, routing_path,
};
use worker::{Env, Url};

use crate::{
    config::{number, switch, var},
    daemon::Daemon,
    failure::Failure,
};
pub(crate) use live::Pick;

const HOST_TABLE: &str = "HOST_TABLE";
const HOST_TABLE_REFRESH_MS: &str = "HOST_TABLE_REFRESH_MS";
const ROUTE_ATTRIBUTES: &str = "ROUTE_ATTRIBUTES";
const OUTLIER_FAILURES: &str = "OUTLIER_FAILURES";
const OUTLIER_EJECTION_MS: &str = "OUTLIER_EJECTION_MS";
const OUTLIER_MAX_EJECTION_MS: &str = "OUTLIER_MAX_EJECTION_MS";
const OUTLIER_MAX_EJECTED_PERCENT: &str = "OUTLIER_MAX_EJECTED_PERCENT";
const OUTLIER_GATEWAY_ERRORS: &str = "OUTLIER_GATEWAY_ERRORS";

/// Routing settings, parsed once per isolate.
#[derive(Debug)]
pub(crate) struct Routing {
    attributes: Vec<RouteAttribute>,
    source: Source,
    outliers: OutlierPolicy,
    /// Whether an origin's 502, 503 and 504 count as failures to answer, as Envoy's
    /// `consecutive_gateway_failure` does (off there by default too).
    gateway_errors: bool,
}

#[derive(Debug)]
enum Source {
    /// A table given in the vars: built once.
    Static(Rc<HostTable>),
    /// The daemon's table, revalidated every `refresh`.
    Daemon {
        daemon: Daemon,
        url: String,
        refresh: Duration,
    },
}

impl Routing {
    /// `Ok(None)` when no host table is configured (requests go to `ORIGIN_URL`).
    pub(crate) fn from_env(env: &Env) -> Result<Option<Routing>, String> {
        let Some(table) = var(env, HOST_TABLE)?.filter(|v| !v.trim().is_empty()) else {
            return Ok(None);
        };
        let source = if table.trim() == "daemon" {
            let daemon = Daemon::from_env(env, HOST_TABLE)?;
            let refresh = number(env, HOST_TABLE_REFRESH_MS)?.map_or(5000, u64::from);
            Source::Daemon {
                url: daemon.url("/v1/hosts")?,
                daemon,
                refresh: Duration::from_millis(refresh),
            }
        } else {
            Source::Static(Rc::new(static_table(&table)?))
        };
        let attributes =
            RouteAttribute::parse_list(&var(env, ROUTE_ATTRIBUTES)?.unwrap_or_default())
                .map_err(|e| format!("{ROUTE_ATTRIBUTES}: {e}"))?;
        Ok(Some(Routing {
            attributes,
            source,
            outliers: outlier_policy(env)?,
            gateway_errors: switch(env, OUTLIER_GATEWAY_ERRORS)?.unwrap_or(false),
        }))
    }

    /// Picks the host for `req`.
    pub(crate) async fn pick(&self, req: &web_sys::Request, url: &Url) -> Result<Pick, Failure> {
        live::ensure(&self.source, self.outliers).await?;
        let values = self.values(req, url);
        live::pick(&self.attributes, &values)
    }

    /// Another host of the same subset after `failed` could not be reached.
    pub(crate) fn retry(&self, failed: &Pick) -> Option<Pick> {
        live::retry(failed)
    }

    /// Whether an origin's 502, 503 and 504 count against it, as failures to answer do.
    pub(crate) fn gateway_errors(&self) -> bool {
        self.gateway_errors
    }

    /// Whether `pick`'s host answered, if known: hosts that do not, several times in a row,
    /// are ejected.
    pub(crate) fn report(&self, pick: &Pick, answered: Option<bool>) {
        if let Some(answered) = answered {
            live::report(pick, answered);
        }
    }

    /// The metadata of `req`: (attribute's position, value) for every attribute present; the
    /// path and query read as origins read them.
    fn values(&self, req: &web_sys::Request, url: &Url) -> Vec<(usize, String)> {
        let headers = req.headers();
        let path = std::cell::OnceCell::new();
        let path = || path.get_or_init(|| routing_path(url.path()));
        self.attributes
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                let value = match &a.source {
                    AttributeSource::Header(name) => headers.get(name).ok().flatten(),
                    AttributeSource::Query(name) => {
                        query_value(url.query()?, name).map(|v| v.into_owned())
                    }
                    AttributeSource::PathSegment(n) => path_segment(path(), *n).map(str::to_owned),
                    AttributeSource::PathPrefix(rules) => {
                        prefix_value(path(), rules).map(str::to_owned)
                    }
                    _ => None,
                }?;
                Some((i, value))
            })
            .collect()
    }
}

/// Passive health checking: Envoy's outlier detection defaults unless the vars say otherwise.
fn outlier_policy(env: &Env) -> Result<OutlierPolicy, String> {
    let defaults = OutlierPolicy::default();
    let ms = |name| number(env, name).map(|n| n.map(u64::from));
    let percent = number(env, OUTLIER_MAX_EJECTED_PERCENT)?
        .map(|p| {
            u8::try_from(p)
                .ok()
                .filter(|p| *p <= 100)
                .ok_or_else(|| format!("{OUTLIER_MAX_EJECTED_PERCENT}: {p} is over 100"))
        })
        .transpose()?;
    Ok(OutlierPolicy {
        consecutive_failures: number(env, OUTLIER_FAILURES)?
            .unwrap_or(defaults.consecutive_failures),
        base_ejection_ms: ms(OUTLIER_EJECTION_MS)?.unwrap_or(defaults.base_ejection_ms),
        max_ejection_ms: ms(OUTLIER_MAX_EJECTION_MS)?.unwrap_or(defaults.max_ejection_ms),
        max_ejected_percent: percent.unwrap_or(defaults.max_ejected_percent),
    })
}

/// Parses and validates a JSON host table from the vars.
fn static_table(json: &str) -> Result<HostTable, String> {
    let mut table: HostTable =
        serde_json::from_str(json).map_err(|e| format!("{HOST_TABLE}: not a host table: {e}"))?;
    table.normalize_addresses();
    table.validate().map_err(|e| format!("{HOST_TABLE}: {e}"))?;
    Ok(table)
}
