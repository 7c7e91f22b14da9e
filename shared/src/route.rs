//! Which parts of a request become subset-routing metadata.
//!
//! An operator lists `key=source` pairs, e.g.
//! `zone=header:x-edgewise-zone, stage=query:stage, service=path:1`: the request's
//! `x-edgewise-zone` header becomes the metadata value of `zone`, its `stage` query parameter
//! that of `stage`, and its first path segment that of `service`. Path prefixes map to values
//! as Envoy routes with a `path_separated_prefix` match each carry a `metadata_match`:
//! `version=prefix:/v2=v2|/legacy/api=v1|/=v3` gives `version` the value of the longest prefix
//! the path starts with (not the first listed, as Envoy's routes go; by whole segments: `/v2`
//! is no prefix of `/v2beta`). A missing attribute leaves its key out of the metadata (the
//! subset load balancer's fallbacks then decide).
//!
//! Paths and queries are read as origins read them, not as sent: a client spelling `/admin`
//! as `//admin`, `/%61dmin`, `/ADMIN` or `/admin;x`, or `stage=canary` as `st%61ge=canary`,
//! reached the pool of another route than the origin then served (see [`routing_path`] and
//! [`query_value`]). Only a path or query with something to decode allocates.

use alloc::{borrow::Cow, string::String, vec::Vec};

use crate::path::{Reading, decode_once, is_plain, normalised};
use crate::{Error, MAX_VALUE_LEN};

/// Most attributes a list may name: metadata beyond this is not a routing key any more.
pub const MAX_ROUTE_ATTRIBUTES: usize = 8;

/// Most prefixes one `prefix:` attribute may map (each request tries them all, longest first).
pub const MAX_PATH_PREFIXES: usize = 64;

/// Where a metadata value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AttributeSource {
    /// A request header, by lowercase name.
    Header(String),
    /// A query parameter, by exact name.
    Query(String),
    /// The n-th path segment, from 1.
    PathSegment(usize),
    /// The value of the longest of these prefixes the path starts with (see
    /// [`prefix_value`]), longest first.
    PathPrefix(Vec<PathPrefix>),
}

/// One `PREFIX=VALUE` of a `prefix:` source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPrefix {
    /// As listed, without its trailing `/`s (whole segments match either way): empty for `/`,
    /// which every path is under.
    pub prefix: String,
    /// The metadata value of a path under it.
    pub value: String,
}

/// One `key=source` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteAttribute {
    /// The metadata key.
    pub key: String,
    /// Where its value comes from.
    pub source: AttributeSource,
}

impl RouteAttribute {
    /// Parses a comma-separated list; whitespace around entries is ignored, an empty list is
    /// no attributes. They come back in the order of their keys: a request's metadata set in
    /// that order (the order hosts list their labels) finds each key at its position, without
    /// a scan (see [`SubsetLb::set`](crate::SubsetLb::set)).
    pub fn parse_list(list: &str) -> Result<Vec<RouteAttribute>, Error> {
        let entries = list.split(',').map(str::trim).filter(|e| !e.is_empty());
        let mut attributes = entries
            .enumerate()
            .map(|(index, entry)| {
                RouteAttribute::parse(entry).map_err(|r| invalid(index, entry, r))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if attributes.len() > MAX_ROUTE_ATTRIBUTES {
            return Err(invalid(MAX_ROUTE_ATTRIBUTES, "", "more than 8 attributes"));
        }
        for (index, a) in attributes.iter().enumerate() {
            if attributes[..index].iter().any(|b| b.key == a.key) {
                return Err(invalid(index, &a.key, "key listed twice"));
            }
        }
        attributes.sort_unstable_by(|a, b| a.key.cmp(&b.key));
        Ok(attributes)
    }

    fn parse(entry: &str) -> Result<RouteAttribute, &'static str> {
        let (key, source) = entry.split_once('=').ok_or("expected key=source")?;
        let key = key.trim();
        if key.is_empty() || key.len() > 128 || !key.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the key must be 1-128 printable ASCII characters");
        }
        let (kind, name) = source
            .trim()
            .split_once(':')
            .ok_or("expected a source like header:NAME")?;
        let name = name.trim();
        let source = match kind.trim() {
            "header" if is_token(name) => AttributeSource::Header(name.to_ascii_lowercase()),
            "header" => return Err("not a valid header name"),
            "query" if !name.is_empty() && !name.contains(['&', '=', '#']) => {
                AttributeSource::Query(name.into())
            }
            "query" => return Err("not a valid query parameter name"),
            "path" => match name.parse::<usize>() {
                Ok(n @ 1..=64) => AttributeSource::PathSegment(n),
                _ => return Err("path takes a segment number from 1 to 64"),
            },
            "prefix" => AttributeSource::PathPrefix(parse_prefixes(name)?),
            _ => return Err("the source must be header:, query:, path: or prefix:"),
        };
        Ok(RouteAttribute {
            key: key.into(),
            source,
        })
    }
}

/// The value of query parameter `name` in `query` (without the `?`), names and values
/// decoded as forms are (`%XX`, `+` for a space); `None` if the name is missing or given more
/// than once (origins differ on which of two they take: PHP and Rails the last, others the
/// first, so a repeated routing key routes by neither).
pub fn query_value<'q>(query: &'q str, name: &str) -> Option<Cow<'q, str>> {
    let mut found = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decoded(k) == name {
            if found.is_some() {
                return None;
            }
            found = Some(form_decoded(v));
        }
    }
    found
}

/// `text` as a form's name or value reads: `+` a space, `%XX` its byte (text that does not
/// decode to UTF-8 as it was sent).
fn form_decoded(text: &str) -> Cow<'_, str> {
    if !text.contains(['%', '+']) {
        return Cow::Borrowed(text);
    }
    let mut bytes = text.replace('+', " ").into_bytes();
    decode_once(&mut bytes);
    match String::from_utf8(bytes) {
        Ok(decoded) => Cow::Owned(decoded),
        Err(_) => Cow::Borrowed(text),
    }
}

/// `path` as most origins read it before routing it: percent-decoded once, `;` parameters
/// dropped, empty and `.` segments dropped and `..` resolved (nginx, Tomcat, Envoy with path
/// normalisation). Borrowed when that is `path` itself.
pub fn routing_path(path: &str) -> Cow<'_, str> {
    if is_plain(path.as_bytes()) {
        return Cow::Borrowed(path);
    }
    let mut bytes = path.as_bytes().to_vec();
    decode_once(&mut bytes);
    let read = normalised(&bytes, Reading::COMMON);
    match String::from_utf8(read) {
        Ok(read) => Cow::Owned(read),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// `/a=x|/b/c=y`: the prefixes, longest first.
fn parse_prefixes(list: &str) -> Result<Vec<PathPrefix>, &'static str> {
    let mut rules = list
        .split('|')
        .map(|rule| {
            let (prefix, value) = rule
                .split_once('=')
                .ok_or("expected prefix:/PATH=VALUE|...")?;
            let (prefix, value) = (prefix.trim(), value.trim());
            if !prefix.starts_with('/') || !prefix.bytes().all(is_prefix_byte) {
                return Err("a prefix starts with / and has no space, ?, #, =, % or ;");
            }
            // The runtime's URL parser resolves these before the path is matched.
            if prefix
                .split('/')
                .any(|segment| segment == "." || segment == "..")
            {
                return Err("a prefix has no . or .. segment");
            }
            if value.is_empty() || value.len() > MAX_VALUE_LEN {
                return Err("a prefix's value must be 1-256 bytes");
            }
            Ok(PathPrefix {
                prefix: prefix.trim_end_matches('/').into(),
                value: value.into(),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if rules.len() > MAX_PATH_PREFIXES {
        return Err("more than 64 prefixes");
    }
    // Longest first (two of one length cannot both be a path's); then by text, so that a
    // prefix listed twice (with or without a trailing `/`) has its twin beside it.
    rules.sort_by(|a, b| (b.prefix.len(), &a.prefix).cmp(&(a.prefix.len(), &b.prefix)));
    if rules.windows(2).any(|w| w[0].prefix == w[1].prefix) {
        return Err("a prefix listed twice");
    }
    Ok(rules)
}

/// Bytes a prefix may hold: it is matched against [`routing_path`]'s reading, decoded and
/// without `;` parameters, so it is written as one.
fn is_prefix_byte(b: u8) -> bool {
    b.is_ascii_graphic() && !matches!(b, b'?' | b'#' | b'=' | b'%' | b';')
}

/// The value of the first of `prefixes` (longest first, as [`AttributeSource::PathPrefix`]
/// keeps them) that `path` (a [`routing_path`]) starts with, by whole segments and ignoring
/// ASCII case (IIS does; an origin that does not serves nothing under `/ADMIN` anyway):
/// `/api` and `/api/` are prefixes of `/api` and `/api/users`, not of `/apis`; `/` is a
/// prefix of every path.
pub fn prefix_value<'p>(path: &str, prefixes: &'p [PathPrefix]) -> Option<&'p str> {
    prefixes
        .iter()
        .find(|p| {
            let (path, prefix) = (path.as_bytes(), p.prefix.as_bytes());
            path.split_at_checked(prefix.len())
                .is_some_and(|(head, rest)| {
                    head.eq_ignore_ascii_case(prefix) && matches!(rest.first(), None | Some(b'/'))
                })
        })
        .map(|p| p.value.as_str())
}

/// The `n`-th non-empty segment of `path` (a [`routing_path`], from 1).
pub fn path_segment(path: &str, n: usize) -> Option<&str> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .nth(n.checked_sub(1)?)
}

fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 256
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn invalid(index: usize, entry: &str, reason: &'static str) -> Error {
    Error::InvalidRouteAttribute {
        index,
        entry: entry.escape_default().take(64).collect(),
        reason,
    }
}

#[cfg(test)]
mod tests;
