//! In-runtime timing of the strip step (cargo feature `bench` only).
//!
//! Outside the runtime the JS side of the strip step (enumerating a `Headers`, copying strings
//! into Wasm) cannot be measured, and end-to-end request latency through Miniflare is too noisy
//! to show a few microseconds. Local workerd lets `Date.now()` advance during a request, so
//! this handler runs each part of the step in a loop on the request's own headers.

use std::hint::black_box;

use edgewise::HeaderSet;
use worker::{Headers, Request, Response, js_sys::Date};

use crate::{config::Config, crossing, scratch, strip};

const PATH: &str = "/__edgewise/bench/strip";

/// Where the timed outbound requests would go: they are built, never sent.
const TARGET: &str = "http://upstream.invalid/";

/// Timings as JSON (microseconds per operation) for `GET /__edgewise/bench/strip?n=N`.
pub(crate) fn strip(req: &Request, config: &Config) -> Option<Response> {
    let url = req.url().ok()?;
    if url.path() != PATH {
        return None;
    }
    let n = url
        .query_pairs()
        .find_map(|(k, v)| (k == "n").then(|| v.parse::<u32>().ok()).flatten())
        .unwrap_or(1000)
        .max(1);
    let headers = req.inner().headers();
    let set = &config.request_strip;
    let per_op = |f: &mut dyn FnMut()| {
        let start = Date::now();
        for _ in 0..n {
            f();
        }
        (Date::now() - start) * 1000.0 / f64::from(n)
    };
    // Each decision runs in a request workspace and includes its scrub, as requests do.
    let mut workspace = scratch::take(config.scrub);
    let mut decide_in_workspace = |headers: &web_sys::Headers| {
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        black_box(strip::matches(set, headers, &mut arena).is_ok());
    };
    let decide = per_op(&mut || decide_in_workspace(&headers));
    let names_only = per_op(&mut || drop(black_box(crossing::header_names(&headers))));
    let copy = per_op(&mut || drop(black_box(Headers(headers.clone()).clone())));
    // The worker's own outbound request (method, headers, redirect mode, body), built with the
    // configured set and with an empty one, each in a workspace of its own as a request's is:
    // the difference is the whole strip step, decision and deletion.
    let none = HeaderSet::empty();
    let outbound = |strip: &HeaderSet| {
        let mut workspace = scratch::take(config.scrub);
        let mut scope = workspace.begin();
        let mut arena = scope.arena();
        let upstream = crate::upstream_request(req, TARGET, strip, false, &mut arena);
        black_box(upstream.is_ok());
    };
    let plain = per_op(&mut || outbound(&none));
    let stripped = per_op(&mut || outbound(set));
    let body = format!(
        r#"{{"n":{n},"headers":{},"decideUs":{decide:.3},"namesCrossingUs":{names_only:.3},"headersCopyUs":{copy:.3},"outboundPlainUs":{plain:.3},"outboundStrippedUs":{stripped:.3}}}"#,
        crossing::header_names(&headers).lines().count()
    );
    Response::ok(body).ok()
}
