//! Why a request could not be forwarded, and the answer the client gets for it.

use std::{fmt, rc::Rc};

use edgewise::TokenError;
use wasm_bindgen::{JsCast, JsValue};
use worker::{Response, Result, js_sys};

/// A request that could not be served. The client sees only a short fixed reason; the detail
/// (which may quote configuration or upstream errors) goes to the worker log.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The worker's configuration is unusable: every request fails until it is fixed.
    Config(String),
    /// The request cannot be mapped onto the origin.
    BadRequest(&'static str),
    /// The request's path or query cannot be forwarded.
    Target(edgewise::Error),
    /// The origin could not be reached or did not answer.
    Origin(String),
    /// The runtime refused to build the upstream request.
    Internal(String),
    /// The request's header names do not fit the request workspace.
    HeadersTooLarge(&'static str),
    /// A token-protected path without a token; carries the `WWW-Authenticate` challenge.
    TokenMissing(Rc<str>),
    /// A token that does not verify (the reason is logged, not sent).
    TokenInvalid(TokenError, Rc<str>),
    /// A valid token spent before.
    TokenSpent(Rc<str>),
    /// The daemon could not say whether the token is fresh: refuse (fail closed).
    TokenUnavailable(String),
    /// There is no host table to route by (never loaded, and the daemon cannot be reached).
    HostsUnavailable(String),
    /// The subset load balancer has no host for this request (no match, no fallback).
    NoHost,
}

impl Failure {
    fn status(&self) -> u16 {
        match self {
            Failure::Config(_) | Failure::Internal(_) => 500,
            Failure::BadRequest(_) | Failure::Target(_) => 400,
            Failure::Origin(_) => 502,
            Failure::TokenMissing(_) | Failure::TokenInvalid(..) | Failure::TokenSpent(_) => 401,
            Failure::TokenUnavailable(_) | Failure::HostsUnavailable(_) | Failure::NoHost => 503,
            Failure::HeadersTooLarge(_) => 431,
        }
    }

    fn public_reason(&self) -> &'static str {
        match self {
            Failure::Config(_) => "edgewise: worker misconfigured",
            Failure::BadRequest(_) | Failure::Target(_) => "edgewise: request cannot be forwarded",
            Failure::Origin(_) => "edgewise: origin unreachable",
            Failure::Internal(_) => "edgewise: internal error",
            Failure::TokenMissing(_) => "edgewise: token required",
            Failure::TokenInvalid(..) => "edgewise: token rejected",
            Failure::TokenSpent(_) => "edgewise: token already spent",
            Failure::TokenUnavailable(_) => "edgewise: token check unavailable",
            Failure::HostsUnavailable(_) | Failure::NoHost => "edgewise: no upstream available",
            Failure::HeadersTooLarge(_) => "edgewise: request headers too large",
        }
    }

    /// A fresh challenge goes with every 401, so the client can fetch a token and retry.
    fn challenge(&self) -> Option<&str> {
        match self {
            Failure::TokenMissing(c) | Failure::TokenInvalid(_, c) | Failure::TokenSpent(c) => {
                Some(c)
            }
            _ => None,
        }
    }

    pub(crate) fn response(&self) -> Result<Response> {
        let mut response = Response::error(self.public_reason(), self.status())?;
        let headers = response.headers_mut();
        headers.set("content-type", "text/plain; charset=utf-8")?;
        if let Some(challenge) = self.challenge() {
            headers.set("www-authenticate", challenge)?;
        }
        Ok(response)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, detail): (&str, &dyn fmt::Display) = match self {
            Failure::Config(d) => ("configuration", d),
            Failure::BadRequest(d) => ("bad request", d),
            Failure::Target(d) => ("bad request", d),
            Failure::Origin(d) => ("origin", d),
            Failure::Internal(d) => ("internal", d),
            Failure::TokenMissing(_) => ("token", &"no Authorization header"),
            Failure::TokenInvalid(e, _) => ("token", e),
            Failure::TokenSpent(_) => ("token", &"spent before (double spend refused)"),
            Failure::TokenUnavailable(d) => ("token cache", d),
            Failure::HeadersTooLarge(d) => ("request headers", d),
            Failure::HostsUnavailable(d) => ("host table", d),
            Failure::NoHost => ("routing", &"no host matches and no fallback applies"),
        };
        write!(f, "{} ({what}): {detail}", self.status())
    }
}

/// What a JS exception says: an `Error`'s message, or the value itself.
pub(crate) fn js_error(error: &JsValue) -> String {
    match error.dyn_ref::<js_sys::Error>() {
        Some(error) => String::from(error.message()),
        None => format!("{error:?}"),
    }
}
