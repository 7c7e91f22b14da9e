//! The HTTP API and its lifecycle: bind, serve, drain on shutdown.

use std::{future::Future, net::SocketAddr, sync::Arc};

use anyhow::Context;
use axum::{Json, Router, routing::get};
use serde::Serialize;
use tokio::{net::TcpListener, sync::Notify};

use crate::Config;

/// A bound, not yet serving, API server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    config: Config,
}

/// The API routes. Unknown paths answer 404 and wrong methods 405 (axum's defaults).
pub fn router() -> Router {
    Router::new().route("/healthz", get(healthz))
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

impl Server {
    /// Binds the configured address; port 0 picks a free port (see [`Server::local_addr`]).
    pub async fn bind(config: Config) -> anyhow::Result<Server> {
        let listen = config.server.listen;
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        Ok(Server { listener, config })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        Ok(self.listener.local_addr()?)
    }

    /// Serves until `shutdown` completes, then stops accepting and lets in-flight requests
    /// finish for at most the configured grace period.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let addr = self.local_addr()?;
        let grace = self.config.shutdown_grace();
        tracing::info!(%addr, "listening");

        let draining = Arc::new(Notify::new());
        let notify = Arc::clone(&draining);
        let serve = axum::serve(self.listener, router()).with_graceful_shutdown(async move {
            shutdown.await;
            notify.notify_one();
        });
        tokio::select! {
            served = serve.into_future() => served.context("serving HTTP")?,
            () = async { draining.notified().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(?grace, "grace period over, dropping in-flight requests");
            }
        }
        tracing::info!("stopped");
        Ok(())
    }
}
