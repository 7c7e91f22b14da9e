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

    /// The port a URL of this scheme means when it names none.
    pub fn default_port(self) -> &'static str {
        match self {
            Scheme::Http => "80",
            Scheme::Https => "443",
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
    /// Scheme and host are case-normalised, a port's leading zeros and the scheme's default
    /// port dropped, and so is a trailing `/` on the prefix. Userinfo, queries and fragments
    /// are refused.
    pub fn parse(url: &str) -> Result<Origin, Error> {
        let (scheme, authority, prefix) = split_checked(url)?;
        let prefix = prefix.trim_end_matches('/');
        let (host, port) = split_port(authority)?;

        let mut base = String::with_capacity(url.len());
        base.push_str(scheme.as_str());
        base.push_str("://");
        let start = base.len();
        base.extend(host.chars().map(|c| c.to_ascii_lowercase()));
        if let Some(port) = normal_port(scheme, port) {
            base.push(':');
            base.push_str(port);
        }
        let end = base.len();
        base.push_str(prefix);
        Ok(Origin {
            scheme,
            base,
            authority: start..end,
        })
    }

    /// Checks `url` as [`Origin::parse`] does, without building the origin: host tables
    /// validate up to a million addresses. `Ok(false)` if `url` is valid but not in normal
    /// form: the one [`Origin::as_str`] gives (lower-case scheme and host, a port without
    /// leading zeros and not the scheme's default, no trailing `/`).
    pub(crate) fn check(url: &str) -> Result<bool, Error> {
        if plain(url) {
            return Ok(true);
        }
        let (scheme, authority, prefix) = split_checked(url)?;
        let name = &url[..url.len() - authority.len() - prefix.len()];
        let lower = |s: &str| !s.bytes().any(|b| b.is_ascii_uppercase());
        let (_, port) = split_port(authority)?;
        let port_normal = normal_port(scheme, port) == port;
        Ok(lower(name) && lower(authority) && port_normal && !prefix.ends_with('/'))
    }

    /// The origin's scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// `host[:port]`, lower case.
    pub fn authority(&self) -> &str {
        &self.base[self.authority.clone()]
    }

    /// The host without its port: a name, an IPv4 address or a bracketed IPv6 one.
    pub fn host(&self) -> &str {
        // Validated when parsed: the split cannot fail.
        split_port(self.authority()).map_or(self.authority(), |(host, _)| host)
    }

    /// Whether the host is this machine: `localhost`, an address of `127.0.0.0/8` or `[::1]`.
    /// Traffic to it never crosses a network.
    pub fn is_loopback(&self) -> bool {
        let host = self.host();
        host == "localhost"
            || host == "[::1]"
            || host
                .parse::<core::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
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
    if authority.as_bytes().contains(&b'@') {
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

/// A checked port as the normal form writes it: without leading zeros, and none if it is the
/// scheme's default (`check_port` let only 1-65535 through: something is left of it).
fn normal_port(scheme: Scheme, port: Option<&str>) -> Option<&str> {
    port.map(|p| p.trim_start_matches('0'))
        .filter(|&p| p != scheme.default_port())
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
    Ok(match authority.bytes().rposition(|b| b == b':') {
        Some(colon) => (&authority[..colon], Some(&authority[colon + 1..])),
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
    let mut previous = b'.';
    let valid = host.bytes().all(|b| {
        let dots = b == b'.' && previous == b'.';
        previous = b;
        !dots && (b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    });
    if !valid {
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

/// Whether `url` is the usual origin in normal form, decided in one pass: `http://` or
/// `https://`, a host of lower-case letters, digits, `-` and `_` in dot-separated labels, and
/// an optional port of up to five digits, neither starting with 0 nor the scheme's default.
/// `false` leaves the verdict to the general checks of [`Origin::check`].
fn plain(url: &str) -> bool {
    let (scheme, rest) = match url.as_bytes() {
        [b'h', b't', b't', b'p', b':', b'/', b'/', rest @ ..] => (Scheme::Http, rest),
        [b'h', b't', b't', b'p', b's', b':', b'/', b'/', rest @ ..] => (Scheme::Https, rest),
        _ => return false,
    };
    let (host, port) = match rest.iter().position(|&b| b == b':') {
        Some(colon) => (&rest[..colon], Some(&rest[colon + 1..])),
        None => (rest, None),
    };
    let mut previous = b'.';
    let host_plain = !host.is_empty()
        && host.last() != Some(&b'.')
        && host.iter().all(|&b| {
            let fine = match b {
                b'.' => previous != b'.',
                b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' => true,
                _ => false,
            };
            previous = b;
            fine
        });
    let port_plain = port.is_none_or(|p| {
        let digits = (1..=5).contains(&p.len()) && p[0] != b'0' && p.iter().all(u8::is_ascii_digit);
        let value = || p.iter().fold(0u32, |n, &d| n * 10 + u32::from(d - b'0'));
        digits && value() <= 65_535 && p != scheme.default_port().as_bytes()
    });
    url.len() <= MAX_URL_LEN && host_plain && port_plain
}

/// `url` checked and split into scheme, authority and path prefix (trailing `/` kept).
fn split_checked(url: &str) -> Result<(Scheme, &str, &str), Error> {
    if url.len() > MAX_URL_LEN {
        return Err(Error::InvalidOrigin("longer than 16 KiB"));
    }
    let (scheme, rest) = split_scheme(url)?;
    let authority_len = (rest.bytes())
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let (authority, prefix) = rest.split_at(authority_len);
    check_authority(authority)?;
    check_prefix(prefix)?;
    Ok((scheme, authority, prefix))
}
