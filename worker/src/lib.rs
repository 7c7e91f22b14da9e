//! edgewise edge worker.
//!
//! Per request: strip internal headers, map the URL onto the configured origin, forward method,
//! headers and body, strip internal headers from the origin's response and return it. Failures
//! become short plain-text 4xx/5xx answers (the reason goes to the log); the worker never panics
//! on input.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use worker::{
    Context, Env, Fetch, Headers, Request, RequestInit, RequestRedirect, Response, Result,
    console_error, event, wasm_bindgen::JsValue,
};

#[cfg(feature = "bench")]
mod bench;
mod config;
mod daemon;
mod failure;
mod scratch;
mod strip;
mod token;

use config::Config;
use edgewise::Arena;
use failure::Failure;

#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    match forward(req, &env).await {
        Ok(response) => Ok(response),
        Err(failure) => {
            console_error!("edgewise: {failure}");
            failure.response()
        }
    }
}

async fn forward(req: Request, env: &Env) -> std::result::Result<Response, Failure> {
    let config = config::get(env).map_err(Failure::Config)?;
    #[cfg(feature = "bench")]
    if let Some(timings) = bench::strip(&req, &config) {
        return Ok(timings);
    }
    let url = req
        .url()
        .map_err(|_| Failure::BadRequest("unparseable URL"))?;
    let target = config
        .origin
        .upstream_url(url.path(), url.query())
        .map_err(Failure::Target)?;
    // Dropped last, on every path out of this function: the scope scrubs the workspace, then
    // the workspace goes back to the isolate's free list.
    let mut workspace = scratch::take(config.scrub);
    let mut scope = workspace.begin();
    let mut arena = scope.arena();
    let token_checked = match &config.tokens {
        Some(policy) if policy.applies(url.path()) => {
            policy.admit(req.headers(), &mut arena).await?;
            true
        }
        _ => false,
    };
    let upstream = upstream_request(&req, &target, &config, token_checked, &mut arena)?;
    let response = Fetch::Request(upstream)
        .send()
        .await
        .map_err(|e| Failure::Origin(e.to_string()))?;
    strip::response(&config.response_strip, response, &mut arena)
        .map_err(|e| Failure::Internal(e.to_owned()))
}

/// Builds the outbound request. The runtime copies the incoming headers into it, and internal
/// ones are deleted from that copy; the body is handed over as the incoming JS stream, so it is
/// never copied into Wasm memory; redirects go back to the client as they came. The token of a
/// token-checked request is the client's credential for edgewise, not for the origin: dropped.
fn upstream_request(
    req: &Request,
    target: &str,
    config: &Config,
    token_checked: bool,
    arena: &mut Arena<'_>,
) -> std::result::Result<Request, Failure> {
    // A handle to the incoming headers, not a copy of them.
    let incoming = req.inner().headers();
    let internal = strip::matches(&config.request_strip, &incoming, arena)
        .map_err(Failure::HeadersTooLarge)?;
    let mut init = RequestInit::new();
    init.with_method(req.method())
        .with_headers(Headers(incoming))
        .with_redirect(RequestRedirect::Manual)
        .with_body(req.inner().body().map(JsValue::from));
    let upstream =
        Request::new_with_init(target, &init).map_err(|e| Failure::Internal(e.to_string()))?;
    let outbound = upstream.inner().headers();
    if let Some(internal) = internal {
        internal.delete_from(&outbound);
    }
    if token_checked {
        outbound
            .delete("authorization")
            .map_err(|e| Failure::Internal(format!("{e:?}")))?;
    }
    Ok(upstream)
}
