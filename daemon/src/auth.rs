//! Bearer-secret authentication of the `/v1` API.

use std::path::Path;

use anyhow::Context;
use edgewise::Secret;

use crate::config::ApiConfig;

/// Secrets shorter than this are configuration mistakes, not secrets.
const MIN_SECRET_LEN: usize = 16;

/// The configured secret, or none (then every authenticated request is refused).
#[derive(Debug, Clone)]
pub struct Auth {
    secret: Option<Secret<Box<[u8]>>>,
}

impl Auth {
    /// Reads the secret from `EDGEWISED_API_SECRET`, else from `[api] secret_file`.
    pub fn load(config: &ApiConfig) -> anyhow::Result<Auth> {
        let secret = match std::env::var("EDGEWISED_API_SECRET") {
            Ok(secret) => Some(secret),
            Err(std::env::VarError::NotUnicode(_)) => {
                anyhow::bail!("EDGEWISED_API_SECRET is not UTF-8")
            }
            Err(std::env::VarError::NotPresent) => match &config.secret_file {
                Some(path) => Some(read_secret(path)?),
                None => None,
            },
        };
        Auth::new(secret.as_deref())
    }

    /// An explicit secret (`None`: refuse everything).
    pub fn new(secret: Option<&str>) -> anyhow::Result<Auth> {
        let secret = secret.map(str::trim);
        if let Some(secret) = secret
            && secret.len() < MIN_SECRET_LEN
        {
            anyhow::bail!("the API secret must be at least {MIN_SECRET_LEN} characters");
        }
        if secret.is_none() {
            tracing::warn!(
                "no API secret configured (EDGEWISED_API_SECRET or [api] secret_file): \
                 every /v1 request will be refused"
            );
        }
        Ok(Auth {
            secret: secret.map(|s| Secret::new(s.as_bytes().into())),
        })
    }

    /// Whether an `Authorization` header value carries the secret.
    pub fn allows(&self, authorization: Option<&[u8]>) -> bool {
        let (Some(secret), Some(value)) = (&self.secret, authorization) else {
            return false;
        };
        let Some(presented) = strip_bearer(value) else {
            return false;
        };
        constant_time_eq(presented, secret.expose())
    }
}

fn read_secret(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path)
        .with_context(|| format!("reading the API secret file {}", path.display()))
}

fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| rest.trim_ascii())
}

/// Compares in time that depends only on the secret's length, never on where the first
/// difference is or on the presented value's length.
fn constant_time_eq(presented: &[u8], secret: &[u8]) -> bool {
    let mut diff = u8::from(presented.len() != secret.len());
    for (i, s) in secret.iter().enumerate() {
        diff |= s ^ presented.get(i).copied().unwrap_or(!s);
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests;
