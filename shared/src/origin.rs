//! The upstream an edge forwards to.
//!
//! An operator configures one base URL (`http(s)://host[:port][/prefix]`). It is validated once,
//! then every request is mapped onto it by appending the request's path and query. The parser is
//! deliberately strict: a typo in an origin URL must be a clear configuration error at start-up,
//! not a stream of odd upstream requests.

use alloc::string::String;

use crate::Error;

/// Longest origin URL or upstream URL accepted. Origins commonly cap request lines at 8-16 KiB;
/// anything longer is refused here rather than by a confused upstream.
pub const MAX_URL_LEN: usize = 16 * 1024;

/// The scheme of an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    /// The scheme's name, lower case.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// A validated origin base URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    scheme: Scheme,
    /// Normalised `scheme://authority/prefix`, without a trailing `/`.
    base: String,
    /// Byte range of the authority inside `base`.
    authority: core::ops::Range<usize>,
}

impl Origin {
    /// Parses and validates an origin base URL.
    ///
    /// Scheme and host are case-normalised; a trailing `/` on the prefix is dropped. Userinfo,
    /// queries and fragments are refused.
    pub fn parse(url: &str) -> Result<Origin, Error> {
        let (scheme, authority, prefix) = split_checked(url)?;
        let prefix = prefix.trim_end_matches('/');

        let mut base = String::with_capacity(url.len());
        base.push_str(scheme.as_str());
        base.push_str("://");
        let start = base.len();
        base.extend(authority.chars().map(|c| c.to_ascii_lowercase()));
        let end = base.len();
        base.push_str(prefix);
        Ok(Origin {
            scheme,
            base,
            authority: start..end,
        })
    }

    /// Checks `url` as [`Origin::parse`] does, without building the origin: host tables
    /// validate up to a million addresses.
    pub(crate) fn check(url: &str) -> Result<(), Error> {
        if plainly_valid(url) {
            return Ok(());
        }
        split_checked(url).map(|_| ())
    }

    /// The origin's scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// `host[:port]`, lower case.
    pub fn authority(&self) -> &str {
        &self.base[self.authority.clone()]
    }

    /// The path prefix every forwarded path is appended to; empty or starting with `/`.
    pub fn path_prefix(&self) -> &str {
        &self.base[self.authority.end..]
    }

    /// The normalised base URL.
    pub fn as_str(&self) -> &str {
        &self.base
    }

    /// The URL a request for `path` (and `query`, without its `?`) is forwarded to.
    ///
    /// `path` must be absolute and both must already be percent-encoded, as a parsed request
    /// URL provides them; an empty query is dropped.
    pub fn upstream_url(&self, path: &str, query: Option<&str>) -> Result<String, Error> {
        if !path.starts_with('/') {
            return Err(Error::InvalidTarget("path must start with '/'"));
        }
        check_target_part(path, b'?', "path holds a byte that must be percent-encoded")?;
        let query = query.filter(|q| !q.is_empty());
        if let Some(q) = query {
            check_target_part(q, b'#', "query holds a byte that must be percent-encoded")?;
        }
        let len = self.base.len() + path.len() + query.map_or(0, |q| q.len() + 1);
        if len > MAX_URL_LEN {
            return Err(Error::InvalidTarget("upstream URL longer than 16 KiB"));
        }
        let mut url = String::with_capacity(len);
        url.push_str(&self.base);
        url.push_str(path);
        if let Some(q) = query {
            url.push('?');
            url.push_str(q);
        }
        Ok(url)
    }
}

impl core::fmt::Display for Origin {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.base)
    }
}

impl core::str::FromStr for Origin {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Origin::parse(s)
    }
}

fn split_scheme(url: &str) -> Result<(Scheme, &str), Error> {
    // Fast path for the usual prefixes: the first "://" of such a URL is right after the
    // scheme (the scheme holds no ':'), so this agrees with the search below, which builds a
    // substring searcher per call (host tables check up to a million addresses).
    let bytes = url.as_bytes();
    if bytes.len() >= 7 && bytes[..7].eq_ignore_ascii_case(b"http://") {
        return Ok((Scheme::Http, &url[7..]));
    }
    if bytes.len() >= 8 && bytes[..8].eq_ignore_ascii_case(b"https://") {
        return Ok((Scheme::Https, &url[8..]));
    }
    let (name, rest) = url
        .split_once("://")
        .ok_or(Error::InvalidOrigin("expected http://host or https://host"))?;
    let scheme = if name.eq_ignore_ascii_case("http") {
        Scheme::Http
    } else if name.eq_ignore_ascii_case("https") {
        Scheme::Https
    } else {
        return Err(Error::InvalidOrigin("scheme must be http or https"));
    };
    Ok((scheme, rest))
}

fn check_authority(authority: &str) -> Result<(), Error> {
    if authority.is_empty() {
        return Err(Error::InvalidOrigin("missing host"));
    }
    if authority.contains('@') {
        return Err(Error::InvalidOrigin(
            "credentials in the URL are not allowed",
        ));
    }
    let (host, port) = split_port(authority)?;
    if let Some(port) = port {
        check_port(port)?;
    }
    match host.strip_prefix('[') {
        Some(v6) => check_ipv6_literal(v6),
        None => check_reg_name(host),
    }
}

/// Splits `host[:port]`, where host may be a bracketed IPv6 literal full of colons.
fn split_port(authority: &str) -> Result<(&str, Option<&str>), Error> {
    if authority.starts_with('[') {
        let close = authority
            .find(']')
            .ok_or(Error::InvalidOrigin("unterminated IPv6 literal"))?;
        let (host, after) = authority.split_at(close + 1);
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':') {
                Some(port) => Ok((host, Some(port))),
                None => Err(Error::InvalidOrigin("junk after IPv6 literal")),
            },
        };
    }
    Ok(match authority.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    })
}

fn check_port(port: &str) -> Result<(), Error> {
    let valid = !port.is_empty()
        && port.len() <= 5
        && port.bytes().all(|b| b.is_ascii_digit())
        && matches!(port.parse::<u32>(), Ok(1..=65535));
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidOrigin("port must be a number in 1-65535"))
    }
}

fn check_ipv6_literal(bracketed: &str) -> Result<(), Error> {
    let inner = bracketed.strip_suffix(']').unwrap_or(bracketed);
    let valid = inner.contains(':')
        && inner
            .bytes()
            .all(|b| b.is_ascii_hexdigit() || b == b':' || b == b'.');
    if valid {
        Ok(())
    } else {
        Err(Error::InvalidOrigin("malformed IPv6 literal"))
    }
}

fn check_reg_name(host: &str) -> Result<(), Error> {
    if host.is_empty() {
        return Err(Error::InvalidOrigin("missing host"));
    }
    let valid = host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'));
    let dots = host.as_bytes().windows(2).any(|w| w == b"..");
    if !valid || host.starts_with('.') || dots {
        return Err(Error::InvalidOrigin(
            "host must be a DNS name or an IP address",
        ));
    }
    Ok(())
}

fn check_prefix(prefix: &str) -> Result<(), Error> {
    if prefix.contains(['?', '#']) {
        return Err(Error::InvalidOrigin(
            "a query or fragment is not allowed in an origin URL",
        ));
    }
    if !prefix.bytes().all(is_visible_ascii) {
        return Err(Error::InvalidOrigin(
            "path prefix holds a byte that must be percent-encoded",
        ));
    }
    Ok(())
}

fn check_target_part(part: &str, forbidden: u8, reason: &'static str) -> Result<(), Error> {
    if part
        .bytes()
        .all(|b| is_visible_ascii(b) && b != b'#' && b != forbidden)
    {
        Ok(())
    } else {
        Err(Error::InvalidTarget(reason))
    }
}

fn is_visible_ascii(b: u8) -> bool {
    (0x21..=0x7e).contains(&b)
}

#[cfg(test)]
mod tests;

/// Whether `url` is an origin of the usual shape, checked in one pass: `http(s)://`, a host of
/// letters, digits, `-`, `_` and single dots (not first), an optional port, an optional path
/// prefix of visible ASCII without `?` or `#`. `true` only where [`split_checked`] accepts;
/// `false` leaves the verdict, and the reason of a refusal, to it. Host tables check every
/// address (a million at most), and the general checks take several passes.
fn plainly_valid(url: &str) -> bool {
    let b = url.as_bytes();
    let rest = match b {
        _ if b.len() > MAX_URL_LEN => return false,
        [h, t, t2, p, b':', b'/', b'/', rest @ ..]
            if b"http".eq_ignore_ascii_case(&[*h, *t, *t2, *p]) =>
        {
            rest
        }
        [h, t, t2, p, s, b':', b'/', b'/', rest @ ..]
            if b"https".eq_ignore_ascii_case(&[*h, *t, *t2, *p, *s]) =>
        {
            rest
        }
        _ => return false,
    };
    let host = host_len(rest);
    if host == 0 {
        return false;
    }
    let Some(after_port) = port_end(rest, host) else {
        return false;
    };
    match rest.get(after_port) {
        None => true,
        Some(b'/') => rest[after_port..]
            .iter()
            .all(|&c| is_visible_ascii(c) && c != b'?' && c != b'#'),
        Some(_) => false,
    }
}

/// Length of the leading DNS-name-or-IPv4 run of `rest`: name bytes, a dot only after one.
fn host_len(rest: &[u8]) -> usize {
    let mut after_name_byte = false;
    rest.iter()
        .take_while(|&&c| {
            let ok = match c {
                b'.' => after_name_byte,
                _ => c.is_ascii_alphanumeric() || c == b'-' || c == b'_',
            };
            after_name_byte = c != b'.';
            ok
        })
        .count()
}

/// Where `rest` goes on after an optional `:port` (1-65535, at most five digits) at `at`;
/// `None` if the port is malformed.
fn port_end(rest: &[u8], at: usize) -> Option<usize> {
    if rest.get(at) != Some(&b':') {
        return Some(at);
    }
    let digits = rest[at + 1..]
        .iter()
        .take(5)
        .take_while(|c| c.is_ascii_digit())
        .fold((0usize, 0u32), |(n, port), &c| {
            (n + 1, port * 10 + u32::from(c - b'0'))
        });
    match digits {
        (1.., 1..=65535) => Some(at + 1 + digits.0),
        _ => None,
    }
}

/// `url` checked and split into scheme, authority and path prefix (trailing `/` kept).
fn split_checked(url: &str) -> Result<(Scheme, &str, &str), Error> {
    if url.len() > MAX_URL_LEN {
        return Err(Error::InvalidOrigin("longer than 16 KiB"));
    }
    let (scheme, rest) = split_scheme(url)?;
    let authority_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, prefix) = rest.split_at(authority_len);
    check_authority(authority)?;
    check_prefix(prefix)?;
    Ok((scheme, authority, prefix))
}
