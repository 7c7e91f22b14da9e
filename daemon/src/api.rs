//! The HTTP API: routes, the state handlers share, and the error shape.
//!
//! `/healthz` and `/readyz` are open to probes; `/readyz` names its checks' states (memcached
//! servers and their errors) only to a caller with the bearer secret, which `/metrics` and
//! everything under `/v1` need: the API listens where workers reach it, on the internet.
//! Unknown paths answer 404 and wrong methods 405 (axum's defaults). Every request runs under
//! a deadline and is counted per endpoint ([`envelope`]).

mod envelope;
mod features;
mod hosts;
mod ready;
mod tokens;

pub use hosts::{CONTENT_TYPE as HOSTS_CONTENT_TYPE, VERSION_HEADER as HOSTS_VERSION_HEADER};

use std::{
    sync::Arc,
    sync::atomic::{AtomicBool, Ordering},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{DefaultBodyLimit, Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::{get, post, put},
};
use serde::Serialize;

use crate::{
    Config, ServerConfig, auth::Auth, connections::Connections, features::Features,
    hosts::HostTables, metrics::Exposition, tls::Tls, tokencache::TokenCache,
};

/// Largest request body any endpoint accepts; a redemption is ~200 bytes.
const MAX_BODY: usize = 4 * 1024;

/// The request deadline of an [`App::new`] app.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// What every handler can reach.
#[derive(Debug)]
pub struct App {
    tokens: TokenCache,
    auth: Auth,
    hosts: Arc<HostTables>,
    features: Option<Arc<Features>>,
    /// Largest `PUT /v1/features` body.
    max_put_bytes: usize,
    traffic: envelope::Traffic,
    connections: Connections,
    /// The listener's TLS settings; none when it serves plain HTTP.
    tls: Option<Arc<Tls>>,
    /// Set once shutdown began: `/readyz` turns 503 so balancers stop sending.
    draining: AtomicBool,
    /// `/readyz`'s shared rounds of dependency checks.
    rounds: ready::Rounds,
}

impl App {
    /// Loads the secret, the TLS files and the host table, starts the token cache and the
    /// reload triggers; call from within a Tokio runtime.
    pub fn start(config: &Config) -> anyhow::Result<App> {
        let tls = Tls::load(&config.server.tls)?.map(Arc::new);
        if let Some(tls) = &tls {
            tls.watch()?;
        }
        let tokens = TokenCache::start(&config.tokens, &config.workspace)?;
        let hosts = Arc::new(HostTables::load(&config.hosts)?);
        hosts.watch(&config.hosts)?;
        let features = Features::start(&config.features)?;
        Ok(App {
            tokens,
            auth: Auth::load(&config.api)?,
            hosts,
            features,
            max_put_bytes: config.features.max_put_bytes,
            traffic: envelope::Traffic::new(config.request_timeout()),
            connections: Connections::new("http", config.server.max_connections)
                .per_peer(config.server.max_connections_per_peer),
            tls,
            draining: AtomicBool::new(false),
            rounds: ready::Rounds::default(),
        })
    }

    /// Marks the start of shutdown.
    pub fn drain(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// The cap on open connections.
    pub(crate) fn connections(&self) -> &Connections {
        &self.connections
    }

    /// The listener's TLS settings, if it serves HTTPS.
    pub(crate) fn tls(&self) -> Option<&Arc<Tls>> {
        self.tls.as_ref()
    }

    /// The feature store, if configured.
    pub fn features(&self) -> Option<&Arc<Features>> {
        self.features.as_ref()
    }

    /// An app with the token cache only (tests, embedding).
    pub fn new(tokens: TokenCache, auth: Auth) -> App {
        let server = ServerConfig::default();
        App {
            tokens,
            auth,
            hosts: Arc::new(HostTables::none()),
            features: None,
            max_put_bytes: 0,
            traffic: envelope::Traffic::new(DEFAULT_TIMEOUT),
            connections: Connections::new("http", server.max_connections)
                .per_peer(server.max_connections_per_peer),
            tls: None,
            draining: AtomicBool::new(false),
            rounds: ready::Rounds::default(),
        }
    }
}

/// The API routes over `app`.
pub fn router(app: Arc<App>) -> Router {
    let max_put = app.max_put_bytes;
    // The secret is checked before a handler reads the body: a handler checking it itself
    // read up to `max_put_bytes` (16 MiB) of an unauthenticated `PUT /v1/features` first, and
    // thirty such uploads took the daemon from 13 to 486 MB.
    let v1 = Router::new()
        .route("/v1/tokens/redeem", post(tokens::redeem))
        .route("/v1/hosts", get(hosts::get))
        .route(
            "/v1/features",
            put(features::put).layer(DefaultBodyLimit::max(max_put)),
        )
        .route("/v1/features/{table}/{key}", get(features::get))
        .route("/metrics", get(metrics))
        .route_layer(middleware::from_fn_with_state(Arc::clone(&app), authorized));
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(ready::readyz))
        .merge(v1)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(middleware::from_fn_with_state(
            Arc::clone(&app),
            envelope::envelope,
        ))
        .with_state(app)
}

#[derive(Serialize)]
struct Health {
    status: &'static str,
    version: &'static str,
}

async fn healthz() -> Json<Health> {
    Json(Health {
        status: "ok",
        version: env!("CARGO_PKG_VERSION"),
    })
}

async fn metrics(State(app): State<Arc<App>>) -> Response {
    let mut page = Exposition::default();
    app.traffic.render(&mut page);
    app.connections.render(&mut page);
    if let Some(tls) = &app.tls {
        tls.render(&mut page);
    }
    app.tokens.render(&mut page);
    app.hosts.render(&mut page);
    if let Some(features) = &app.features {
        features.render(&mut page);
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        page.finish(),
    )
        .into_response()
}

/// A JSON error: `{"error": "..."}`.
fn error(status: StatusCode, message: impl Into<String>) -> Response {
    #[derive(Serialize)]
    struct Body {
        error: String,
    }
    let body = Body {
        error: message.into(),
    };
    (status, Json(body)).into_response()
}

/// Whether `headers` carry the bearer secret.
fn has_secret(app: &App, headers: &header::HeaderMap) -> bool {
    let value = headers.get(header::AUTHORIZATION);
    app.auth.allows(value.map(|v| v.as_bytes()))
}

/// Runs `request` if it carries the bearer secret, else answers 401 without reading it.
async fn authorized(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    if has_secret(&app, request.headers()) {
        return next.run(request).await;
    }
    let mut response = error(StatusCode::UNAUTHORIZED, "missing or wrong bearer secret");
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    response
}
