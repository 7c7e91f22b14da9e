//! edgewise edge worker.
//!
//! Per request: map the incoming URL onto the configured origin, forward method, headers and
//! body, and hand the origin's response back. Failures become short plain-text 5xx answers
//! (the reason goes to the log); the worker never panics on input.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use edgewise::Origin;
use worker::{
    Context, Env, Fetch, Request, RequestInit, RequestRedirect, Response, Result, console_error,
    event, wasm_bindgen::JsValue,
};

mod failure;

use failure::Failure;

/// The wrangler var naming the origin base URL.
const ORIGIN_URL: &str = "ORIGIN_URL";

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
    let origin = configured_origin(env)?;
    let url = req
        .url()
        .map_err(|_| Failure::BadRequest("unparseable URL"))?;
    let target = origin
        .upstream_url(url.path(), url.query())
        .map_err(Failure::Target)?;
    let upstream = upstream_request(&req, &target)?;
    Fetch::Request(upstream)
        .send()
        .await
        .map_err(|e| Failure::Origin(e.to_string()))
}

fn configured_origin(env: &Env) -> std::result::Result<Origin, Failure> {
    let raw = env
        .var(ORIGIN_URL)
        .map_err(|_| Failure::Config(format!("{ORIGIN_URL} is not set")))?
        .to_string();
    Origin::parse(&raw).map_err(|e| Failure::Config(format!("{ORIGIN_URL}: {e}")))
}

/// Builds the outbound request. The body is handed over as the incoming JS stream, so it is
/// never copied into Wasm memory; redirects go back to the client as they came.
fn upstream_request(req: &Request, target: &str) -> std::result::Result<Request, Failure> {
    let mut init = RequestInit::new();
    init.with_method(req.method())
        .with_headers(req.headers().clone())
        .with_redirect(RequestRedirect::Manual)
        .with_body(req.inner().body().map(JsValue::from));
    Request::new_with_init(target, &init).map_err(|e| Failure::Internal(e.to_string()))
}
