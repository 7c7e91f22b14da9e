//! `edgewised`: command-line entry point.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
};

use anyhow::Context;

use clap::{Parser, Subcommand};
use edgewise_daemon::{
    Auth, Config, HostTables, Overrides, Server, SourceConfig, check_source, check_tls,
    init_telemetry, log_filter, push_snapshot, shutdown_signal,
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
    /// Feature snapshots in object storage.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
}

#[derive(Debug, Subcommand)]
enum SnapshotCommand {
    /// Upload a snapshot file (.parquet, .csv or .ewfs) and point the manifest at it; every
    /// daemon polling the source then publishes it. Credentials and client settings come from
    /// the environment and `[features.source]` of --config.
    Push {
        /// The snapshots' prefix, e.g. s3://bucket/features (default: features.source.url).
        #[arg(long)]
        source: Option<String>,
        /// Table of rows that do not name one (default: the file's name without extension).
        #[arg(long)]
        table: Option<String>,
        /// The snapshot file.
        file: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Some(Command::CheckConfig { path }) => check_config(path, &cli.overrides),
        Some(Command::Snapshot(SnapshotCommand::Push {
            source,
            table,
            file,
        })) => push(&cli, source.as_deref(), table.as_deref(), file),
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

fn push(cli: &Cli, url: Option<&str>, table: Option<&str>, file: &Path) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref(), &cli.overrides)?;
    let mut source = match (config.features.source, url) {
        (Some(source), _) => source,
        (None, Some(url)) => SourceConfig::new(url),
        (None, None) => anyhow::bail!("no source: give --source or features.source.url"),
    };
    if let Some(url) = url {
        source.url = url.to_owned();
    }
    check_source(&source).with_context(|| format!("--source {:?}", source.url))?;
    let max_bytes = config.features.max_ingest_bytes;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let pushed = runtime.block_on(push_snapshot(&source, file, table, max_bytes))?;
    println!("{}", serde_json::to_string_pretty(&pushed.manifest)?);
    eprintln!(
        "edgewised: pushed version {} ({} rows, {} bytes)",
        pushed.manifest.version, pushed.rows, pushed.manifest.size
    );
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
