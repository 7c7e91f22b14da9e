//! The worker's configuration, read from wrangler vars once per isolate.
//!
//! Vars cannot change while an isolate lives, so parsing them (and building the header sets)
//! happens on the first request only; a bad value is remembered too, and every request answers
//! 500 until the deployment is fixed.

use std::{cell::OnceCell, rc::Rc};

use edgewise::{
    DEFAULT_INTERNAL_REQUEST_HEADERS, DEFAULT_INTERNAL_RESPONSE_HEADERS, DEFAULT_LIST_TOKEN,
    HeaderSet, Origin, ScrubMode,
};
use wasm_bindgen::JsValue;
use worker::Env;

use crate::{route::Routing, token::TokenPolicy};

/// Base URL requests are forwarded to.
const ORIGIN_URL: &str = "ORIGIN_URL";
/// Header names stripped from requests before they are forwarded.
const INTERNAL_HEADERS: &str = "INTERNAL_HEADERS";
/// Header names stripped from origin responses before they are returned.
const INTERNAL_RESPONSE_HEADERS: &str = "INTERNAL_RESPONSE_HEADERS";
/// How request workspaces are scrubbed.
const WORKSPACE_SCRUB: &str = "WORKSPACE_SCRUB";

#[derive(Debug)]
pub(crate) struct Config {
    /// Where requests go when there is no host table.
    pub(crate) origin: Option<Origin>,
    /// Present when a host table routes requests.
    pub(crate) routing: Option<Routing>,
    pub(crate) request_strip: HeaderSet,
    pub(crate) response_strip: HeaderSet,
    /// Present when some paths require a Privacy Pass token.
    pub(crate) tokens: Option<TokenPolicy>,
    /// How request workspaces are scrubbed.
    pub(crate) scrub: ScrubMode,
}

thread_local! {
    static CONFIG: OnceCell<Result<Rc<Config>, String>> = const { OnceCell::new() };
}

/// This isolate's configuration, or why it is unusable.
pub(crate) fn get(env: &Env) -> Result<Rc<Config>, String> {
    CONFIG.with(|cell| {
        cell.get_or_init(|| Config::from_env(env).map(Rc::new))
            .clone()
    })
}

impl Config {
    fn from_env(env: &Env) -> Result<Config, String> {
        let routing = Routing::from_env(env)?;
        let origin = match var(env, ORIGIN_URL)? {
            Some(url) => Some(Origin::parse(&url).map_err(|e| format!("{ORIGIN_URL}: {e}"))?),
            None if routing.is_some() => None,
            None => return Err(format!("{ORIGIN_URL} is not set (nor a HOST_TABLE)")),
        };
        Ok(Config {
            origin,
            routing,
            request_strip: header_set(env, INTERNAL_HEADERS, DEFAULT_INTERNAL_REQUEST_HEADERS)?,
            response_strip: header_set(
                env,
                INTERNAL_RESPONSE_HEADERS,
                DEFAULT_INTERNAL_RESPONSE_HEADERS,
            )?,
            tokens: TokenPolicy::from_env(env)?,
            scrub: scrub_mode(env)?,
        })
    }
}

/// `full`, `shadow` or `watermark` (the default).
fn scrub_mode(env: &Env) -> Result<ScrubMode, String> {
    match var(env, WORKSPACE_SCRUB)? {
        None => Ok(ScrubMode::Watermark),
        Some(name) => ScrubMode::from_name(name.trim()).ok_or_else(|| {
            format!("{WORKSPACE_SCRUB}: {name:?} is not one of full, shadow, watermark")
        }),
    }
}

/// An unset list means the built-in one; `@default` inside a list extends it.
fn header_set(env: &Env, name: &str, defaults: &[&str]) -> Result<HeaderSet, String> {
    let list = var(env, name)?.unwrap_or_else(|| DEFAULT_LIST_TOKEN.to_owned());
    HeaderSet::from_list(&list, defaults).map_err(|e| format!("{name}: {e}"))
}

/// A var's value, if it is set; an error if it is set to anything but a string. Wrangler
/// passes a var written unquoted (`TOKEN_PATHS = ["/private"]`, `OUTLIER_FAILURES = 5`) as
/// JSON, which `Env::var` reads as unset: `TOKEN_PATHS` then turned the token check off.
pub(crate) fn var(env: &Env, name: &str) -> Result<Option<String>, String> {
    let value = worker::js_sys::Reflect::get(env, &JsValue::from_str(name))
        .map_err(|_| format!("{name}: the environment cannot be read"))?;
    if value.is_undefined() {
        return Ok(None);
    }
    let kind = value.js_typeof().as_string().unwrap_or_default();
    value.as_string().map(Some).ok_or_else(|| {
        format!("{name} must be a string: quote it in [vars] ({name} = \"...\"), not a {kind}")
    })
}

/// A numeric var, if it is set and not blank.
pub(crate) fn number(env: &Env, name: &str) -> Result<Option<u32>, String> {
    var(env, name)?
        .filter(|v| !v.trim().is_empty())
        .map(|v| {
            v.trim()
                .parse()
                .map_err(|_| format!("{name}: {v:?} is not a number"))
        })
        .transpose()
}

/// An on/off var, if it is set and not blank.
pub(crate) fn switch(env: &Env, name: &str) -> Result<Option<bool>, String> {
    let Some(value) = var(env, name)?.filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    match value.trim() {
        "on" | "true" => Ok(Some(true)),
        "off" | "false" => Ok(Some(false)),
        other => Err(format!("{name}: {other:?} is not on or off")),
    }
}
