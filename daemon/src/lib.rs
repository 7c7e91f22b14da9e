//! edgewised, the edgewise sidecar daemon.
//!
//! The binary (`src/main.rs`) only parses the command line; everything it runs lives here so
//! that integration tests, benchmarks and future tools can drive the same code.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod auth;
mod config;
mod connections;
mod features;
mod hosts;
pub mod metrics;
mod server;
mod shutdown;
mod telemetry;
mod tls;
mod tokencache;
mod workspaces;

pub use api::{App, HOSTS_CONTENT_TYPE, HOSTS_VERSION_HEADER, router};
pub use auth::Auth;
pub use config::{
    ApiConfig, Config, FeaturesConfig, HostsConfig, LogConfig, LogFormat, MemcachedConfig,
    Overrides, ServerConfig, SourceConfig, TlsConfig, TokensConfig, WorkspaceSettings,
};
pub use features::{
    Change, ChangeError, Delete, Features, Manifest, PublishError, Published as FeaturesPublished,
    Pushed, Upsert, check_source, push as push_snapshot, read_snapshot_file,
};
pub use hosts::{HostTables, Published, Reload};
pub use server::Server;
pub use shutdown::signal as shutdown_signal;
pub use telemetry::{filter as log_filter, init as init_telemetry};
pub use tls::check as check_tls;
pub use tokencache::{Outcome, Spend, TokenCache};
pub use workspaces::{PooledWorkspace, WorkspacePool};
