//! The HTTP API's lifecycle: bind, serve, drain on shutdown.

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use anyhow::Context;
use hyper::server::conn::http1;
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, time::timeout};

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
    ///
    /// Connections are served by hyper's own builder, not `axum::serve`, which sets no timer:
    /// `request_timeout_ms` starts once the headers are in, so without a header read timeout
    /// a client trickling header lines holds a connection (and a file descriptor) as long as
    /// it likes, and a stopping daemon waits for it. A TLS handshake and then each request's
    /// headers get `header_timeout_ms`. At most `server.max_connections` are open at once
    /// (past it the server stops accepting until one closes), and at most
    /// `server.max_connections_per_peer` of one peer.
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let addr = self.local_addr()?;
        let grace = self.config.shutdown_grace();
        let mut http = http1::Builder::new();
        http.timer(TokioTimer::new())
            .header_read_timeout(self.config.header_timeout());
        let routes = router(Arc::clone(&self.app));
        let graceful = GracefulShutdown::new();
        let scheme = if self.app.tls().is_some() {
            "https"
        } else {
            "http"
        };
        tracing::info!(%addr, scheme, "listening");
        tokio::pin!(shutdown);
        loop {
            let slot = tokio::select! {
                slot = self.app.connections().slot() => slot,
                () = &mut shutdown => break,
            };
            let (stream, peer) = tokio::select! {
                accepted = self.listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors, most likely: others may close meanwhile.
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            // A peer at its cap: closed at once, its slot given back to the others.
            let Some(slot) = slot.open_for(peer.ip()) else {
                continue;
            };
            let service = TowerToHyperService::new(routes.clone());
            let (http, watcher) = (http.clone(), graceful.watcher());
            let tls = self.app.tls().map(|tls| (Arc::clone(tls), tls.acceptor()));
            let handshake_timeout = self.config.header_timeout();
            tokio::spawn(async move {
                let outcome = match tls {
                    None => {
                        let connection = http.serve_connection(TokioIo::new(stream), service);
                        watcher.watch(connection).await
                    }
                    Some((tls, acceptor)) => {
                        // The handshake comes before any header: it gets the same deadline.
                        let handshake = timeout(handshake_timeout, acceptor.accept(stream)).await;
                        let Ok(Ok(stream)) = handshake else {
                            tls.handshake_failed();
                            tracing::debug!(%peer, "TLS handshake failed or timed out");
                            return;
                        };
                        let connection = http.serve_connection(TokioIo::new(stream), service);
                        watcher.watch(connection).await
                    }
                };
                if let Err(error) = outcome {
                    tracing::debug!(%error, "connection ended");
                }
                drop(slot);
            });
        }
        drop(self.listener);
        self.app.drain();
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(grace) => {
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
