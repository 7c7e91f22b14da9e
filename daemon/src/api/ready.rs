//! `GET /readyz`: whether this daemon can do its work now, for load balancers and
//! orchestrators. `/healthz` says the process is alive; this says its dependencies are there.

use std::{collections::BTreeMap, sync::Arc, sync::atomic::Ordering, time::Duration};

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::IntoResponse,
    response::Response,
};
use serde::Serialize;
use tokio::{sync::Mutex, time::Instant};

use super::App;

/// How long one round of dependency checks answers `/readyz`. The route is open, and a round
/// opens a connection to every memcached server: unshared, a flood of probes became a flood of
/// connections to memcached (one each; its default limit is 1,024), which refused the
/// redemptions' own. Orchestrators probe every few seconds, so a second's reuse hides nothing.
const REUSE: Duration = Duration::from_secs(1);

/// The last round of dependency checks, shared by the probes that arrive while it runs and
/// for [`REUSE`] after.
#[derive(Debug, Default)]
pub(super) struct Rounds {
    last: Mutex<Option<(Instant, Checks)>>,
}

type Checks = BTreeMap<&'static str, Check>;

#[derive(Serialize)]
struct Readiness {
    status: &'static str,
    /// Only for a caller with the bearer secret: the states name servers and their errors.
    #[serde(skip_serializing_if = "Option::is_none")]
    checks: Option<Checks>,
}

#[derive(Clone, Debug, Serialize)]
struct Check {
    ok: bool,
    detail: String,
}

impl From<Result<String, String>> for Check {
    fn from(result: Result<String, String>) -> Check {
        let ok = result.is_ok();
        let (Ok(detail) | Err(detail)) = result;
        Check { ok, detail }
    }
}

/// 200 when every check passes, else 503; the body names each check's state to a caller with
/// the bearer secret.
pub(super) async fn readyz(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let mut checks = app.rounds.checks(&app).await;
    // Not reused: a draining daemon must say so at once.
    let serving = if app.draining.load(Ordering::Relaxed) {
        Err("shutting down".to_owned())
    } else {
        Ok("accepting requests".to_owned())
    };
    checks.insert("serving", serving.into());
    let ready = checks.values().all(|c: &Check| c.ok);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let body = Readiness {
        status: if ready { "ready" } else { "not ready" },
        checks: super::has_secret(&app, &headers).then_some(checks),
    };
    (status, Json(body)).into_response()
}

impl Rounds {
    /// The dependency checks of a round begun at most [`REUSE`] ago, or of a new one; probes
    /// arriving while a round runs wait for it rather than start their own.
    async fn checks(&self, app: &App) -> Checks {
        let mut last = self.last.lock().await;
        if let Some((at, checks)) = last.as_ref()
            && at.elapsed() < REUSE
        {
            return checks.clone();
        }
        let mut checks = BTreeMap::new();
        checks.insert("tokens", app.tokens.readiness().await.into());
        checks.insert("hosts", app.hosts.readiness().into());
        checks.insert("features", features(app).await.into());
        // Dated from its end: the probes that queued behind a slow round (a stopped server's
        // takes a second) take its answer instead of each running one more.
        *last = Some((Instant::now(), checks.clone()));
        checks
    }
}

/// Reading a new store version validates it first, which takes milliseconds on a large
/// snapshot: off the async threads.
async fn features(app: &App) -> Result<String, String> {
    let Some(features) = app.features.clone() else {
        return Ok("not configured".to_owned());
    };
    tokio::task::spawn_blocking(move || features.readiness())
        .await
        .unwrap_or_else(|join| Err(format!("check failed: {join}")))
}
