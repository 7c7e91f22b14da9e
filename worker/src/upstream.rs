//! The outbound request to an origin, and its fetch.

use edgewise::{Arena, HeaderSet};
use wasm_bindgen::JsCast;
use web_sys::{Request, RequestInit, RequestRedirect, Response, WorkerGlobalScope};
use worker::{js_sys, wasm_bindgen_futures::JsFuture};

use crate::{failure::Failure, failure::js_error, strip};

/// Builds the outbound request. The runtime copies the incoming headers into it, and internal
/// ones are deleted from that copy; the body is handed over as the incoming JS stream, so it is
/// never copied into Wasm memory; redirects go back to the client as they came. The token of a
/// token-checked request is the client's credential for edgewise, not for the origin: dropped.
/// The method goes by its text: `worker::Method` reads a method it does not know (PURGE, MKCOL,
/// PROPFIND, QUERY) as GET.
pub(crate) fn request(
    req: &Request,
    target: &str,
    strip: &HeaderSet,
    token_checked: bool,
    arena: &mut Arena<'_>,
) -> Result<Request, Failure> {
    // A handle to the incoming headers, not a copy of them.
    let incoming = req.headers();
    let internal = strip::matches(strip, &incoming, arena).map_err(Failure::HeadersTooLarge)?;
    let init = RequestInit::new();
    init.set_method(&req.method());
    init.set_headers(&incoming);
    init.set_redirect(RequestRedirect::Manual);
    if let Some(body) = req.body() {
        init.set_body(&body);
    }
    let upstream = Request::new_with_str_and_init(target, &init)
        .map_err(|e| Failure::Internal(js_error(&e)))?;
    let outbound = upstream.headers();
    if let Some(internal) = internal {
        internal.delete_from(&outbound);
    }
    if token_checked {
        outbound
            .delete("authorization")
            .map_err(|e| Failure::Internal(js_error(&e)))?;
    }
    Ok(upstream)
}

/// Fetches `request`; `Err` says why no response came.
pub(crate) async fn send(request: &Request) -> Result<Response, String> {
    let global: WorkerGlobalScope = js_sys::global().unchecked_into();
    let response = JsFuture::from(global.fetch_with_request(request))
        .await
        .map_err(|e| js_error(&e))?;
    response
        .dyn_into()
        .map_err(|_| "fetch answered something other than a Response".to_owned())
}
