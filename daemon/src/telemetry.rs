//! Log set-up.

use anyhow::Context;
use tracing_subscriber::EnvFilter;

use crate::{LogConfig, LogFormat};

/// Installs the global `tracing` subscriber, writing to stderr.
pub fn init(log: &LogConfig) -> anyhow::Result<()> {
    let filter = filter(log)?;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let installed = match log.format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
    installed.map_err(|e| anyhow::anyhow!("installing log subscriber: {e}"))
}

/// The configured filter, or why it is not one (`check-config` asks too).
pub fn filter(log: &LogConfig) -> anyhow::Result<EnvFilter> {
    EnvFilter::try_new(&log.filter).with_context(|| format!("invalid log filter {:?}", log.filter))
}
