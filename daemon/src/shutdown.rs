//! The shutdown trigger: SIGTERM (service managers) or SIGINT (a terminal).

use tokio::signal::unix::{SignalKind, signal as unix_signal};

/// Completes on the first SIGTERM or SIGINT.
pub async fn signal() {
    let terminate = async {
        match unix_signal(SignalKind::terminate()) {
            Ok(mut stream) => {
                stream.recv().await;
            }
            Err(error) => {
                // Without the handler the default action (exit) still applies; only the drain
                // is lost, so keep running rather than refuse to start.
                tracing::error!(%error, "cannot install SIGTERM handler");
                std::future::pending::<()>().await;
            }
        }
    };
    let interrupt = async {
        if let Err(error) = tokio::signal::ctrl_c().await {
            tracing::error!(%error, "cannot install SIGINT handler");
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        () = terminate => tracing::info!("SIGTERM received, shutting down"),
        () = interrupt => tracing::info!("SIGINT received, shutting down"),
    }
}
