//! Privacy Pass at the edge: requests to token-protected paths must carry a token
//! (`Authorization: PrivateToken token="..."`) for this deployment's challenge, signed by a
//! configured issuer key, and never spent before.
//!
//! The challenge and key are checked here, in Wasm, and the signature by the runtime's WebCrypto
//! ([`webcrypto`](crate::webcrypto)), so forged or foreign tokens cost no round trip; only valid
//! tokens go to the daemon, which spends each exactly once (memcached
//! set-if-absent). The daemon's answer decides: `fresh` passes, `spent` is a 401 with a new
//! challenge, and anything else -- an error, a timeout, an unexpected reply -- is a 503: the
//! check fails closed.

use std::{fmt::Write as _, rc::Rc};

use edgewise::{
    Arena, ArenaWriter, IssuerKey, ProtectedPaths, TOKEN_SCRATCH_LEN, TOKEN_TYPE_BLIND_RSA, Token,
    TokenChallenge, TokenError, Verifier, www_authenticate,
};
use worker::{Env, Method, Request, RequestInit, Response, wasm_bindgen::JsValue};

use crate::{
    config::{number, var},
    crossing,
    daemon::Daemon,
    failure::Failure,
    webcrypto,
};

/// What the worker needs to admit tokens, parsed once per isolate from the vars.
#[derive(Debug)]
pub(crate) struct TokenPolicy {
    paths: ProtectedPaths,
    verifier: Verifier,
    /// The verifier's keys, imported into WebCrypto.
    signatures: webcrypto::Keys,
    digest: [u8; 32],
    challenge: Rc<str>,
    redeem_url: String,
    daemon: Daemon,
}

/// Vars (and the secret) of the token check; see wrangler.toml for their documentation.
const TOKEN_PATHS: &str = "TOKEN_PATHS";
const ISSUER_NAME: &str = "ISSUER_NAME";
const ISSUER_KEYS: &str = "ISSUER_KEYS";
const TOKEN_ORIGIN_INFO: &str = "TOKEN_ORIGIN_INFO";
const TOKEN_MAX_AGE: &str = "TOKEN_MAX_AGE";

impl TokenPolicy {
    /// `Ok(None)` when no path requires a token.
    pub(crate) fn from_env(env: &Env) -> Result<Option<TokenPolicy>, String> {
        let paths = ProtectedPaths::parse(&var(env, TOKEN_PATHS)?.unwrap_or_default())
            .map_err(|e| format!("{TOKEN_PATHS}: {e}"))?;
        if paths.is_empty() {
            return Ok(None);
        }
        let required = |name: &str| {
            var(env, name)?.ok_or_else(|| format!("{name} is not set but {TOKEN_PATHS} is"))
        };
        let verifier = keys(&required(ISSUER_KEYS)?)?;
        // The first key listed is the one challenges advertise.
        let first = verifier
            .keys()
            .next()
            .ok_or_else(|| format!("{ISSUER_KEYS} lists no key"))?;
        let issuer = required(ISSUER_NAME)?;
        let origin_info = var(env, TOKEN_ORIGIN_INFO)?.unwrap_or_default();
        let challenge = TokenChallenge::new(
            TOKEN_TYPE_BLIND_RSA,
            issuer.as_bytes(),
            None,
            origin_info.as_bytes(),
        )
        .map_err(|e| format!("{ISSUER_NAME}/{TOKEN_ORIGIN_INFO}: {e}"))?;
        let max_age = number(env, TOKEN_MAX_AGE)?;
        let daemon = Daemon::from_env(env, TOKEN_PATHS)?;
        Ok(Some(TokenPolicy {
            paths,
            digest: challenge.digest(),
            challenge: www_authenticate(&challenge, Some(first), max_age).into(),
            signatures: webcrypto::Keys::new(verifier.keys()),
            verifier,
            redeem_url: daemon.url("/v1/tokens/redeem")?,
            daemon,
        }))
    }

    /// Whether `path` is token-protected: under a configured prefix by whole segments, as
    /// any origin may read it (`//private`, `/%70rivate` and `/PRIVATE` are `/private` to
    /// some; see [`ProtectedPaths::covers`]).
    pub(crate) fn applies(&self, path: &str) -> bool {
        self.paths.covers(path)
    }

    /// Admits the request if it carries a fresh, valid token. The decoded token and the
    /// redemption request are built in the request's workspace.
    pub(crate) async fn admit(
        &self,
        headers: &web_sys::Headers,
        arena: &mut Arena<'_>,
    ) -> Result<(), Failure> {
        let token = self.check(headers, arena).await?;
        match self.redeem(&token, arena).await? {
            Redeemed::Fresh => Ok(()),
            Redeemed::Spent => Err(Failure::TokenSpent(Rc::clone(&self.challenge))),
        }
    }

    /// The request's token if it is valid (spent or not), decoded in the workspace.
    pub(crate) async fn check<'w>(
        &self,
        headers: &web_sys::Headers,
        arena: &mut Arena<'w>,
    ) -> Result<Token<'w>, Failure> {
        // Into the workspace, which is scrubbed after the request: a token the daemon could not
        // spend (it was down) is still good, and a freed heap copy of it is not wiped.
        let value = crossing::header_value_in(headers, "authorization", arena)
            .map_err(|e| self.invalid(TokenError::MalformedHeader(e)))?;
        let Some(value) = value else {
            return Err(Failure::TokenMissing(Rc::clone(&self.challenge)));
        };
        let token = self.decode(value, arena)?;
        self.check_signature(&token).await?;
        Ok(token)
    }

    /// `value`, an `Authorization` header, decoded into the workspace.
    pub(crate) fn decode<'w>(
        &self,
        value: &str,
        arena: &mut Arena<'w>,
    ) -> Result<Token<'w>, Failure> {
        let scratch: &mut [u8; TOKEN_SCRATCH_LEN] = arena
            .alloc(TOKEN_SCRATCH_LEN)
            .and_then(|buf| buf.try_into().ok())
            .ok_or_else(|| Failure::Internal("workspace full".to_owned()))?;
        Token::from_authorization(value.as_bytes(), scratch).map_err(|e| self.invalid(e))
    }

    /// Every check of [`Verifier::verify`], the signature's by WebCrypto.
    async fn check_signature(&self, token: &Token<'_>) -> Result<(), Failure> {
        let key = self.signer(token)?;
        let valid = self
            .signatures
            .verify(key, token.input(), token.authenticator())
            .await
            .map_err(unavailable)?;
        if !valid {
            return Err(self.invalid(TokenError::BadSignature));
        }
        Ok(())
    }

    /// The key whose signature `token` must carry, after the checks made before the signature.
    pub(crate) fn signer(&self, token: &Token<'_>) -> Result<&IssuerKey, Failure> {
        self.verifier
            .signer(token, &[self.digest], now())
            .map_err(|e| self.invalid(e))
    }

    fn invalid(&self, error: TokenError) -> Failure {
        Failure::TokenInvalid(error, Rc::clone(&self.challenge))
    }

    async fn redeem(&self, token: &Token<'_>, arena: &mut Arena<'_>) -> Result<Redeemed, Failure> {
        let request = self.redeem_request(token, arena)?;
        let read = |mut response: Response| async move {
            let body = response.text().await.map_err(|e| e.to_string())?;
            Ok((response.status_code(), body))
        };
        let (status, body) = self.daemon.call(request, read).await.map_err(unavailable)?;
        match (status, body.as_str()) {
            (200, r#"{"outcome":"fresh"}"#) => Ok(Redeemed::Fresh),
            (200, r#"{"outcome":"spent"}"#) => Ok(Redeemed::Spent),
            _ => Err(unavailable(format!("daemon answered {status}: {body}"))),
        }
    }

    fn redeem_request(&self, token: &Token<'_>, arena: &mut Arena<'_>) -> Result<Request, Failure> {
        let not_after = self.verifier.not_after(token.token_key_id());
        let body = redeem_body(token, not_after, arena)
            .ok_or_else(|| Failure::Internal("workspace full".to_owned()))?;
        let headers = self.daemon.headers().map_err(Failure::Internal)?;
        headers
            .set("content-type", "application/json")
            .map_err(|e| Failure::Internal(e.to_string()))?;
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_body(Some(JsValue::from_str(body)));
        Request::new_with_init(&self.redeem_url, &init)
            .map_err(|e| Failure::Internal(e.to_string()))
    }
}

/// What the benchmarks and the verifiers' agreement test compare the worker's check with.
#[cfg(feature = "bench")]
impl TokenPolicy {
    /// The shared Rust verifier's verdict.
    pub(crate) fn verify_in_rust(&self, token: &Token<'_>) -> Result<(), TokenError> {
        self.verifier.verify(token, &[self.digest], now())
    }

    /// The WebCrypto signature check alone, through the same glue as [`check`](Self::check).
    pub(crate) async fn webcrypto_verifies(&self, key: &IssuerKey, token: &Token<'_>) -> bool {
        let verdict = self
            .signatures
            .verify(key, token.input(), token.authenticator());
        verdict.await.unwrap_or(false)
    }
}

enum Redeemed {
    Fresh,
    Spent,
}

fn unavailable(detail: String) -> Failure {
    Failure::TokenUnavailable(detail)
}

/// The daemon's redemption request: what identifies the token, never its signature.
fn redeem_body<'w>(
    token: &Token<'_>,
    not_after: Option<u64>,
    arena: &mut Arena<'w>,
) -> Option<&'w str> {
    let mut body = arena.writer();
    write!(
        body,
        r#"{{"token_type":{},"token_key_id":""#,
        token.token_type()
    )
    .ok()?;
    hex_into(&mut body, token.token_key_id())?;
    body.push(br#"","nonce":""#).ok()?;
    hex_into(&mut body, token.nonce())?;
    body.push(b"\"").ok()?;
    if let Some(not_after) = not_after {
        write!(body, r#","not_after":{not_after}"#).ok()?;
    }
    body.push(b"}").ok()?;
    std::str::from_utf8(body.commit()?).ok()
}

fn hex_into(out: &mut ArenaWriter<'_, '_>, bytes: &[u8]) -> Option<()> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for byte in bytes {
        out.push(&[
            DIGITS[usize::from(byte >> 4)],
            DIGITS[usize::from(byte & 15)],
        ])
        .ok()?;
    }
    Some(())
}

/// The entries of a comma- or whitespace-separated list var.
fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
}

/// Issuer keys: base64url SPKI, each followed by `@<not-after unix seconds>`, in the order
/// listed. The expiry is required: a token is spent once only while its spend record lives,
/// and records live until their key expires (a key without one gave its records the daemon's
/// default of 7 days, after which each token could be spent again).
fn keys(list: &str) -> Result<Verifier, String> {
    let mut verifier = Verifier::new();
    for entry in items(list) {
        let Some((key, at)) = entry.split_once('@') else {
            return Err(format!(
                "{ISSUER_KEYS}: a key without \"@<unix seconds>\", its expiry (spend records \
                 must outlive every token the key signed)"
            ));
        };
        let at = at
            .parse::<u64>()
            .map_err(|_| format!("{ISSUER_KEYS}: bad expiry {at:?}"))?;
        let key =
            IssuerKey::from_base64(key.as_bytes()).map_err(|e| format!("{ISSUER_KEYS}: {e}"))?;
        verifier.add_key(key, Some(at));
    }
    Ok(verifier)
}

fn now() -> u64 {
    worker::Date::now().as_millis() / 1000
}
