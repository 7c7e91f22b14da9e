//! In-runtime timing of the worker's steps, and the token verifiers side by side (cargo
//! feature `bench` only; never in a deployed worker).
//!
//! Outside the runtime the JS side of a step (enumerating a `Headers`, copying strings into
//! Wasm, WebCrypto) cannot be measured, and end-to-end request latency through Miniflare is too
//! noisy to show a few microseconds. Local workerd lets `Date.now()` advance during a request,
//! so these handlers run each part of a step in a loop on the request's own headers.
//!
//! - `GET /__edgewise/bench/strip?n=N`: the strip step's parts, microseconds each.
//! - `GET /__edgewise/bench/token?n=N`: the token check (header, decoding, challenge and key,
//!   WebCrypto signature), the Rust verifier, and WebCrypto's verify alone, on the request's
//!   token (one that verifies with a 48-byte salt).
//! - `GET /__edgewise/bench/verify`: both verifiers' verdicts on the request's token.

use std::hint::black_box;

use edgewise::{HeaderSet, TOKEN_SCRATCH_LEN, Token, TokenError};
use wasm_bindgen::{JsValue, prelude::wasm_bindgen};
use web_sys::Request;
use worker::{
    Response, Url,
    js_sys::{Date, Promise},
    wasm_bindgen_futures::JsFuture,
};

use crate::{config::Config, crossing, failure::Failure, scratch, strip, token::TokenPolicy};

#[wasm_bindgen(inline_js = r#"
export async function webcrypto_verify_us(spki, signature, message, n) {
  const key = await crypto.subtle.importKey(
    "spki", spki.slice(), { name: "RSA-PSS", hash: "SHA-384" }, false, ["verify"]);
  const sig = signature.slice(), msg = message.slice();
  const start = Date.now();
  for (let i = 0; i < n; i++) {
    if (!(await crypto.subtle.verify({ name: "RSA-PSS", saltLength: 48 }, key, sig, msg))) {
      throw new Error("the token does not verify with a 48-byte salt");
    }
  }
  return (Date.now() - start) * 1000 / n;
}
"#)]
extern "C" {
    /// Microseconds per `crypto.subtle.verify` of `signature`, the key imported once.
    fn webcrypto_verify_us(spki: &[u8], signature: &[u8], message: &[u8], n: u32) -> Promise;
}

/// Where the timed outbound requests would go: they are built, never sent.
const TARGET: &str = "http://upstream.invalid/";

/// The answer for a bench path, `None` for any other request.
pub(crate) async fn handle(req: &Request, config: &Config) -> Option<Response> {
    let url = Url::parse(&req.url()).ok()?;
    let body = match url.path() {
        "/__edgewise/bench/strip" => strip(req, &url, config),
        "/__edgewise/bench/token" => token(req, &url, config.tokens.as_ref()?).await,
        "/__edgewise/bench/verify" => verify(req, config.tokens.as_ref()?).await,
        _ => return None,
    };
    Some(match body {
        Ok(body) => Response::ok(body).ok()?,
        Err(e) => Response::error(e, 500).ok()?,
    })
}

fn iterations(url: &Url) -> u32 {
    url.query_pairs()
        .find_map(|(k, v)| (k == "n").then(|| v.parse::<u32>().ok()).flatten())
        .unwrap_or(1000)
        .max(1)
}

fn per_op(n: u32, f: &mut dyn FnMut()) -> f64 {
    let start = Date::now();
    for _ in 0..n {
        f();
    }
    us_since(start, n)
}

/// Microseconds per operation of `n` since `start` (`Date::now()` milliseconds).
fn us_since(start: f64, n: u32) -> f64 {
    (Date::now() - start) * 1000.0 / f64::from(n)
}

/// The request's token, decoded (no check yet).
fn decoded<'s>(
    req: &Request,
    scratch: &'s mut [u8; TOKEN_SCRATCH_LEN],
) -> Result<Token<'s>, TokenError> {
    let value = req
        .headers()
        .get("authorization")
        .ok()
        .flatten()
        .unwrap_or_default();
    Token::from_authorization(value.as_bytes(), scratch)
}

async fn token(req: &Request, url: &Url, policy: &TokenPolicy) -> Result<String, String> {
    let n = iterations(url);
    let mut workspace = scratch::take(edgewise::ScrubMode::Watermark);
    // An await of a settled promise from Rust: the floor of any WebCrypto call's glue.
    let start = Date::now();
    for _ in 0..n {
        black_box(
            JsFuture::from(Promise::resolve(&JsValue::TRUE))
                .await
                .is_ok(),
        );
    }
    let settled = us_since(start, n);
    let start = Date::now();
    for _ in 0..n {
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        policy
            .check(&req.headers(), &mut arena)
            .await
            .map_err(|e| e.to_string())?;
    }
    let check = us_since(start, n);
    // The steps before the signature: the header into the workspace, decoding, challenge and key.
    let before_signature = per_op(n, &mut || {
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        let value = crossing::header_value_in(&req.headers(), "authorization", &mut arena);
        let token = value.ok().flatten().map(|v| policy.decode(v, &mut arena));
        black_box(token.is_some_and(|t| t.is_ok_and(|t| policy.signer(&t).is_ok())));
    });
    let mut scratch = [0; TOKEN_SCRATCH_LEN];
    let token = decoded(req, &mut scratch).map_err(|e| e.to_string())?;
    let key = policy.signer(&token).map_err(|e| e.to_string())?;
    let start = Date::now();
    for _ in 0..n {
        black_box(policy.webcrypto_verifies(key, &token).await);
    }
    let signature = us_since(start, n);
    let webcrypto = JsFuture::from(webcrypto_verify_us(
        key.rsa_spki(),
        token.authenticator(),
        token.input(),
        n,
    ))
    .await
    .map_err(|e| format!("{e:?}"))?
    .as_f64()
    .ok_or("no timing")?;
    let rust = per_op(n, &mut || {
        black_box(policy.verify_in_rust(&token).is_ok());
    });
    Ok(format!(
        r#"{{"n":{n},"checkUs":{check:.3},"beforeSignatureUs":{before_signature:.3},"signatureUs":{signature:.3},"settledAwaitUs":{settled:.3},"webcryptoVerifyUs":{webcrypto:.3},"rustVerifyUs":{rust:.3}}}"#
    ))
}

/// `{"rust": verdict, "webcrypto": verdict}`, each `"valid"` or why the token is refused.
async fn verify(req: &Request, policy: &TokenPolicy) -> Result<String, String> {
    let mut scratch = [0; TOKEN_SCRATCH_LEN];
    let rust = decoded(req, &mut scratch)
        .and_then(|token| policy.verify_in_rust(&token))
        .map_or_else(|e| e.to_string(), |()| "valid".to_owned());
    let mut workspace = scratch::take(edgewise::ScrubMode::Watermark);
    let mut scope = workspace.begin();
    let mut arena = scope.arena();
    let webcrypto = match policy.check(&req.headers(), &mut arena).await {
        Ok(_) => "valid".to_owned(),
        Err(Failure::TokenInvalid(e, _)) => e.to_string(),
        Err(other) => other.to_string(),
    };
    serde_json::to_string(&serde_json::json!({ "rust": rust, "webcrypto": webcrypto }))
        .map_err(|e| e.to_string())
}

fn strip(req: &Request, url: &Url, config: &Config) -> Result<String, String> {
    let n = iterations(url);
    let headers = req.headers();
    let set = &config.request_strip;
    let per_op = |f: &mut dyn FnMut()| per_op(n, f);
    // Each decision runs in a request workspace and includes its scrub, as requests do.
    let mut workspace = scratch::take(config.scrub);
    let mut decide_in_workspace = |headers: &web_sys::Headers| {
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        black_box(strip::matches(set, headers, &mut arena).is_ok());
    };
    let decide = per_op(&mut || decide_in_workspace(&headers));
    let names_only = per_op(&mut || drop(black_box(crossing::header_names(&headers))));
    let copy = per_op(&mut || drop(black_box(web_sys::Headers::new_with_headers(&headers))));
    // The worker's own outbound request (method, headers, redirect mode, body), built with the
    // configured set and with an empty one, each in a workspace of its own as a request's is:
    // the difference is the whole strip step, decision and deletion.
    let none = HeaderSet::empty();
    let outbound = |strip: &HeaderSet| {
        let mut workspace = scratch::take(config.scrub);
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        let upstream = crate::upstream::request(req, TARGET, strip, false, &mut arena);
        black_box(upstream.is_ok());
    };
    let plain = per_op(&mut || outbound(&none));
    let stripped = per_op(&mut || outbound(set));
    Ok(format!(
        r#"{{"n":{n},"headers":{},"decideUs":{decide:.3},"namesCrossingUs":{names_only:.3},"headersCopyUs":{copy:.3},"outboundPlainUs":{plain:.3},"outboundStrippedUs":{stripped:.3}}}"#,
        crossing::header_names(&headers).lines().count()
    ))
}
