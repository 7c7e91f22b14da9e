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
    plain_rest(url).is_some_and(host_port_path)
}

/// Whether every one of `urls` is [`plainly_valid`] and at most `max_len` bytes long. Four at
/// a time, their scans interleaved: each scan is a chain of loads that wait for each other, so
/// the others run in its shadow (a host table's addresses are alike in length). `false`
/// leaves the verdicts to [`Origin::check`], one by one.
pub(crate) fn all_plainly_valid<'a>(
    mut urls: impl Iterator<Item = &'a str>,
    max_len: usize,
) -> bool {
    let rest = |url: &'a str| plain_rest(url).filter(|_| url.len() <= max_len);
    loop {
        let batch: [Option<&str>; LANES] = core::array::from_fn(|_| urls.next());
        let rests = batch.map(|url| url.map(rest));
        match rests {
            [Some(Some(a)), Some(Some(b)), Some(Some(c)), Some(Some(d))] => {
                if !host_port_path_lanes([a, b, c, d]) {
                    return false;
                }
            }
            // The last few, or one that is not `http(s)://` (then the verdict is `false`).
            tail => {
                let mut tail = tail.into_iter().flatten();
                return tail.all(|rest| rest.is_some_and(host_port_path));
            }
        }
    }
}

/// Scans [`all_plainly_valid`] interleaves.
const LANES: usize = 4;

/// What follows `http(s)://` in `url`, if that is how it starts and it is not too long.
fn plain_rest(url: &str) -> Option<&[u8]> {
    let b = url.as_bytes();
    if b.len() > MAX_URL_LEN {
        return None;
    }
    // Case folded by setting bit 5 of each byte: among all bytes, only `H` and `h` give `h`,
    // and so on for the other letters of the schemes; one comparison instead of one a byte.
    const HTTP: u32 = u32::from_le_bytes(*b"http");
    let http = |a: u8, b: u8, c: u8, d: u8| u32::from_le_bytes([a, b, c, d]) | 0x2020_2020 == HTTP;
    match b {
        [a, b, c, d, b':', b'/', b'/', rest @ ..] if http(*a, *b, *c, *d) => Some(rest),
        [a, b, c, d, s, b':', b'/', b'/', rest @ ..]
            if http(*a, *b, *c, *d) && *s | 0x20 == b's' =>
        {
            Some(rest)
        }
        _ => None,
    }
}

/// States of [`host_port_path`]'s scan: where in `host[:port][/path]` the bytes so far end.
mod state {
    /// No host byte yet.
    pub const START: u8 = 0;
    /// After a host byte (letter, digit, `-`, `_`).
    pub const NAMED: u8 = 1;
    /// After a dot of the host.
    pub const DOTTED: u8 = 2;
    /// After the `:` of a port.
    pub const COLON: u8 = 3;
    /// After the first digit of the port; `PORT + n` after n + 1 digits (five at most).
    pub const PORT: u8 = 4;
    pub const PATH: u8 = 9;
    pub const FAIL: u8 = 10;
}

/// The state after each byte, from each state; rows past the states are all `FAIL` (so that
/// [`STEP`]'s index, masked to its length, needs no bounds check and never leaves `FAIL`).
const NEXT: [[u8; 256]; 16] = {
    let mut table = [[state::FAIL; 256]; 16];
    let mut s = 0;
    while s < 16 {
        let mut c = 0;
        while c < 256 {
            table[s][c] = next(s as u8, c as u8);
            c += 1;
        }
        s += 1;
    }
    table
};

/// [`NEXT`] with its rows laid end to end and each state stored times 256, its row's start: a
/// step is then an add, a mask and a load, where indexing [`NEXT`] also waits for a shift
/// (the scan is one chain of steps, each waiting for the one before).
const STEP: [u16; 16 * 256] = {
    let mut table = [0u16; 16 * 256];
    let mut i = 0;
    while i < 16 * 256 {
        table[i] = (NEXT[i / 256][i % 256] as u16) << 8;
        i += 1;
    }
    table
};

const fn next(s: u8, c: u8) -> u8 {
    use state::*;
    let host_byte = c.is_ascii_alphanumeric() || c == b'-' || c == b'_';
    match s {
        START => {
            if host_byte {
                NAMED
            } else {
                FAIL
            }
        }
        NAMED | DOTTED => match c {
            _ if host_byte => NAMED,
            b'.' if s == NAMED => DOTTED,
            b':' => COLON,
            b'/' => PATH,
            _ => FAIL,
        },
        // Five digits at most: `PORT + 4` takes no more.
        COLON..=7 if c.is_ascii_digit() => s + 1,
        PORT..=8 if c == b'/' => PATH,
        PATH if matches!(c, 0x21..=0x7e) && c != b'?' && c != b'#' => PATH,
        _ => FAIL,
    }
}

/// Whether the bytes after `scheme://` are a host of letters, digits, `-`, `_` and single
/// dots (not first), an optional port 1-65535 of at most five digits, and an optional path of
/// visible ASCII without `?` or `#`. One table step per byte, with no branch on the bytes:
/// addresses differ in where their dots, port and path fall, and a scan part by part
/// mispredicted about four branches per address.
fn host_port_path(rest: &[u8]) -> bool {
    Scan::new(rest).run(0, rest.len()).verdict()
}

/// [`host_port_path`] of each of `rests`, their scans interleaved.
fn host_port_path_lanes(rests: [&[u8]; LANES]) -> bool {
    let common = rests.iter().map(|r| r.len()).min().unwrap_or(0);
    let mut scans = rests.map(Scan::new);
    for i in 0..common {
        for scan in &mut scans {
            scan.step(i);
        }
    }
    let mut finished = scans.into_iter().map(|s| {
        let len = s.rest.len();
        s.run(common, len)
    });
    finished.all(|s| s.verdict())
}

/// A scan of the bytes after `scheme://` by [`STEP`].
struct Scan<'a> {
    rest: &'a [u8],
    /// The state, times 256.
    at: usize,
    /// Where the port's digits start (the end if there is no port): a position, not an
    /// `Option`, is one conditional move per byte.
    port: usize,
}

impl<'a> Scan<'a> {
    fn new(rest: &'a [u8]) -> Scan<'a> {
        Scan {
            rest,
            at: usize::from(state::START) << 8,
            port: rest.len(),
        }
    }

    /// Takes byte `i` (< the length).
    #[inline(always)]
    fn step(&mut self, i: usize) {
        let c = self.rest[i];
        self.at = usize::from(STEP[(self.at + usize::from(c)) & 0xfff]);
        self.port = if self.at == usize::from(state::COLON) << 8 {
            i + 1
        } else {
            self.port
        };
    }

    /// Takes bytes `from..to`.
    fn run(mut self, from: usize, to: usize) -> Scan<'a> {
        for i in from..to {
            self.step(i);
        }
        self
    }

    /// Whether the bytes taken (all of them) are a host, port and path.
    fn verdict(&self) -> bool {
        let complete = !matches!(
            (self.at >> 8) as u8,
            state::START | state::COLON | state::FAIL
        );
        let rest = self.rest;
        complete && (self.port == rest.len() || port_in_range(&rest[self.port..]))
    }
}

/// Whether the port the scan let through (one to five digits, then the end or `/`) is
/// 1-65535. A fixed five steps, no exit at the last digit.
fn port_in_range(digits: &[u8]) -> bool {
    let (mut port, mut more) = (0u32, true);
    for i in 0..5 {
        let d = digits.get(i).map_or(10, |c| c.wrapping_sub(b'0'));
        more &= d < 10;
        port = if more { port * 10 + u32::from(d) } else { port };
    }
    (1..=65535).contains(&port)
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
