//! The feature store over HTTP, for remote producers and consumers (local ones map the store).
//!
//! `PUT /v1/features` with `{"upserts": [{"table": "t", "key": 1, "values": [0.5, ...]}],
//! "deletes": [{"table": "t", "key": 2}]}` publishes one new version with the whole batch, or
//! nothing (400 with the reason). `GET /v1/features/{table}/{key}` answers
//! `{"table", "key", "version", "values"}` from the published store, 404 if there is no such row.
//! Both are 404 when the daemon keeps no feature store.

use std::sync::Arc;

use axum::{
    Json,
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};

use super::{App, error};
use crate::features::{Change, Delete, Features, PublishError, Upsert};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Batch {
    #[serde(default)]
    upserts: Vec<Upsert>,
    #[serde(default)]
    deletes: Vec<Delete>,
}

#[derive(Serialize)]
struct Row<'a> {
    table: &'a str,
    key: u64,
    version: u64,
    values: Vec<f32>,
}

pub(super) async fn put(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let features = match store(&app) {
        Ok(features) => features,
        Err(refused) => return *refused,
    };
    let batch: Batch = match serde_json::from_slice(&body) {
        Ok(batch) => batch,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("not a feature batch: {e}")),
    };
    let change = Change::Batch {
        upserts: batch.upserts,
        deletes: batch.deletes,
    };
    match features.apply(change).await {
        Ok(published) => Json(published).into_response(),
        Err(PublishError::Invalid(why)) => error(StatusCode::BAD_REQUEST, why.to_string()),
        Err(failed) => {
            tracing::error!(error = %failed, "feature publish failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, failed.to_string())
        }
    }
}

pub(super) async fn get(
    State(app): State<Arc<App>>,
    Path((table, key)): Path<(String, String)>,
) -> Response {
    let features = match store(&app) {
        Ok(features) => features,
        Err(refused) => return *refused,
    };
    let Ok(key) = key.parse::<u64>() else {
        return error(
            StatusCode::BAD_REQUEST,
            "the key must be an unsigned 64-bit integer",
        );
    };
    // A store read may fault pages in from disk: off the runtime's worker threads.
    let store = Arc::clone(features);
    let read = tokio::task::spawn_blocking(move || {
        let row = store.get(&table, key);
        (table, row)
    })
    .await;
    let Ok((table, row)) = read else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "feature read failed");
    };
    match row {
        Ok(Some((version, values))) => Json(Row {
            table: &table,
            key,
            version,
            values,
        })
        .into_response(),
        Ok(None) => error(StatusCode::NOT_FOUND, "no such table or key"),
        Err(failed) => {
            tracing::error!(error = %failed, "feature read failed");
            error(StatusCode::SERVICE_UNAVAILABLE, failed.to_string())
        }
    }
}

/// The store, or the 404 of a daemon without one (boxed: it is the cold path).
fn store(app: &App) -> Result<&Arc<Features>, Box<Response>> {
    app.features.as_ref().ok_or_else(|| {
        Box::new(error(
            StatusCode::NOT_FOUND,
            "this daemon keeps no feature store",
        ))
    })
}
