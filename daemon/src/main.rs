//! `edgewised`: command-line entry point.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::{path::PathBuf, process::ExitCode};

use clap::{Parser, Subcommand};
use edgewise_daemon::{
    Auth, Config, HostTables, Overrides, Server, check_tls, init_telemetry, log_filter,
    shutdown_signal,
};

/// edgewise sidecar daemon. Runs with no configuration at all; a TOML file, environment
/// variables and flags override the defaults, in that order.
#[derive(Debug, Parser)]
#[command(name = "edgewised", version)]
struct Cli {
    /// TOML configuration file.
    #[arg(long, env = "EDGEWISED_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(flatten)]
    overrides: Overrides,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Validate a configuration file and print the effective configuration.
    CheckConfig {
        /// The file to check.
        path: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Some(Command::CheckConfig { path }) => check_config(path, &cli.overrides),
        None => serve(&cli),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("edgewised: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn check_config(path: &std::path::Path, overrides: &Overrides) -> anyhow::Result<()> {
    let config = Config::load(Some(path), overrides)?;
    // What serve refuses, this refuses: the log filter, and the API secret (its file may exist
    // and not be readable by the service's user; the unit runs this check as that user).
    log_filter(&config.log)?;
    Auth::load(&config.api)?;
    check_tls(&config.server.tls)?;
    // The host table is part of the configuration: a typo there must fail the check too.
    let hosts = HostTables::load(&config.hosts)?;
    if let Some(table) = hosts.current() {
        println!(
            "host table: {} hosts, version {}",
            table.table.hosts.len(),
            table.table.version
        );
    }
    if let Some(warning) = config.plaintext_warning() {
        eprintln!("edgewised: warning: {warning}");
    }
    println!("{}: ok\n{config:#?}", path.display());
    Ok(())
}

fn serve(cli: &Cli) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref(), &cli.overrides)?;
    init_telemetry(&config.log)?;
    if let Some(warning) = config.plaintext_warning() {
        tracing::warn!("{warning}");
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let server = Server::bind(config).await?;
        server.run(shutdown_signal()).await
    })
}
