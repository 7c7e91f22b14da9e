//! The worker's client for `edgewised`: where it is, the bearer secret, and a deadline on
//! every call, answer read in full, so a slow daemon costs a request at most
//! `DAEMON_TIMEOUT_MS`.
//!
//! With an `mtls_certificates` binding named `DAEMON_MTLS`, calls go through the binding's
//! `fetch`, which presents its client certificate to a daemon that asks for one
//! (`[server.tls] client_ca_file`); without it, through the global `fetch`.

use std::time::Duration;

use edgewise::{Origin, Scheme, Secret};
use futures_util::future::{Either, select};
use wasm_bindgen::JsValue;
use worker::{
    AbortController, AbortSignal, Delay, Env, Fetch, Fetcher, Headers, Request, Response,
};

use crate::config::{number, switch, var};

const DAEMON_URL: &str = "DAEMON_URL";
const DAEMON_SECRET: &str = "DAEMON_SECRET";
const DAEMON_TIMEOUT_MS: &str = "DAEMON_TIMEOUT_MS";
const DAEMON_ALLOW_HTTP: &str = "DAEMON_ALLOW_HTTP";
const DAEMON_MTLS: &str = "DAEMON_MTLS";

#[derive(Debug)]
pub(crate) struct Daemon {
    base: Origin,
    /// `Bearer <secret>`.
    authorization: Secret<String>,
    timeout: Duration,
    /// The `mtls_certificates` binding calls go through, if there is one.
    client_certificate: Option<Fetcher>,
}

impl Daemon {
    /// The daemon's settings; `needed_by` names the var that requires them, for the error.
    pub(crate) fn from_env(env: &Env, needed_by: &str) -> Result<Daemon, String> {
        let url = var(env, DAEMON_URL)?
            .ok_or_else(|| format!("{DAEMON_URL} is not set but {needed_by} needs the daemon"))?;
        let base = Origin::parse(&url).map_err(|e| format!("{DAEMON_URL}: {e}"))?;
        // The bearer secret and every token go to the daemon: in the clear only on this
        // machine, or where an operator said so (a private link of their own).
        if base.scheme() == Scheme::Http
            && !base.is_loopback()
            && switch(env, DAEMON_ALLOW_HTTP)? != Some(true)
        {
            return Err(format!(
                "{DAEMON_URL} is plain http:// to {}, which would send the daemon's secret and \
                 every token in the clear: use https://, or set {DAEMON_ALLOW_HTTP}=on",
                base.host()
            ));
        }
        let client_certificate = client_certificate(env)?;
        if client_certificate.is_some() && base.scheme() != Scheme::Https {
            return Err(format!(
                "{DAEMON_MTLS} presents a client certificate, which only https:// carries: \
                 {DAEMON_URL} is {}",
                base.as_str()
            ));
        }
        let secret = match env.secret(DAEMON_SECRET) {
            Ok(secret) => Some(secret.to_string()),
            Err(_) => var(env, DAEMON_SECRET)?,
        };
        let secret = secret.ok_or_else(|| {
            format!("the secret {DAEMON_SECRET} is not set but {needed_by} needs the daemon")
        })?;
        let timeout = number(env, DAEMON_TIMEOUT_MS)?.map_or(1000, u64::from);
        // 0 was taken, and every call then gave up before the daemon could answer.
        if timeout == 0 {
            return Err(format!(
                "{DAEMON_TIMEOUT_MS} must be at least 1 (milliseconds)"
            ));
        }
        Ok(Daemon {
            base,
            authorization: Secret::new(format!("Bearer {}", secret.trim())),
            timeout: Duration::from_millis(timeout),
            client_certificate,
        })
    }

    /// The URL of an API path on the daemon.
    pub(crate) fn url(&self, path: &str) -> Result<String, String> {
        self.base
            .upstream_url(path, None)
            .map_err(|e| format!("{DAEMON_URL}: {e}"))
    }

    /// Headers every call carries (the bearer secret).
    pub(crate) fn headers(&self) -> Result<Headers, String> {
        let headers = Headers::new();
        headers
            .set("authorization", self.authorization.expose())
            .map_err(|e| e.to_string())?;
        Ok(headers)
    }

    /// The deadline of a call.
    pub(crate) fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sends `request` and has `read` read the response, both within the deadline: a daemon
    /// (or a proxy before it) that sends its headers and then stalls in the body costs no
    /// more than one that never answers. Past the deadline the request is aborted, body and
    /// all.
    pub(crate) async fn call<T, R>(
        &self,
        request: Request,
        read: impl FnOnce(Response) -> R,
    ) -> Result<T, String>
    where
        R: Future<Output = Result<T, String>>,
    {
        let controller = AbortController::default();
        let signal = controller.signal();
        let exchange = async {
            let response = match &self.client_certificate {
                None => Fetch::Request(request).send_with_signal(&signal).await,
                Some(binding) => match with_signal(&request, &signal) {
                    Ok(request) => binding.fetch_request(request).await,
                    Err(error) => Err(error),
                },
            };
            let response = response.map_err(|e| format!("daemon unreachable: {e}"))?;
            read(response).await
        };
        match select(Box::pin(exchange), Delay::from(self.timeout)).await {
            Either::Left((done, _)) => done,
            Either::Right(_) => {
                controller.abort();
                Err(format!(
                    "daemon gave no full answer within {:?}",
                    self.timeout
                ))
            }
        }
    }
}

/// The `DAEMON_MTLS` binding, if the worker has one; an error if it is not a fetcher.
fn client_certificate(env: &Env) -> Result<Option<Fetcher>, String> {
    let binding = worker::js_sys::Reflect::get(env, &JsValue::from_str(DAEMON_MTLS))
        .map_err(|_| format!("{DAEMON_MTLS}: the environment cannot be read"))?;
    if binding.is_undefined() {
        return Ok(None);
    }
    env.service(DAEMON_MTLS).map(Some).map_err(|e| {
        format!("{DAEMON_MTLS} must be an mtls_certificates binding in wrangler.toml: {e}")
    })
}

/// `request`, aborted when `signal` is (a binding's `fetch` takes no signal of its own).
fn with_signal(request: &Request, signal: &AbortSignal) -> worker::Result<Request> {
    let init = web_sys::RequestInit::new();
    init.set_signal(Some(signal));
    let request = web_sys::Request::new_with_request_and_init(request.inner(), &init)?;
    Ok(Request::from(request))
}
