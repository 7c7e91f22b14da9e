//! `GET /v1/hosts`: the host table workers route by.
//!
//! Answers the rkyv encoding (`application/x-edgewise-hosts`) with a strong ETag and the
//! table's version in `x-edgewise-hosts-version`; `If-None-Match` with the current ETag gets
//! 304, so a worker's periodic check costs no body. `Accept: application/json` gets the same
//! table as JSON, for people and scripts. 404 when the daemon serves no table.

use std::sync::Arc;

use axum::{
    Json,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use super::{App, error, refusal};

/// Media type of the encoded table.
pub const CONTENT_TYPE: &str = "application/x-edgewise-hosts";
/// Response header carrying the table's version.
pub const VERSION_HEADER: &str = "x-edgewise-hosts-version";

pub(super) async fn get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&app, &headers) {
        return refused;
    }
    let Some(current) = app.hosts.current() else {
        return error(StatusCode::NOT_FOUND, "this daemon serves no host table");
    };
    let mut response = if matches_etag(&headers, &current.etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if wants_json(&headers) {
        Json(&current.table).into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
            current.bytes.clone(),
        )
            .into_response()
    };
    let out = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&current.etag) {
        out.insert(header::ETAG, etag);
    }
    out.insert(VERSION_HEADER, HeaderValue::from(current.table.version));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `If-None-Match` lists the current ETag (or is `*`).
fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}
