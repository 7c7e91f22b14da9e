//! Daemon configuration: embedded defaults, then a TOML file, then environment and command
//! line (the last two handled by clap, command line first).

use std::{net::SocketAddr, path::Path, time::Duration};

use anyhow::Context;
use serde::Deserialize;

/// Everything the daemon needs to run. Every field has a default, so the daemon starts with no
/// configuration at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// HTTP API settings.
    pub server: ServerConfig,
    /// Logging settings.
    pub log: LogConfig,
}

/// `[server]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address the HTTP API listens on. Loopback by default: the API is for local peers.
    pub listen: SocketAddr,
    /// How long in-flight requests may take to finish after SIGTERM/SIGINT.
    pub shutdown_grace_secs: u64,
}

/// `[log]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` for people, `json` for log pipelines.
    pub format: LogFormat,
    /// A `tracing` filter directive such as `info` or `edgewise_daemon=debug,info`.
    pub filter: String,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 7878)),
            shutdown_grace_secs: 10,
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Text,
            filter: "info".into(),
        }
    }
}

/// Settings given on the command line or in the environment; each replaces the file's value.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Overrides {
    /// Address to listen on, e.g. 127.0.0.1:7878 (port 0 picks a free port).
    #[arg(long, env = "EDGEWISED_LISTEN")]
    pub listen: Option<SocketAddr>,
    /// Seconds in-flight requests get to finish on shutdown.
    #[arg(long, env = "EDGEWISED_SHUTDOWN_GRACE_SECS")]
    pub shutdown_grace_secs: Option<u64>,
    /// Log format.
    #[arg(long, env = "EDGEWISED_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Log filter directive (RUST_LOG syntax).
    #[arg(long, env = "EDGEWISED_LOG")]
    pub log_filter: Option<String>,
}

impl Config {
    /// Parses a TOML document; unknown keys are errors so that typos do not pass silently.
    pub fn from_toml(text: &str) -> anyhow::Result<Config> {
        Ok(toml::from_str(text)?)
    }

    /// Reads and parses a config file.
    pub fn from_file(path: &Path) -> anyhow::Result<Config> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading config file {}", path.display()))?;
        Config::from_toml(&text).with_context(|| format!("parsing config file {}", path.display()))
    }

    /// Defaults, overlaid by the file if one is given, overlaid by `overrides`.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
        let mut config = match path {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        config.apply(overrides);
        Ok(config)
    }

    fn apply(&mut self, o: &Overrides) {
        if let Some(listen) = o.listen {
            self.server.listen = listen;
        }
        if let Some(secs) = o.shutdown_grace_secs {
            self.server.shutdown_grace_secs = secs;
        }
        if let Some(format) = o.log_format {
            self.log.format = format;
        }
        if let Some(filter) = &o.log_filter {
            self.log.filter.clone_from(filter);
        }
    }

    /// The drain deadline after a shutdown signal.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.server.shutdown_grace_secs)
    }
}

#[cfg(test)]
mod tests;
