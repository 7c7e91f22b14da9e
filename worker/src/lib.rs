//! edgewise edge worker.
//!
//! Per request: check the Privacy Pass token where required, pick the origin (the configured
//! one, or a host of the host table by subset routing), strip internal headers, forward method,
//! headers and body (once more to another host of the subset if the first cannot be reached),
//! strip internal headers from the origin's response and return it. Failures
//! become short plain-text 4xx/5xx answers (the reason goes to the log); the worker never panics
//! on input.

// Input from outside must be handled, not unwrapped.
#![deny(clippy::unwrap_used, clippy::expect_used)]

use web_sys::{Request, Response};
use worker::{Context, Env, Result, Url, console_error, event};

#[cfg(feature = "bench")]
mod bench;
mod config;
mod crossing;
mod daemon;
mod failure;
mod route;
mod scratch;
mod strip;
mod token;
mod upstream;
mod webcrypto;

use config::Config;
use edgewise::{Arena, Origin};
use failure::Failure;

/// The request and response stay the runtime's own objects: `worker::Request` and
/// `worker::Response` read each one's `cf` properties on conversion, which the runtime builds
/// from a serialized blob on every read.
#[event(fetch)]
async fn fetch(req: Request, env: Env, _ctx: Context) -> Result<Response> {
    match forward(req, &env).await {
        Ok(response) => Ok(response),
        Err(failure) => {
            console_error!("edgewise: {failure}");
            failure.response().map(Response::from)
        }
    }
}

async fn forward(req: Request, env: &Env) -> std::result::Result<Response, Failure> {
    let config = config::get(env).map_err(Failure::Config)?;
    #[cfg(feature = "bench")]
    if let Some(answer) = bench::handle(&req, &config).await {
        return Ok(answer.into());
    }
    let url = Url::parse(&req.url()).map_err(|_| Failure::BadRequest("unparseable URL"))?;
    // Dropped last, on every path out of this function: the scope scrubs the workspace, then
    // the workspace goes back to the isolate's free list.
    let mut workspace = scratch::take(config.scrub);
    let mut scope = workspace.begin();
    let mut arena = scope.arena();
    let token_checked = match &config.tokens {
        Some(policy) if policy.applies(url.path()) => {
            policy.admit(&req.headers(), &mut arena).await?;
            true
        }
        _ => false,
    };
    let hop = Hop {
        req: &req,
        url: &url,
        config: &config,
        token_checked,
    };
    let response = match &config.routing {
        None => {
            let origin = config
                .origin
                .as_ref()
                .ok_or_else(|| Failure::Config("no ORIGIN_URL".into()))?;
            hop.send(&req, origin, &mut arena).await?
        }
        Some(routing) => routed(&hop, routing, &mut arena).await?,
    };
    strip::response(&config.response_strip, response, &mut arena)
        .map_err(|e| Failure::Internal(e.to_owned()))
}

/// Sends to the host the subset load balancer picks; if it cannot be reached (the fetch fails,
/// or Cloudflare answers for it that it could not: [`unreached`]), once more to another host
/// of the same subset; either host's failure to answer counts toward its ejection
/// ([`edgewise::Outliers`]). A request body is teed first so the retry has one too, unless it is
/// declared larger than [`RETRY_BODY_LIMIT`]: that one is sent once.
async fn routed(
    hop: &Hop<'_>,
    routing: &route::Routing,
    arena: &mut Arena<'_>,
) -> std::result::Result<Response, Failure> {
    let first = routing.pick(hop.req, hop.url).await?;
    let resend = Resend::of(hop.req)?;
    let sent = hop.send(hop.req, &first.origin, arena).await;
    routing.report(&first, answered(&sent, hop.req, routing.gateway_errors()));
    let (failure, answer) = match sent {
        Ok(response) if !unreached(response.status()) => return Ok(response),
        Ok(response) => {
            let status = response.status();
            (
                Failure::Origin(format!("not reached: {status}")),
                Some(response),
            )
        }
        Err(failure) => (failure, None),
    };
    // The second host is picked only for a request that can be sent again: a pick takes a
    // turn (round robin) and counts a request in flight.
    let second = resend
        .request(hop.req)
        .and_then(|again| Some((routing.retry(&first)?, again)));
    let Some((second, again)) = second else {
        // No other host, or a request not to repeat: Cloudflare's own answer says more than
        // a 502.
        return answer.ok_or(failure);
    };
    console_error!(
        "edgewise: {failure}; retrying on {}",
        second.origin.as_str()
    );
    let sent = hop.send(again, &second.origin, arena).await;
    routing.report(&second, answered(&sent, hop.req, routing.gateway_errors()));
    sent
}

/// Whether a send's host answered (whatever it answered, or with `gateway_errors` anything but
/// 502, 503 or 504), if the send tells: a request the worker could not build says nothing of
/// the host, and neither does a failed fetch of a request with a body, which a client can make
/// fail by breaking off its upload (each such request would otherwise count against a host,
/// and a few in a row eject it).
fn answered(
    sent: &std::result::Result<Response, Failure>,
    req: &Request,
    gateway_errors: bool,
) -> Option<bool> {
    match sent {
        Ok(response) => {
            let status = response.status();
            let gateway = gateway_errors && matches!(status, 502..=504);
            Some(!unreached(status) && !gateway)
        }
        Err(Failure::Origin(_)) if req.body().is_none() => Some(false),
        Err(_) => None,
    }
}

/// What a retry may send.
enum Resend {
    /// The request again: it has no body.
    Same,
    /// A copy whose body is a tee of the request's.
    Teed(Request),
    /// Nothing: the request may not be repeated, or its body is of unknown length or
    /// declared too large to keep.
    Never,
}

impl Resend {
    fn of(req: &Request) -> std::result::Result<Resend, Failure> {
        // Only a request that may be repeated goes to a second host: a fetch also fails when
        // the connection breaks after the origin took the request, and an origin may answer
        // a 52x of its own (a POST was carried out on two origins). Decided here, before a
        // body is teed for a retry that would never be sent.
        if !idempotent(req) {
            return Ok(Resend::Never);
        }
        if req.body().is_none() {
            return Ok(Resend::Same);
        }
        if !declared_within_limit(req) {
            return Ok(Resend::Never);
        }
        let copy = req
            .clone()
            .map_err(|e| Failure::Internal(failure::js_error(&e)))?;
        Ok(Resend::Teed(copy))
    }

    fn request<'r>(&'r self, original: &'r Request) -> Option<&'r Request> {
        match self {
            Resend::Same => Some(original),
            Resend::Teed(copy) => Some(copy),
            Resend::Never => None,
        }
    }
}

/// The largest request body declared (`Content-Length`) that is kept for a retry. The copy is
/// a tee of the body stream: until the first try ends, the runtime holds in memory what that
/// try has read and the copy has not, up to the whole body, and a few concurrent large
/// uploads would fill the isolate's memory. A body of unknown length (chunked, or HTTP/2
/// without the header) is not teed either: it may be as large as the client likes.
const RETRY_BODY_LIMIT: u64 = 1 << 20;

/// Whether `req` declares the length of its body, at most [`RETRY_BODY_LIMIT`].
fn declared_within_limit(req: &Request) -> bool {
    let length = req.headers().get("content-length").ok().flatten();
    length
        .and_then(|l| l.trim().parse::<u64>().ok())
        .is_some_and(|l| l <= RETRY_BODY_LIMIT)
}

/// Whether `req`'s method is idempotent (RFC 9110 section 9.2.2): sent twice, it does what it
/// does once.
fn idempotent(req: &Request) -> bool {
    let method = req.method();
    matches!(
        method.as_str(),
        "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
    )
}

/// Whether `status` is Cloudflare's answer for an origin it did not send the request to: 521
/// connection refused, 522 connection timed out, 523 unreachable, 525 TLS handshake failed,
/// 526 invalid certificate, 530 origin DNS error. A worker's fetch of a host behind Cloudflare
/// gets these where a fetch elsewhere fails: retried as a failed connection is. Not 520 (an
/// empty or invalid answer) nor 524 (no answer in time): the origin may have acted on the
/// request, and only an idempotent one could be sent again.
fn unreached(status: u16) -> bool {
    matches!(status, 521 | 522 | 523 | 525 | 526 | 530)
}

/// One request on its way to an origin.
struct Hop<'r> {
    req: &'r Request,
    url: &'r Url,
    config: &'r Config,
    token_checked: bool,
}

impl Hop<'_> {
    /// Forwards `source` (the request, or its teed copy) to `origin`.
    async fn send(
        &self,
        source: &Request,
        origin: &Origin,
        arena: &mut Arena<'_>,
    ) -> std::result::Result<Response, Failure> {
        let target = origin
            .upstream_url(self.url.path(), self.url.query())
            .map_err(Failure::Target)?;
        let strip = &self.config.request_strip;
        let upstream = upstream::request(source, &target, strip, self.token_checked, arena)?;
        upstream::send(&upstream).await.map_err(Failure::Origin)
    }
}
