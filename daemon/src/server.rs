//! The HTTP API's lifecycle: bind, serve, drain on shutdown.

use std::{future::Future, net::SocketAddr, sync::Arc};

use anyhow::Context;
use tokio::{net::TcpListener, sync::Notify};

use crate::{Config, api::App, api::router};

/// A bound, not yet serving, API server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    config: Config,
    app: Arc<App>,
}

impl Server {
    /// Starts the app's components and binds the configured address; port 0 picks a free port
    /// (see [`Server::local_addr`]).
    pub async fn bind(config: Config) -> anyhow::Result<Server> {
        let app = Arc::new(App::start(&config)?);
        let listen = config.server.listen;
        let listener = TcpListener::bind(listen)
            .await
            .with_context(|| format!("binding {listen}"))?;
        Ok(Server {
            listener,
            config,
            app,
        })
    }

    /// The feature store, if configured (benchmarks and embedding publish through it).
    pub fn features(&self) -> Option<Arc<crate::Features>> {
        self.app.features().cloned()
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
        let app = Arc::clone(&self.app);
        let routes = router(Arc::clone(&self.app));
        let serve = axum::serve(self.listener, routes).with_graceful_shutdown(async move {
            shutdown.await;
            app.drain();
            notify.notify_one();
        });
        tokio::select! {
            served = serve.into_future() => served.context("serving HTTP")?,
            () = async { draining.notified().await; tokio::time::sleep(grace).await } => {
                tracing::warn!(?grace, "grace period over, dropping in-flight requests");
            }
        }
        if let Some(features) = self.app.features().cloned() {
            let version = tokio::task::spawn_blocking(move || features.settle()).await?;
            tracing::info!(version, "feature store: no publish in progress");
        }
        tracing::info!("stopped");
        Ok(())
    }
}
