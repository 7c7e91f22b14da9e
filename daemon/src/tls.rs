//! HTTPS on the API listener: rustls with the certificate chain and key of `[server.tls]`,
//! and, when `client_ca_file` is set, client certificates checked against that CA (mutual
//! TLS, what a Worker's `mtls_certificates` binding presents).
//!
//! The files are read at start-up and again on SIGHUP (what certbot's deploy hooks and
//! certificate reloaders send). A reload builds a whole new rustls configuration and swaps it
//! in for the next handshakes; open connections keep the one they were made with, so a renewal
//! drops nothing. A reload that fails (a missing file, a key that does not match the
//! certificate) keeps the previous configuration serving and says why in the log.

use std::{
    path::Path,
    sync::{Arc, RwLock},
};

use anyhow::Context;
use rustls::{RootCertStore, ServerConfig, server::WebPkiClientVerifier};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use tokio::signal::unix::{SignalKind, signal};
use tokio_rustls::TlsAcceptor;

use crate::{
    TlsConfig,
    metrics::{Counter, Exposition},
};

/// The API listener's TLS settings, as last loaded.
#[derive(Debug)]
pub(crate) struct Tls {
    settings: TlsConfig,
    current: RwLock<Arc<ServerConfig>>,
    reloads: Counter,
    reload_failures: Counter,
    handshake_failures: Counter,
}

impl Tls {
    /// Reads the configured files; none when TLS is off.
    pub(crate) fn load(settings: &TlsConfig) -> anyhow::Result<Option<Tls>> {
        if !settings.enabled() {
            return Ok(None);
        }
        Ok(Some(Tls {
            current: RwLock::new(Arc::new(server_config(settings)?)),
            settings: settings.clone(),
            reloads: Counter::default(),
            reload_failures: Counter::default(),
            handshake_failures: Counter::default(),
        }))
    }

    /// An acceptor with the configuration loaded last.
    pub(crate) fn acceptor(&self) -> TlsAcceptor {
        let current = self.current.read().unwrap_or_else(|e| e.into_inner());
        TlsAcceptor::from(Arc::clone(&current))
    }

    /// Counts a handshake that failed or did not finish in time.
    pub(crate) fn handshake_failed(&self) {
        self.handshake_failures.inc();
    }

    /// Reads the files again; on an error the configuration loaded before stays.
    pub(crate) fn reload(&self) -> anyhow::Result<()> {
        match server_config(&self.settings) {
            Ok(config) => {
                *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
                self.reloads.inc();
                Ok(())
            }
            Err(error) => {
                self.reload_failures.inc();
                Err(error)
            }
        }
    }

    /// Reloads on every SIGHUP. The handler is installed before returning, so a SIGHUP sent
    /// once the daemon says it is listening reloads rather than kills it.
    pub(crate) fn watch(self: &Arc<Self>) -> anyhow::Result<()> {
        let mut hangup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
        let tls = Arc::clone(self);
        tokio::spawn(async move {
            while hangup.recv().await.is_some() {
                // Reading a few PEM files: brief, but file I/O, so off the runtime's threads.
                let reloading = Arc::clone(&tls);
                match tokio::task::spawn_blocking(move || reloading.reload()).await {
                    Ok(Ok(())) => tracing::info!("SIGHUP: TLS certificate and key reloaded"),
                    Ok(Err(error)) => tracing::error!(
                        error = format!("{error:#}"),
                        "SIGHUP: TLS files rejected, the previous ones keep serving"
                    ),
                    Err(error) => tracing::error!(%error, "TLS reload panicked"),
                }
            }
        });
        Ok(())
    }

    pub(crate) fn render(&self, page: &mut Exposition) {
        page.counter(
            "edgewise_tls_reloads_total",
            "TLS certificate, key and client CA reloads that took effect.",
            self.reloads.get(),
        );
        page.counter(
            "edgewise_tls_reload_failures_total",
            "TLS reloads refused (the previous files keep serving).",
            self.reload_failures.get(),
        );
        page.counter(
            "edgewise_tls_handshake_failures_total",
            "TLS handshakes that failed or did not finish within server.header_timeout_ms.",
            self.handshake_failures.get(),
        );
    }
}

/// Whether the files `settings` names make a TLS configuration (`check-config`).
pub fn check(settings: &TlsConfig) -> anyhow::Result<()> {
    Tls::load(settings).map(drop)
}

/// A rustls configuration from the files `settings` names.
fn server_config(settings: &TlsConfig) -> anyhow::Result<ServerConfig> {
    let (Some(cert_file), Some(key_file)) = (&settings.cert_file, &settings.key_file) else {
        anyhow::bail!("server.tls.cert_file and server.tls.key_file go together");
    };
    let chain = certificates(cert_file, "server.tls.cert_file")?;
    let key = PrivateKeyDer::from_pem_file(key_file).with_context(|| {
        format!(
            "server.tls.key_file {}: no PEM private key read",
            key_file.display()
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = match &settings.client_ca_file {
        Some(ca_file) => {
            let mut roots = RootCertStore::empty();
            for ca in certificates(ca_file, "server.tls.client_ca_file")? {
                roots
                    .add(ca)
                    .with_context(|| format!("server.tls.client_ca_file {}", ca_file.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .with_context(|| format!("server.tls.client_ca_file {}", ca_file.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    // No ALPN: the API speaks HTTP/1.1, which a client assumes when none is negotiated.
    builder.with_single_cert(chain, key).with_context(|| {
        format!(
            "server.tls: the key in {} does not fit the certificate in {}",
            key_file.display(),
            cert_file.display()
        )
    })
}

/// The certificates of a PEM file; at least one.
fn certificates(path: &Path, key: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let read = || -> Result<Vec<_>, rustls_pki_types::pem::Error> {
        CertificateDer::pem_file_iter(path)?.collect()
    };
    let certificates = read().with_context(|| format!("{key} {}", path.display()))?;
    if certificates.is_empty() {
        anyhow::bail!("{key} {}: no PEM certificate in it", path.display());
    }
    Ok(certificates)
}
