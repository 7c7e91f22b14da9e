//! `GET /v1/hosts`: the host table workers route by.
//!
//! Answers the rkyv encoding (`application/x-edgewise-hosts`) with a strong ETag and the
//! table's version in `x-edgewise-hosts-version`; `If-None-Match` with the current ETag gets
//! 304, so a worker's periodic check costs no body. `If-None-Match` with the ETag of one of the
//! last tables served, from a client that accepts `application/x-edgewise-hosts-delta`, gets
//! the changes since that table (an [`edgewise::HostDelta`]) when the daemon has them, else the
//! table. `Accept: application/json` gets the same table as JSON, for people and scripts, under an
//! ETag of its own (never a delta). 404 when the daemon serves no table.

use std::{borrow::Cow, sync::Arc};

use axum::{
    Json,
    body::Bytes,
    extract::State,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};

use edgewise::HOST_DELTA_MEDIA_TYPE;

use super::{App, error};
use crate::hosts::Published;

/// Media type of the encoded table.
pub const CONTENT_TYPE: &str = edgewise::HOST_TABLE_MEDIA_TYPE;
/// Response header carrying the table's version.
pub const VERSION_HEADER: &str = "x-edgewise-hosts-version";

pub(super) async fn get(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let Some(current) = app.hosts.current() else {
        return error(StatusCode::NOT_FOUND, "this daemon serves no host table");
    };
    // The JSON is another representation of the table, so it has its own strong ETag (RFC 9110
    // section 8.8.3): a cache revalidating one must not be told the other is unchanged.
    let json = wants_json(&headers);
    let etag = match json {
        true => Cow::Owned(json_etag(&current.etag)),
        false => Cow::Borrowed(current.etag.as_str()),
    };
    let mut response = if matches_etag(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if json {
        Json(&current.table).into_response()
    } else if let Some(delta) = delta_for(&headers, &current) {
        app.hosts.delta_served();
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(HOST_DELTA_MEDIA_TYPE),
            )],
            delta.clone(),
        )
            .into_response()
    } else {
        (
            [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
            current.bytes.clone(),
        )
            .into_response()
    };
    let out = response.headers_mut();
    if let Ok(etag) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, etag);
    }
    out.insert(VERSION_HEADER, HeaderValue::from(current.table.version));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    out.insert(
        header::VARY,
        HeaderValue::from_static("accept, if-none-match"),
    );
    response
}

/// The ETag of the table's JSON, from the table's: the same digest, marked.
fn json_etag(etag: &str) -> String {
    format!("{}-json\"", etag.trim_end_matches('"'))
}

/// The comma-separated items of every `name` header (untrimmed).
fn listed(headers: &HeaderMap, name: header::HeaderName) -> impl Iterator<Item = &str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
}

/// The ETags `If-None-Match` lists.
fn listed_etags(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    listed(headers, header::IF_NONE_MATCH).map(|tag| tag.trim().trim_start_matches("W/"))
}

/// `If-None-Match` lists the current ETag (or is `*`).
fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    listed_etags(headers).any(|tag| tag == etag || tag == "*")
}

/// The delta from a table the client holds (named in `If-None-Match`) to the current one, if
/// the client accepts deltas and the daemon has one.
fn delta_for<'a>(headers: &HeaderMap, current: &'a Published) -> Option<&'a Bytes> {
    if !accepts_delta(headers) {
        return None;
    }
    listed_etags(headers).find_map(|tag| current.delta(tag))
}

/// `Accept` lists the delta type, and not with `q=0` (refused).
fn accepts_delta(headers: &HeaderMap) -> bool {
    let refused = |param: &str| {
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        name.trim().eq_ignore_ascii_case("q") && value.trim().parse::<f32>().is_ok_and(|q| q <= 0.0)
    };
    listed(headers, header::ACCEPT).any(|range| {
        let mut parts = range.split(';');
        let kind = parts.next().unwrap_or_default().trim();
        kind.eq_ignore_ascii_case(HOST_DELTA_MEDIA_TYPE) && !parts.any(refused)
    })
}

fn wants_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("application/json"))
}
