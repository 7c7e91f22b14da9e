//! In-runtime timing of the strip step (cargo feature `bench` only).
//!
//! Outside the runtime the JS side of the strip step (enumerating a `Headers`, copying strings
//! into Wasm) cannot be measured, and end-to-end request latency through Miniflare is too noisy
//! to show a few microseconds. Local workerd lets `Date.now()` advance during a request, so
//! this handler runs each part of the step in a loop on the request's own headers.

use std::hint::black_box;

use worker::{Headers, Request, RequestInit, Response, js_sys::Date};

use crate::{config::Config, scratch, strip};

const PATH: &str = "/__edgewise/bench/strip";

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
    let names_only = per_op(&mut || drop(black_box(strip::header_names(&headers))));
    let copy = per_op(&mut || drop(black_box(Headers(headers.clone()).clone())));
    let headers = &headers;
    let outbound = |delete: bool| {
        move || {
            let mut init = RequestInit::new();
            init.with_headers(Headers(headers.clone()));
            if let Ok(upstream) = Request::new_with_init("http://upstream.invalid/", &init) {
                // The plain request neither decides nor takes a workspace: it is the baseline
                // the whole strip step (decision and deletion) is measured against.
                if delete {
                    let mut workspace = scratch::take(config.scrub);
                    let mut scope = workspace.begin();
                    let mut arena = scope.arena();
                    if let Ok(Some(m)) = strip::matches(set, headers, &mut arena) {
                        m.delete_from(&upstream.inner().headers());
                    }
                }
                black_box(upstream);
            }
        }
    };
    let plain = per_op(&mut outbound(false));
    let stripped = per_op(&mut outbound(true));
    let body = format!(
        r#"{{"n":{n},"headers":{},"decideUs":{decide:.3},"namesCrossingUs":{names_only:.3},"headersCopyUs":{copy:.3},"outboundPlainUs":{plain:.3},"outboundStrippedUs":{stripped:.3}}}"#,
        strip::header_names(headers).lines().count()
    );
    Response::ok(body).ok()
}
