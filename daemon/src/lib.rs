//! edgewised, the edgewise sidecar daemon.
//!
//! The binary (`src/main.rs`) only parses the command line; everything it runs lives here so
//! that integration tests and future tools can drive the same code.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

mod config;
mod server;
mod shutdown;
mod telemetry;

pub use config::{Config, LogConfig, LogFormat, Overrides, ServerConfig};
pub use server::{Server, router};
pub use shutdown::signal as shutdown_signal;
pub use telemetry::init as init_telemetry;
