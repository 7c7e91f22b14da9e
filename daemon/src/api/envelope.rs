//! What every request passes through: a deadline, and its endpoint's count by status class and
//! latency histogram on `/metrics`.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use axum::{
    extract::{MatchedPath, Request, State},
    http::{StatusCode, header},
    middleware::Next,
    response::{IntoResponse, Response},
};

use super::{App, error};
use crate::metrics::{Counter, Exposition, Gauge, Histogram};

/// The routes `/metrics` reports one by one; anything else is `other` (404s, probes).
const ENDPOINTS: [&str; 7] = [
    "/healthz",
    "/readyz",
    "/metrics",
    "/v1/tokens/redeem",
    "/v1/hosts",
    "/v1/features",
    "/v1/features/{table}/{key}",
];

/// Per-endpoint request metrics and the request deadline.
#[derive(Debug)]
pub(crate) struct Traffic {
    timeout: Duration,
    /// One per entry of [`ENDPOINTS`], then `other`.
    endpoints: [Endpoint; ENDPOINTS.len() + 1],
    in_flight: Gauge,
    timeouts: Counter,
}

#[derive(Debug, Default)]
struct Endpoint {
    /// By status class: 1xx .. 5xx.
    codes: [Counter; 5],
    latency: Histogram,
}

impl Traffic {
    pub(crate) fn new(timeout: Duration) -> Traffic {
        Traffic {
            timeout,
            endpoints: Default::default(),
            in_flight: Gauge::default(),
            timeouts: Counter::default(),
        }
    }

    fn endpoint(&self, matched: Option<&MatchedPath>) -> &Endpoint {
        let i = matched
            .and_then(|m| ENDPOINTS.iter().position(|e| *e == m.as_str()))
            .unwrap_or(ENDPOINTS.len());
        &self.endpoints[i]
    }

    pub(crate) fn render(&self, page: &mut Exposition) {
        let names = ENDPOINTS.iter().copied().chain(["other"]);
        let rows: Vec<(&str, &Endpoint)> = names.zip(&self.endpoints).collect();
        let name = "edgewise_http_requests_total";
        page.family(
            name,
            "counter",
            "API requests by endpoint and status class.",
        );
        for (endpoint, stats) in &rows {
            for (class, counter) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().zip(&stats.codes) {
                page.sample(
                    name,
                    &[("endpoint", endpoint), ("code", class)],
                    counter.get(),
                );
            }
        }
        let name = "edgewise_http_request_duration_seconds";
        page.family(name, "histogram", "API request latency by endpoint.");
        for (endpoint, stats) in &rows {
            page.histogram(name, &[("endpoint", endpoint)], &stats.latency);
        }
        page.gauge(
            "edgewise_http_requests_in_flight",
            "API requests being served.",
            self.in_flight.get(),
        );
        page.counter(
            "edgewise_http_request_timeouts_total",
            "API requests cut off by server.request_timeout_ms (answered 408).",
            self.timeouts.get(),
        );
    }
}

impl Endpoint {
    fn record(&self, status: StatusCode, elapsed: Duration) {
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        self.codes[class].inc();
        self.latency.observe(elapsed);
    }
}

/// The middleware: runs the request under the deadline and records it.
pub(crate) async fn envelope(
    State(app): State<Arc<App>>,
    request: Request,
    next: Next,
) -> Response {
    let traffic = &app.traffic;
    let endpoint = traffic.endpoint(request.extensions().get::<MatchedPath>());
    let started = Instant::now();
    let response = {
        let _in_flight = InFlight::enter(&traffic.in_flight);
        match tokio::time::timeout(traffic.timeout, next.run(request)).await {
            Ok(response) => response,
            Err(_) => {
                traffic.timeouts.inc();
                timed_out()
            }
        }
    };
    endpoint.record(response.status(), started.elapsed());
    response
}

/// A 408 that also closes the connection: the rest of a half-read body must not be taken for
/// the next request.
fn timed_out() -> Response {
    let mut response = error(StatusCode::REQUEST_TIMEOUT, "request took too long");
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response.into_response()
}

/// Counts a request in flight until dropped, also when the client goes away mid-request.
struct InFlight<'a>(&'a Gauge);

impl<'a> InFlight<'a> {
    fn enter(gauge: &'a Gauge) -> Self {
        gauge.inc();
        InFlight(gauge)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}
