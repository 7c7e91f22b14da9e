//! The shutdown trigger: SIGTERM (service managers) or SIGINT (a terminal).

use std::{future::Future, io};

use tokio::signal::unix::{Signal, SignalKind, signal as unix_signal};

/// Installs the SIGTERM and SIGINT handlers now -- before the daemon says it is listening, so
/// a signal sent right after that line cannot hit the default action (exit without draining) --
/// and returns a future that completes on the first of them. Call from within the runtime.
pub fn signal() -> impl Future<Output = ()> + Send + 'static {
    let terminate = unix_signal(SignalKind::terminate());
    let interrupt = unix_signal(SignalKind::interrupt());
    async move {
        tokio::select! {
            () = recv(terminate, "SIGTERM") => tracing::info!("SIGTERM received, shutting down"),
            () = recv(interrupt, "SIGINT") => tracing::info!("SIGINT received, shutting down"),
        }
    }
}

async fn recv(handler: io::Result<Signal>, name: &str) {
    match handler {
        Ok(mut stream) => {
            stream.recv().await;
        }
        Err(error) => {
            // Without the handler the default action (exit) still applies; only the drain is
            // lost, so keep running rather than refuse to start.
            tracing::error!(%error, "cannot install {name} handler");
            std::future::pending::<()>().await;
        }
    }
}
