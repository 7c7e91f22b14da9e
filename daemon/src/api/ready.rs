//! `GET /readyz`: whether this daemon can do its work now, for load balancers and
//! orchestrators. `/healthz` says the process is alive; this says its dependencies are there.

use std::{collections::BTreeMap, sync::Arc, sync::atomic::Ordering};

use axum::{Json, extract::State, http::StatusCode, response::IntoResponse, response::Response};
use serde::Serialize;

use super::App;

#[derive(Serialize)]
struct Readiness {
    status: &'static str,
    checks: BTreeMap<&'static str, Check>,
}

#[derive(Serialize)]
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

/// 200 when every check passes, else 503; the body names each check's state either way.
pub(super) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let mut checks = BTreeMap::new();
    checks.insert("tokens", app.tokens.readiness().await.into());
    checks.insert("hosts", app.hosts.readiness().into());
    checks.insert("features", features(&app).await.into());
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
        checks,
    };
    (status, Json(body)).into_response()
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
