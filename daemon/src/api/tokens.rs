//! `POST /v1/tokens/redeem`: spend a verified token exactly once.
//!
//! The worker verifies the token's signature and challenge itself and sends only what
//! identifies the token: `{"token_type": 2, "token_key_id": "<64 hex>", "nonce": "<64 hex>",
//! "not_after": <issuer key expiry, Unix seconds, optional>}`. The daemon derives the spend key
//! with the same function the worker uses. Answers `200 {"outcome":"fresh"|"spent"}` or
//! `503 {"outcome":"unavailable"}`.

use std::sync::Arc;

use axum::{
    Json,
    body::Bytes,
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
use serde::{Deserialize, Serialize};

use super::{App, error};
use crate::tokencache::{Outcome, Spend};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Redeem {
    token_type: u16,
    token_key_id: String,
    nonce: String,
    not_after: Option<u64>,
}

#[derive(Serialize)]
struct Redeemed {
    outcome: Outcome,
}

pub(super) async fn redeem(State(app): State<Arc<App>>, body: Bytes) -> Response {
    let spend = match parse(&body) {
        Ok(spend) => spend,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let outcome = app.tokens.redeem(&spend).await;
    let status = match outcome {
        Outcome::Fresh | Outcome::Spent => StatusCode::OK,
        Outcome::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
    };
    (status, Json(Redeemed { outcome })).into_response()
}

fn parse(body: &[u8]) -> Result<Spend, String> {
    let request: Redeem =
        serde_json::from_slice(body).map_err(|e| format!("malformed redemption: {e}"))?;
    let key_id = hex32(&request.token_key_id).ok_or("token_key_id must be 64 hex digits")?;
    let nonce = hex32(&request.nonce).ok_or("nonce must be 64 hex digits")?;
    Ok(Spend {
        key: edgewise::spend_key_from_fields(request.token_type, &key_id, &nonce),
        not_after: request.not_after,
    })
}

fn hex32(text: &str) -> Option<[u8; 32]> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let mut out = [0; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

fn nibble(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}
