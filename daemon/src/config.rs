//! Daemon configuration: embedded defaults, then a TOML file, then environment and command
//! line (the last two handled by clap, command line first).

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::connections::Connections;

mod overlay;

/// Everything the daemon needs to run. Every field has a default, so the daemon starts with no
/// configuration at all.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// HTTP API settings.
    pub server: ServerConfig,
    /// Logging settings.
    pub log: LogConfig,
    /// Authentication of the `/v1` API.
    pub api: ApiConfig,
    /// The Privacy Pass token cache.
    pub tokens: TokensConfig,
    /// Scrubbing of the reused scratch memory of hot paths.
    pub workspace: WorkspaceSettings,
    /// The host table served to workers.
    pub hosts: HostsConfig,
    /// The memory-mapped feature store the daemon publishes.
    pub features: FeaturesConfig,
}

/// `[features]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FeaturesConfig {
    /// Directory of the store (two data files and a state file). None: no feature store.
    pub dir: Option<PathBuf>,
    /// Directory watched for snapshot files (`<table>.csv`, `*.ewfs` archives).
    pub ingest_dir: Option<PathBuf>,
    /// How often the ingest directory is scanned, in milliseconds.
    pub ingest_interval_ms: u64,
    /// Unix socket answering `get <table>:<key>` in the memcached text protocol. None: off.
    pub socket: Option<PathBuf>,
    /// Most connections open at once on `socket`; past it the socket stops accepting.
    pub socket_max_connections: usize,
    /// Largest `PUT /v1/features` body, in bytes.
    pub max_put_bytes: usize,
    /// Largest snapshot file taken from the ingest directory, in bytes.
    pub max_ingest_bytes: u64,
    /// How long a publish waits for readers still on the copy it is about to overwrite, in
    /// milliseconds; a reader slower than that gets an error instead of torn data.
    pub reader_grace_ms: u64,
    /// How often the published version's file is checked whole (checksum and index), in
    /// seconds; a damaged one is published again from memory. 0: never.
    pub verify_interval_secs: u64,
    /// Object storage the snapshots come from. None: only the ingest directory and the API.
    pub source: Option<SourceConfig>,
}

/// `[features.source]` table: where every daemon of a fleet pulls its snapshots from.
#[derive(Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SourceConfig {
    /// The snapshots' prefix: `s3://bucket/prefix`, `gs://`, `az://` or an `https://` base.
    pub url: String,
    /// The manifest object under the prefix.
    #[serde(default = "SourceConfig::default_manifest")]
    pub manifest: String,
    /// Seconds between manifest polls.
    #[serde(default = "SourceConfig::default_poll_interval")]
    pub poll_interval_secs: u64,
    /// Most milliseconds added at random to each wait, so that a fleet's polls spread out.
    #[serde(default = "SourceConfig::default_jitter")]
    pub poll_jitter_ms: u64,
    /// Deadline of a manifest request, of connecting, and of each chunk of a download.
    #[serde(default = "SourceConfig::default_request_timeout")]
    pub request_timeout_ms: u64,
    /// Deadline of a whole snapshot download, in seconds.
    #[serde(default = "SourceConfig::default_download_timeout")]
    pub download_timeout_secs: u64,
    /// Longest wait between retries after failures, in seconds (they back off from 1 s).
    #[serde(default = "SourceConfig::default_retry_max")]
    pub retry_max_secs: u64,
    /// The object store client's settings by their `object_store` names (`aws_endpoint`,
    /// `aws_region`, `aws_allow_http`, `google_service_account`, ...). Credentials are best
    /// left to the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`), as the vendors' SDKs read them.
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, String>,
}

impl SourceConfig {
    fn default_manifest() -> String {
        "latest.json".to_owned()
    }
    fn default_poll_interval() -> u64 {
        30
    }
    fn default_jitter() -> u64 {
        5000
    }
    fn default_request_timeout() -> u64 {
        10_000
    }
    fn default_download_timeout() -> u64 {
        600
    }
    fn default_retry_max() -> u64 {
        300
    }

    /// A source of `url` with every other setting at its default.
    pub fn new(url: impl Into<String>) -> SourceConfig {
        SourceConfig {
            url: url.into(),
            manifest: Self::default_manifest(),
            poll_interval_secs: Self::default_poll_interval(),
            poll_jitter_ms: Self::default_jitter(),
            request_timeout_ms: Self::default_request_timeout(),
            download_timeout_secs: Self::default_download_timeout(),
            retry_max_secs: Self::default_retry_max(),
            options: Default::default(),
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        crate::features::check_source(self)
            .with_context(|| format!("features.source (url {:?})", self.url))?;
        if self.manifest.is_empty() || self.manifest.starts_with('/') {
            anyhow::bail!("features.source.manifest must be an object name under the prefix");
        }
        if self.poll_interval_secs == 0
            || self.request_timeout_ms == 0
            || self.download_timeout_secs == 0
            || self.retry_max_secs == 0
        {
            anyhow::bail!(
                "features.source.poll_interval_secs, request_timeout_ms, download_timeout_secs \
                 and retry_max_secs must be at least 1"
            );
        }
        Ok(())
    }
}

/// Option values may be credentials: printed only for settings known not to be.
impl std::fmt::Debug for SourceConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const PLAIN: [&str; 6] = [
            "aws_endpoint",
            "aws_region",
            "aws_allow_http",
            "allow_http",
            "aws_virtual_hosted_style_request",
            "azure_storage_account_name",
        ];
        let options: std::collections::BTreeMap<&str, &str> = self
            .options
            .iter()
            .map(|(k, v)| {
                let shown = PLAIN.contains(&k.to_ascii_lowercase().as_str());
                (k.as_str(), if shown { v.as_str() } else { "<redacted>" })
            })
            .collect();
        f.debug_struct("SourceConfig")
            .field("url", &self.url)
            .field("manifest", &self.manifest)
            .field("poll_interval_secs", &self.poll_interval_secs)
            .field("poll_jitter_ms", &self.poll_jitter_ms)
            .field("request_timeout_ms", &self.request_timeout_ms)
            .field("download_timeout_secs", &self.download_timeout_secs)
            .field("retry_max_secs", &self.retry_max_secs)
            .field("options", &options)
            .finish()
    }
}

impl Default for FeaturesConfig {
    fn default() -> Self {
        FeaturesConfig {
            dir: None,
            ingest_dir: None,
            ingest_interval_ms: 1000,
            socket: None,
            socket_max_connections: 1024,
            max_put_bytes: 16 * 1024 * 1024,
            max_ingest_bytes: 1 << 30,
            reader_grace_ms: 1000,
            verify_interval_secs: 60,
            source: None,
        }
    }
}

impl FeaturesConfig {
    /// The ingest directory scan interval.
    pub fn ingest_interval(&self) -> Duration {
        Duration::from_millis(self.ingest_interval_ms.max(1))
    }

    /// The interval of whole-file checks of the published version, if they are on.
    pub fn verify_interval(&self) -> Option<Duration> {
        (self.verify_interval_secs > 0).then(|| Duration::from_secs(self.verify_interval_secs))
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.dir.is_none()
            && (self.ingest_dir.is_some() || self.socket.is_some() || self.source.is_some())
        {
            anyhow::bail!(
                "features.ingest_dir, features.socket and features.source need features.dir \
                 (the store)"
            );
        }
        if let Some(source) = &self.source {
            source.validate()?;
        }
        Connections::check(
            "features.socket_max_connections",
            self.socket_max_connections,
        )?;
        if self.ingest_interval_ms == 0
            || self.max_put_bytes == 0
            || self.max_ingest_bytes == 0
            || self.reader_grace_ms == 0
        {
            anyhow::bail!(
                "features.ingest_interval_ms, max_put_bytes, max_ingest_bytes and reader_grace_ms \
                 must be at least 1"
            );
        }
        Ok(())
    }
}

/// `[hosts]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostsConfig {
    /// TOML file holding the host table served at `GET /v1/hosts`. None: no table (404).
    pub file: Option<PathBuf>,
    /// How often the file is checked for changes, in milliseconds (0: only on SIGHUP).
    pub watch_interval_ms: u64,
}

impl Default for HostsConfig {
    fn default() -> Self {
        HostsConfig {
            file: None,
            watch_interval_ms: 1000,
        }
    }
}

impl HostsConfig {
    /// The file poll interval, if polling is on.
    pub fn watch_interval(&self) -> Option<Duration> {
        (self.watch_interval_ms > 0).then(|| Duration::from_millis(self.watch_interval_ms))
    }
}

/// `[workspace]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct WorkspaceSettings {
    /// `full` zeroes every workspace entirely after each use, `shadow` does too but also runs
    /// the sampled watermark verification, `watermark` zeroes only what was used.
    pub scrub: String,
    /// Verify about one in this many resets that nothing above the watermark was written
    /// (0: never).
    pub verify_one_in: u32,
}

impl Default for WorkspaceSettings {
    fn default() -> Self {
        WorkspaceSettings {
            scrub: "watermark".into(),
            verify_one_in: edgewise::DEFAULT_VERIFY_ONE_IN,
        }
    }
}

impl WorkspaceSettings {
    /// The scrub mode, or why the name is wrong.
    pub fn mode(&self) -> anyhow::Result<edgewise::ScrubMode> {
        edgewise::ScrubMode::from_name(&self.scrub).ok_or_else(|| {
            anyhow::anyhow!(
                "workspace.scrub: {:?} is not one of full, shadow, watermark",
                self.scrub
            )
        })
    }

    /// A workspace configuration of `size` bytes with these settings.
    pub fn config(&self, size: usize) -> anyhow::Result<edgewise::WorkspaceConfig> {
        Ok(edgewise::WorkspaceConfig::new(size)
            .with_mode(self.mode()?)
            .with_verify_one_in(self.verify_one_in))
    }
}

/// `[server]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address the HTTP API listens on. Loopback by default: the API is for local peers.
    pub listen: SocketAddr,
    /// How long in-flight requests may take to finish after SIGTERM/SIGINT.
    pub shutdown_grace_secs: u64,
    /// Longest a request may take, reading its body included; slower ones get a 408 and
    /// their connection closed, so a client trickling a body cannot hold a handler forever.
    pub request_timeout_ms: u64,
    /// Longest a connection may take to send a request's headers, or stay idle between
    /// requests, before it is closed: what an unauthenticated client can hold a slot for.
    pub header_timeout_ms: u64,
    /// Most API connections open at once; past it the server stops accepting, and further
    /// clients wait in the listen backlog until one closes.
    pub max_connections: usize,
    /// Most API connections one peer (an IPv4 address, an IPv6 /64) may hold open; past it
    /// its new connections are closed at once.
    pub max_connections_per_peer: usize,
    /// Serve plain HTTP on a non-loopback address (a TLS proxy or tunnel in front). Off, such
    /// an address needs `[server.tls]`.
    pub allow_plain_http: bool,
    /// HTTPS on the API listener.
    pub tls: TlsConfig,
}

/// `[server.tls]` table. With `cert_file` set the API serves HTTPS only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM certificate chain, the server's own certificate first. Reloaded on SIGHUP.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of that certificate (PKCS#8, PKCS#1 or SEC1). Reloaded on SIGHUP.
    pub key_file: Option<PathBuf>,
    /// PEM CA certificates: clients must present a certificate issued by one (mutual TLS).
    /// Reloaded on SIGHUP.
    pub client_ca_file: Option<PathBuf>,
}

impl TlsConfig {
    /// Whether the API serves HTTPS.
    pub fn enabled(&self) -> bool {
        self.cert_file.is_some()
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.cert_file.is_some() != self.key_file.is_some() {
            anyhow::bail!("server.tls.cert_file and server.tls.key_file go together");
        }
        if self.client_ca_file.is_some() && !self.enabled() {
            anyhow::bail!("server.tls.client_ca_file needs server.tls.cert_file and key_file");
        }
        Ok(())
    }
}

/// `[log]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `text` for people, `json` for log pipelines.
    pub format: LogFormat,
    /// A `tracing` filter directive such as `info` or `edgewise_daemon=debug,info`.
    pub filter: String,
}

/// `[api]` table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// File holding the bearer secret every `/v1` request must present (surrounding
    /// whitespace ignored). The environment variable `EDGEWISED_API_SECRET` takes precedence.
    /// Without a secret every `/v1` request is refused.
    pub secret_file: Option<PathBuf>,
}

/// `[tokens]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokensConfig {
    /// Accept tokens the cache could not decide on because of a transient I/O fault. Off:
    /// undecided means refused (503).
    pub fail_open: bool,
    /// Prefix of every record key in memcached.
    pub key_prefix: String,
    /// Record lifetime when the worker sends no issuer-key expiry.
    pub default_ttl_secs: u64,
    /// Upper bound on any record's lifetime.
    pub max_ttl_secs: u64,
    /// Capacity of the embedded store (used when no memcached server is listed); when full it
    /// refuses redemptions rather than forget spends.
    pub embedded_max_records: usize,
    /// The memcached backend.
    pub memcached: MemcachedConfig,
}

/// `[tokens.memcached]` table.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemcachedConfig {
    /// `host:port` of each server. Empty: use the embedded store.
    pub servers: Vec<String>,
    /// Servers that record each spend; fresh needs a majority of them. 1 = no replication.
    pub replicas: usize,
    /// Pipelining connections per server.
    pub connections: usize,
    /// Deadline of one redemption (and of one connection's reply) in milliseconds.
    pub timeout_ms: u64,
    /// Spends that may wait for a connection per server; beyond it redemptions fail at once.
    pub queue_depth: usize,
    /// Most spends sent in one write.
    pub max_batch: usize,
    /// How often `stats` is polled for evictions, in seconds.
    pub stats_interval_secs: u64,
}

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum)]
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
            request_timeout_ms: 10_000,
            header_timeout_ms: 5_000,
            max_connections: 1024,
            max_connections_per_peer: 256,
            allow_plain_http: false,
            tls: TlsConfig::default(),
        }
    }
}

impl Default for TokensConfig {
    fn default() -> Self {
        TokensConfig {
            fail_open: false,
            key_prefix: "ew:pp:".into(),
            default_ttl_secs: 7 * 24 * 3600,
            max_ttl_secs: 400 * 24 * 3600,
            embedded_max_records: 10_000_000,
            memcached: MemcachedConfig::default(),
        }
    }
}

impl Default for MemcachedConfig {
    fn default() -> Self {
        MemcachedConfig {
            servers: Vec::new(),
            replicas: 1,
            connections: 4,
            timeout_ms: 100,
            queue_depth: 8192,
            max_batch: 128,
            stats_interval_secs: 10,
        }
    }
}

impl TokensConfig {
    fn validate(&self) -> anyhow::Result<()> {
        let prefix = &self.key_prefix;
        if prefix.len() > 100 || !prefix.bytes().all(|b| b.is_ascii_graphic()) {
            anyhow::bail!(
                "tokens.key_prefix: {prefix:?} must be at most 100 printable ASCII characters \
                 without spaces (it starts memcached keys)"
            );
        }
        let m = &self.memcached;
        for server in &m.servers {
            let port = server
                .rsplit_once(':')
                .map(|(host, port)| (host, port.parse::<u16>()));
            if !matches!(port, Some((host, Ok(_))) if !host.is_empty()) {
                anyhow::bail!("tokens.memcached.servers: {server:?} is not host:port");
            }
        }
        if !m.servers.is_empty() && !(1..=m.servers.len()).contains(&m.replicas) {
            anyhow::bail!(
                "tokens.memcached.replicas: {} must be between 1 and the number of servers ({})",
                m.replicas,
                m.servers.len()
            );
        }
        for (name, value) in [
            ("connections", m.connections),
            ("queue_depth", m.queue_depth),
            ("max_batch", m.max_batch),
        ] {
            if value == 0 {
                anyhow::bail!("tokens.memcached.{name} must be at least 1");
            }
        }
        if m.timeout_ms == 0 {
            anyhow::bail!("tokens.memcached.timeout_ms must be at least 1");
        }
        Ok(())
    }
}

impl MemcachedConfig {
    /// The per-redemption deadline.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.max(1))
    }

    /// The eviction poll interval.
    pub fn stats_interval(&self) -> Duration {
        Duration::from_secs(self.stats_interval_secs.max(1))
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
    #[arg(long, env = "EDGEWISED_LISTEN", global = true)]
    pub listen: Option<SocketAddr>,
    /// Seconds in-flight requests get to finish on shutdown.
    #[arg(long, env = "EDGEWISED_SHUTDOWN_GRACE_SECS", global = true)]
    pub shutdown_grace_secs: Option<u64>,
    /// Log format.
    #[arg(long, env = "EDGEWISED_LOG_FORMAT", value_enum, global = true)]
    pub log_format: Option<LogFormat>,
    /// Log filter directive (RUST_LOG syntax).
    #[arg(long, env = "EDGEWISED_LOG", global = true)]
    pub log_filter: Option<String>,
    /// File holding the `/v1` API bearer secret.
    #[arg(long, env = "EDGEWISED_API_SECRET_FILE", global = true)]
    pub api_secret_file: Option<PathBuf>,
    /// memcached servers for the token cache, comma-separated `host:port` list.
    #[arg(
        long,
        env = "EDGEWISED_MEMCACHED",
        value_delimiter = ',',
        global = true
    )]
    pub memcached: Option<Vec<String>>,
    /// Accept tokens the token cache could not decide on because of a transient I/O fault
    /// (unsafe; logged and counted).
    #[arg(long, env = "EDGEWISED_TOKENS_FAIL_OPEN", global = true)]
    pub tokens_fail_open: Option<bool>,
    /// Host table file served at `GET /v1/hosts`.
    #[arg(long, env = "EDGEWISED_HOSTS_FILE", global = true)]
    pub hosts_file: Option<PathBuf>,
    /// Feature store directory.
    #[arg(long, env = "EDGEWISED_FEATURES_DIR", global = true)]
    pub features_dir: Option<PathBuf>,
    /// Directory watched for feature snapshot files.
    #[arg(long, env = "EDGEWISED_FEATURES_INGEST_DIR", global = true)]
    pub features_ingest_dir: Option<PathBuf>,
    /// Unix socket for memcached-protocol feature lookups.
    #[arg(long, env = "EDGEWISED_FEATURES_SOCKET", global = true)]
    pub features_socket: Option<PathBuf>,
    /// Any setting by its path in the config file, e.g. `--set tokens.memcached.timeout_ms=50`
    /// (a TOML value; bare words are strings). Repeatable. Environment variables
    /// `EDGEWISED__TOKENS__MEMCACHED__TIMEOUT_MS=50` do the same, and lose to `--set`.
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    pub set: Vec<String>,
}

impl Config {
    /// Parses a TOML document; unknown keys are errors so that typos do not pass silently.
    pub fn from_toml(text: &str) -> anyhow::Result<Config> {
        Ok(toml::from_str(text)?)
    }

    /// Reads and parses a config file.
    pub fn from_file(path: &Path) -> anyhow::Result<Config> {
        Config::from_table(read_table(path)?, Some(path))
    }

    /// Defaults, overlaid by the file if one is given, then by `EDGEWISED__*` variables,
    /// `--set` assignments and the named flags (and their variables), in that order.
    pub fn load(path: Option<&Path>, overrides: &Overrides) -> anyhow::Result<Config> {
        // `vars()` panics on any variable that is not UTF-8, ours or not (a daemon started
        // with `LANG`-encoded junk somewhere died at start): only ours are read.
        let mut ours = Vec::new();
        for (name, value) in std::env::vars_os() {
            let Some(name) = name.to_str().filter(|n| n.starts_with("EDGEWISED__")) else {
                continue;
            };
            let value = value
                .into_string()
                .map_err(|_| anyhow::anyhow!("{name} is not UTF-8"))?;
            ours.push((name.to_owned(), value));
        }
        Config::load_with_env(path, ours, overrides)
    }

    /// [`Config::load`] with the environment given rather than read.
    pub fn load_with_env(
        path: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
        overrides: &Overrides,
    ) -> anyhow::Result<Config> {
        let mut doc = match path {
            Some(path) => read_table(path)?,
            None => toml::Table::new(),
        };
        overlay::apply(&mut doc, env, &overrides.set)?;
        let mut config = Config::from_table(doc, path)?;
        config.apply(overrides);
        config.validate()?;
        Ok(config)
    }

    /// The fields of a parsed document (`path`: the file it came from, for the error).
    fn from_table(doc: toml::Table, path: Option<&Path>) -> anyhow::Result<Config> {
        doc.try_into().with_context(|| match path {
            Some(path) => format!("parsing config file {}", path.display()),
            None => "parsing settings".to_owned(),
        })
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
        if let Some(file) = &o.api_secret_file {
            self.api.secret_file = Some(file.clone());
        }
        if let Some(servers) = &o.memcached {
            self.tokens.memcached.servers.clone_from(servers);
        }
        if let Some(fail_open) = o.tokens_fail_open {
            self.tokens.fail_open = fail_open;
        }
        if let Some(file) = &o.hosts_file {
            self.hosts.file = Some(file.clone());
        }
        if let Some(dir) = &o.features_dir {
            self.features.dir = Some(dir.clone());
        }
        if let Some(dir) = &o.features_ingest_dir {
            self.features.ingest_dir = Some(dir.clone());
        }
        if let Some(socket) = &o.features_socket {
            self.features.socket = Some(socket.clone());
        }
    }

    /// Checks what the types cannot: names, ranges, addresses.
    pub fn validate(&self) -> anyhow::Result<()> {
        if self.server.request_timeout_ms == 0 || self.server.header_timeout_ms == 0 {
            anyhow::bail!("server.request_timeout_ms and header_timeout_ms must be at least 1");
        }
        Connections::check("server.max_connections", self.server.max_connections)?;
        Connections::check(
            "server.max_connections_per_peer",
            self.server.max_connections_per_peer,
        )?;
        self.server.tls.validate()?;
        let listen = self.server.listen;
        if !listen.ip().is_loopback() && !self.server.tls.enabled() && !self.server.allow_plain_http
        {
            anyhow::bail!(
                "server.listen {listen} is off loopback, where the bearer secret and every token \
                 would cross the network in the clear: configure [server.tls] (cert_file and \
                 key_file), or set server.allow_plain_http = true when a TLS proxy or tunnel on \
                 a private link sits in front"
            );
        }
        self.workspace.mode()?;
        self.tokens.validate()?;
        self.features.validate()
    }

    /// Why the API's listen address needs TLS in front of it, if it does: it is plain HTTP
    /// (`server.allow_plain_http`), and off this machine the bearer secret and every token
    /// cross a network in the clear.
    pub fn plaintext_warning(&self) -> Option<String> {
        let listen = self.server.listen;
        (!listen.ip().is_loopback() && !self.server.tls.enabled()).then(|| {
            format!(
                "the API listens in plain HTTP on {listen}, off this machine: the bearer secret \
                 and every token cross the network in the clear; keep the port on a private \
                 link behind a TLS proxy or tunnel, or configure [server.tls]"
            )
        })
    }

    /// The longest a request may take.
    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.server.request_timeout_ms)
    }

    /// The longest a connection may take to send a request's headers.
    pub fn header_timeout(&self) -> Duration {
        Duration::from_millis(self.server.header_timeout_ms)
    }

    /// The drain deadline after a shutdown signal.
    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.server.shutdown_grace_secs)
    }
}

/// A config file's syntax, before its fields are checked.
fn read_table(path: &Path) -> anyhow::Result<toml::Table> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("parsing config file {}", path.display()))
}

#[cfg(test)]
mod tests;
