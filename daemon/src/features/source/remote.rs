//! The object store a source URL names, built by `object_store` with the settings of
//! `[features.source]` over those of the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).

use std::{sync::Arc, time::Duration};

use anyhow::Context;
use object_store::{
    BackoffConfig, ClientOptions, ObjectStore, ObjectStoreScheme, RetryConfig,
    aws::AmazonS3Builder, azure::MicrosoftAzureBuilder, gcp::GoogleCloudStorageBuilder,
    http::HttpBuilder, path::Path,
};

use crate::config::SourceConfig;

/// Checks that a source's URL names an object store this daemon can read and that its
/// options are known, by building its client (nothing is sent).
pub fn check(config: &SourceConfig) -> anyhow::Result<()> {
    open(config).map(|_| ())
}

fn scheme(url: &str) -> anyhow::Result<(url::Url, ObjectStoreScheme, Path)> {
    let parsed = url::Url::parse(url).context("not a URL")?;
    let (scheme, prefix) = ObjectStoreScheme::parse(&parsed)
        .map_err(|_| anyhow::anyhow!("expected s3://, gs://, az:// or https://"))?;
    match scheme {
        ObjectStoreScheme::AmazonS3
        | ObjectStoreScheme::GoogleCloudStorage
        | ObjectStoreScheme::MicrosoftAzure
        | ObjectStoreScheme::Http => Ok((parsed, scheme, prefix)),
        _ => anyhow::bail!("expected s3://, gs://, az:// or https://"),
    }
}

/// The store and the prefix under it. Requests give up connecting after `request_timeout`
/// and any request after `download_timeout`; the client retries a failed request at most
/// twice, within `request_timeout`: the source's own loop retries with longer waits.
pub fn open(config: &SourceConfig) -> anyhow::Result<(Arc<dyn ObjectStore>, Path)> {
    // reqwest's rustls takes the process's provider: ring, as everywhere in the daemon. An
    // error means one is installed already.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (url, scheme, prefix) = scheme(&config.url)?;
    let request_timeout = Duration::from_millis(config.request_timeout_ms);
    let client = ClientOptions::new()
        .with_connect_timeout(request_timeout)
        .with_timeout(Duration::from_secs(config.download_timeout_secs));
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 2,
        retry_timeout: request_timeout,
    };
    // The environment first, as the vendors' SDKs read it (keys this client does not know are
    // skipped, as `from_env` does), then the configured options, which must all be known.
    let from_env = |prefix: &'static str| {
        std::env::vars()
            .filter(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k, v, false))
    };
    let configured = config
        .options
        .iter()
        .map(|(k, v)| (k.clone(), v.clone(), true));
    let settings = |prefix| from_env(prefix).chain(configured.clone());
    macro_rules! build {
        ($builder:ty, $env:literal, $url:expr) => {{
            let mut builder = <$builder>::new()
                .with_client_options(client)
                .with_retry(retry);
            for (key, value, required) in settings($env) {
                match key.to_ascii_lowercase().parse() {
                    Ok(key) => builder = builder.with_config(key, value),
                    Err(_) if required => {
                        anyhow::bail!("features.source.options: unknown setting {key:?}")
                    }
                    Err(_) => {}
                }
            }
            Arc::new(builder.with_url($url).build()?)
        }};
    }
    let store: Arc<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => build!(AmazonS3Builder, "AWS_", url.as_str()),
        ObjectStoreScheme::GoogleCloudStorage => {
            build!(GoogleCloudStorageBuilder, "GOOGLE_", url.as_str())
        }
        ObjectStoreScheme::MicrosoftAzure => build!(MicrosoftAzureBuilder, "AZURE_", url.as_str()),
        _ => build!(HttpBuilder, "HTTP_", &url[..url::Position::BeforePath]),
    };
    Ok((store, prefix))
}

/// `name` under `prefix`.
pub fn under(prefix: &Path, name: &str) -> Path {
    name.split('/').fold(prefix.clone(), Path::join)
}
