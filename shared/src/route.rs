//! Which parts of a request become subset-routing metadata.
//!
//! An operator lists `key=source` pairs, e.g.
//! `zone=header:x-edgewise-zone, stage=query:stage, service=path:1`: the request's
//! `x-edgewise-zone` header becomes the metadata value of `zone`, its `stage` query parameter
//! that of `stage`, and its first path segment that of `service`. A missing attribute leaves
//! its key out of the metadata (the subset load balancer's fallbacks then decide).
//!
//! Values are taken as sent (no percent-decoding), so extracting them never allocates.

use alloc::{string::String, vec::Vec};

use crate::Error;

/// Most attributes a list may name: metadata beyond this is not a routing key any more.
pub const MAX_ROUTE_ATTRIBUTES: usize = 8;

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
            _ => return Err("the source must be header:, query: or path:"),
        };
        Ok(RouteAttribute {
            key: key.into(),
            source,
        })
    }
}

/// The value of query parameter `name` in `query` (without the `?`), as sent.
pub fn query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then_some(v)
    })
}

/// The `n`-th non-empty segment of `path` (from 1).
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
