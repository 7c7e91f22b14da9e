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
        if plainly_valid(url) {
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

/// Whether `url` is an origin of the usual shape and in normal form, checked in one pass:
/// `http(s)://`, a host of lower-case letters, digits, `-`, `_` and single dots (not first),
/// an optional port without leading zeros and neither 80 nor 443 (either scheme's default:
/// a port the scan cannot place, left to the general check), an optional path prefix of
/// visible ASCII without `?` or `#` and not ending in `/`. `true` only where [`split_checked`] accepts; `false` leaves the verdict, and
/// the reason of a refusal, to it. Host tables check every address (a million at most), and
/// the general checks take several passes.
fn plainly_valid(url: &str) -> bool {
    plain_rest(url).is_some_and(host_port_path) && !url.ends_with('/')
}

/// What [`scan_plain`] found of a list of URLs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Scanned {
    /// Every URL is [`plainly_valid`] and within the length allowed.
    pub plain: bool,
    /// Each URL sorts strictly after the one before, byte by byte (meaningful when `plain`).
    pub ascending: bool,
}

impl Scanned {
    /// Whether the URLs ascend strictly, if the scan read them all (`None` if not plain).
    pub fn order(&self) -> Option<bool> {
        self.plain.then_some(self.ascending)
    }
}

/// Whether every one of `urls` is [`plainly_valid`] and at most `max_len` bytes long (if
/// not, [`Origin::check`] gives the verdicts one by one), and whether they ascend strictly, in
/// one pass. A host table's addresses come sorted, and each shares most of its bytes with the
/// one before (`http://10.0.1.` of `http://10.0.1.17:8080`): the scan resumes where they part,
/// from its state there, kept per byte of the URL before. Where they part also says which
/// sorts first, which spares a pass of its own comparing neighbours (a build of 100k hosts
/// made both passes: eight scans interleaved, each of every byte, then the comparisons).
pub(crate) fn scan_plain<'a, U>(urls: impl Iterator<Item = &'a U>, max_len: usize) -> Scanned
where
    U: AsRef<[u8]> + ?Sized + 'a,
{
    // `states[k]`: the scan after `k` bytes past the scheme of the URL before. The URLs
    // checked are at most `max_len` long, and no URL past `MAX_URL_LEN` is plainly valid:
    // bounded by both, no scan runs past `states`.
    let max_len = max_len.min(MAX_URL_LEN);
    let mut states = alloc::vec![START_AT; max_len + 1];
    let (mut last, mut last_scheme): (&[u8], usize) = (&[], 0);
    let mut ascending = true;
    let refused = |ascending| Scanned {
        plain: false,
        ascending,
    };
    for url in urls {
        let url = url.as_ref();
        if url.len() > max_len || url.last() == Some(&b'/') {
            return refused(ascending);
        }
        let shared = shared_prefix(last, url);
        ascending &= precedes_at(last, url, shared);
        // A URL that starts as the one before through its scheme has that scheme: its test
        // of the scheme bytes was a sixth of a scan of 8k addresses.
        let resumed = last_scheme > 0 && shared >= last_scheme;
        let (scheme, from) = match resumed {
            true => (last_scheme, shared - last_scheme),
            false => match scheme_len(url) {
                Some(scheme) => (scheme, 0),
                None => return refused(ascending),
            },
        };
        let rest = &url[scheme..];
        // A URL as long as the one before, with the same scheme, whose bytes where they
        // differ leave the scan as the one before's left it, ends as that one ended
        // (accepted), with the same states: neighbours in a table mostly differ in a digit
        // or two and end alike (`:8080`), and stepping their last bytes was half a scan.
        let to = match resumed && url.len() == last.len() && shared < url.len() {
            true => rest.len() - shared_suffix(last, url),
            false => rest.len(),
        };
        let before = states[to];
        let at = steps(states[from], &rest[from..to], &mut states[from + 1..]);
        let ends_as_before = to < rest.len() && at == before;
        if !ends_as_before && !accepts(steps(at, &rest[to..], &mut states[to + 1..])) {
            return refused(ascending);
        }
        (last, last_scheme) = (url, scheme);
    }
    Scanned {
        plain: true,
        ascending,
    }
}

/// Whether `a` sorts strictly before `b`, given that they start with `shared` bytes alike:
/// by the byte where they part, or, if one ends there, by their lengths.
#[inline]
pub(crate) fn precedes_at(a: &[u8], b: &[u8], shared: usize) -> bool {
    match (a.get(shared), b.get(shared)) {
        (Some(x), Some(y)) => x < y,
        (x, _) => x.is_none() && shared < b.len(),
    }
}

/// How many bytes `a` and `b` start with alike, compared a word at a time; past 8 bytes, the
/// last few by the word that ends where the shorter does (its bytes before are alike already),
/// not one by one.
#[inline]
pub(crate) fn shared_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    if n < 8 {
        return a.iter().zip(b).take_while(|(x, y)| x == y).count();
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let parted = |at: usize| {
        let differ = word(a, at) ^ word(b, at);
        (differ != 0).then(|| at + (differ.trailing_zeros() / 8) as usize)
    };
    let mut at = 0;
    while at + 8 <= n {
        if let Some(shared) = parted(at) {
            return shared;
        }
        at += 8;
    }
    parted(n - 8).unwrap_or(n)
}

/// The scan through `bytes` from `at`, each state after a byte kept in `states` (for the
/// next URL to resume from).
#[inline(always)]
fn steps(mut at: usize, bytes: &[u8], states: &mut [usize]) -> usize {
    for (c, state) in bytes.iter().zip(states) {
        at = step(at, c);
        *state = at;
    }
    at
}

/// How many bytes `a` and `b`, of one length and not alike, end with alike, up to 8 (0 for
/// URLs shorter than a word, which no scan is).
#[inline]
fn shared_suffix(a: &[u8], b: &[u8]) -> usize {
    debug_assert!(a.len() == b.len() && a != b);
    let (Some(a), Some(b)) = (a.last_chunk::<8>(), b.last_chunk::<8>()) else {
        return 0;
    };
    let differ = u64::from_le_bytes(*a) ^ u64::from_le_bytes(*b);
    // Little-endian: the last byte is the most significant.
    (differ.leading_zeros() / 8) as usize
}

/// What follows `http(s)://` in `url`, if that is how it starts and it is not too long.
fn plain_rest(url: &str) -> Option<&[u8]> {
    let b = url.as_bytes();
    if b.len() > MAX_URL_LEN {
        return None;
    }
    scheme_len(b).map(|scheme| &b[scheme..])
}

/// The length of `url`'s `http://` or `https://`, if it starts with either (lower case only:
/// the normal form).
fn scheme_len(url: &[u8]) -> Option<usize> {
    match url {
        [b'h', b't', b't', b'p', b':', b'/', b'/', ..] => Some(7),
        [b'h', b't', b't', b'p', b's', b':', b'/', b'/', ..] => Some(8),
        _ => None,
    }
}

/// States of [`host_port_path`]'s scan: where in `host[:port][/path]` the bytes so far end,
/// and for a port, how its digits so far compare with 65535's: the scan decides the port's
/// range itself, where tracking where the port starts (a conditional move a byte) and parsing
/// it afterwards cost about a third of a check.
mod state {
    /// No host byte yet.
    pub const START: u8 = 0;
    /// After a host byte (letter, digit, `-`, `_`).
    pub const NAMED: u8 = 1;
    /// After a dot of the host.
    pub const DOTTED: u8 = 2;
    /// After the `:` of a port.
    pub const COLON: u8 = 3;
    pub const PATH: u8 = 4;
    pub const FAIL: u8 = 5;
    /// After `k` (1 to 4) digits of a port, the first not 0, `PORT + 3 * (k - 1) + c`: `c`
    /// says how they compare with the first `k` digits of 65535.
    pub const PORT: u8 = 6;
    pub const BELOW: u8 = 0;
    pub const EQUAL: u8 = 1;
    pub const ABOVE: u8 = 2;
    /// After five digits of a port 10000-65535.
    pub const FIVE: u8 = 18;
    /// After the digits of a prefix of a default port, 80 or 443 (`P80`, `P443`: the whole
    /// of one); otherwise as the port state [`super::generic`] gives.
    pub const P8: u8 = 19;
    pub const P80: u8 = 20;
    pub const P4: u8 = 21;
    pub const P44: u8 = 22;
    pub const P443: u8 = 23;
    /// States are below this.
    pub const COUNT: u8 = 24;
}

/// Rows of [`STEP`]: a power of two, so that a masked index never leaves the table.
const ROWS: usize = 32;

/// The state after each byte, from each state; rows past the states are all `FAIL` (so that
/// [`STEP`]'s index, masked to its length, needs no bounds check and never leaves `FAIL`).
const NEXT: [[u8; 256]; ROWS] = {
    let mut table = [[state::FAIL; 256]; ROWS];
    let mut s = 0;
    while s < state::COUNT as usize {
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
const STEP: [u16; ROWS * 256] = {
    let mut table = [0u16; ROWS * 256];
    let mut i = 0;
    while i < ROWS * 256 {
        table[i] = (NEXT[i / 256][i % 256] as u16) << 8;
        i += 1;
    }
    table
};

/// Whether the scan may end in each state: a host, a port 1-65535 but 80 and 443, a path.
const ACCEPTS: [bool; ROWS] = {
    let mut accepts = [false; ROWS];
    let mut s = state::PORT;
    while s <= state::P443 {
        accepts[s as usize] = ends_port(s);
        s += 1;
    }
    accepts[state::NAMED as usize] = true;
    accepts[state::DOTTED as usize] = true;
    accepts[state::PATH as usize] = true;
    accepts
};

/// Whether the port may end in state `s` (a port state): anywhere but after 80 or 443.
const fn ends_port(s: u8) -> bool {
    !matches!(s, state::P80 | state::P443)
}

const fn next(s: u8, c: u8) -> u8 {
    use state::*;
    // Lower case only: the normal form.
    let host_byte = c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_';
    match s {
        START if host_byte => NAMED,
        NAMED | DOTTED => match c {
            _ if host_byte => NAMED,
            b'.' if s == NAMED => DOTTED,
            b':' => COLON,
            b'/' => PATH,
            _ => FAIL,
        },
        COLON => match c {
            b'8' => P8,
            b'4' => P4,
            // A leading zero is not the normal form (nor is port 0 valid).
            b'1'..=b'9' => port_after(COLON, c - b'0'),
            _ => FAIL,
        },
        P8 if c == b'0' => P80,
        P4 if c == b'4' => P44,
        P44 if c == b'3' => P443,
        P8..=P443 if c == b'/' => match ends_port(s) {
            true => PATH,
            false => FAIL,
        },
        P8..=P443 => next(generic(s), c),
        PORT..FIVE if c.is_ascii_digit() => port_after(s, c - b'0'),
        PORT..=FIVE if c == b'/' => PATH,
        PATH if matches!(c, 0x21..=0x7e) && c != b'?' && c != b'#' => PATH,
        _ => FAIL,
    }
}

/// The port state after digit `d`, from `COLON` or port state `s`.
const fn port_after(s: u8, d: u8) -> u8 {
    use state::*;
    const MAX: [u8; 5] = *b"65535";
    let (k, cmp) = match s {
        // No digits yet, equal to none of 65535's.
        COLON => (0, EQUAL),
        _ => ((s - PORT) / 3 + 1, (s - PORT) % 3),
    };
    let limit = MAX[k as usize] - b'0';
    let cmp = match cmp {
        EQUAL if d < limit => BELOW,
        EQUAL if d > limit => ABOVE,
        other => other,
    };
    match k {
        0..=3 => PORT + 3 * k + cmp,
        // The fifth digit: 65535 at most.
        _ => match cmp {
            BELOW | EQUAL => FIVE,
            _ => FAIL,
        },
    }
}

/// The port state of the digits a default port's prefix state stands for.
const fn generic(s: u8) -> u8 {
    use state::*;
    match s {
        P8 => port_after(COLON, 8),
        P80 => port_after(generic(P8), 0),
        P4 => port_after(COLON, 4),
        P44 => port_after(generic(P4), 4),
        P443 => port_after(generic(P44), 3),
        _ => s,
    }
}

/// Whether the bytes after `scheme://` are a host of letters, digits, `-`, `_` and single
/// dots (not first), an optional port 1-65535 but 80 and 443, without leading zeros, and an
/// optional path of visible ASCII without `?` or `#`. One table step per byte, with no
/// branch on the bytes: addresses differ in where their dots, port and path fall, and a scan
/// part by part mispredicted about four branches per address.
fn host_port_path(rest: &[u8]) -> bool {
    accepts(rest.iter().fold(START_AT, step))
}

/// The scan's start: [`state::START`] times 256.
const START_AT: usize = (state::START as usize) << 8;

/// The scan after byte `c`, from `at` (a state times 256).
#[inline(always)]
fn step(at: usize, &c: &u8) -> usize {
    usize::from(STEP[(at + usize::from(c)) & (ROWS * 256 - 1)])
}

/// Whether a scan may end at `at`.
fn accepts(at: usize) -> bool {
    ACCEPTS[(at >> 8) & (ROWS - 1)]
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
