//! Deterministic header-name workloads, shared by the criterion bench and the Wasm bench binary
//! so both measure exactly the same inputs.
//!
//! - W1 is trie-hard's own workload, so its figures can be set beside trie-hard's published ones.
//! - W2 is what an edge proxy sees: requests of 10–30 lowercase names (HTTP/2), one or two of them
//!   internal, the rest common names of which many share a prefix with an internal one.
//! - W3 is W2 as HTTP/1.1 clients send it, in Title-Case.

use std::collections::BTreeSet;

use edgewise::{DEFAULT_INTERNAL_REQUEST_HEADERS, HeaderSet};

/// trie-hard 0.2.0's `data/headers.txt`, the name list of its own benchmarks.
pub const TRIE_HARD_HEADERS: &str = include_str!("../data/trie-hard-headers.txt");

/// Hit rates (percent) of trie-hard's published header benchmark that W1 repeats.
pub const W1_HIT_PERCENTS: [u32; 4] = [1, 5, 10, 100];

/// Lookups per W1 stream: trie-hard's README charts "10k entries".
pub const W1_LOOKUPS: usize = 10_000;

/// Requests per W2/W3 workload: ~4,000 header lookups, too many distinct ones for the branch
/// predictor to learn, while the names (~400 KB with their allocations) stay in L2 as a request
/// the proxy just parsed would. With 1,000 requests (~2 MB) every peer paid a cache-miss floor
/// that hid the differences between them.
pub const REQUESTS: usize = 200;

/// A header as a parsed request holds it: name and value, each its own allocation.
pub type Header = (Box<[u8]>, Box<[u8]>);

/// A small deterministic generator (splitmix64): fixed seeds make every run and every target
/// see the same workload.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce5_e9b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n`; the modulo bias is irrelevant for workload shaping.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below(hi - lo + 1)
    }

    /// Fisher–Yates shuffle.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }
}

/// trie-hard's header names, deduplicated and each reversed byte for byte, as its criterion
/// bench builds its set (reversal spreads the names' first bytes, defeating the shared `accept-`
/// and `content-` prefixes). Sorted so that hits cycle in a fixed order; trie-hard iterates a
/// `HashSet`, whose order changes per run.
///
/// Two entries are left out for every peer because they are no header names: the empty string
/// trie-hard's bench gets from splitting the file's blank first line on whitespace, and
/// `referer[sic]`, which edgewise refuses (`[` is not a token character). That leaves 117.
pub fn trie_hard_reversed_names() -> Vec<Vec<u8>> {
    TRIE_HARD_HEADERS
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter(|name| HeaderSet::new([name]).is_ok())
        .map(|name| name.bytes().rev().collect::<Vec<u8>>())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

/// W1: one lookup stream over trie-hard's reversed names.
#[derive(Debug, Clone)]
pub struct W1 {
    /// The set every peer is built from.
    pub set: Vec<Vec<u8>>,
    /// Names to look up, hits and misses interleaved.
    pub lookups: Vec<Vec<u8>>,
    /// How many of `lookups` are in `set`.
    pub hits: usize,
    /// The hit rate the stream was made for.
    pub hit_percent: u32,
}

/// The W1 stream at `hit_percent`: like trie-hard's `generate_samples`, a roulette turns every
/// (100 / `hit_percent`)th sample into the next name of the set, cycling; the other samples are
/// random `[a-z0-9-]` names of 4–29 bytes, the shape of trie-hard's `data/random.txt`.
pub fn w1(set: &[Vec<u8>], hit_percent: u32, len: usize) -> W1 {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789-";
    let mut rng = SplitMix64::new(0x5eed_0001 ^ u64::from(hit_percent));
    let members: BTreeSet<&[u8]> = set.iter().map(Vec::as_slice).collect();
    let mut next_hit = set.iter().cycle();
    let mut roulette = 0;
    let mut lookups = Vec::with_capacity(len);
    let mut hits = 0;
    for _ in 0..len {
        roulette += hit_percent;
        if roulette >= 100 {
            roulette -= 100;
            if let Some(name) = next_hit.next() {
                lookups.push(name.clone());
                hits += 1;
                continue;
            }
        }
        // A random name that happens to be a member would make the stated hit rate a lie.
        let miss = loop {
            let n = rng.between(4, 29);
            let candidate: Vec<u8> = (0..n)
                .map(|_| ALPHABET[rng.below(ALPHABET.len())])
                .collect();
            if !members.contains(candidate.as_slice()) {
                break candidate;
            }
        };
        lookups.push(miss);
    }
    W1 {
        set: set.to_vec(),
        lookups,
        hits,
        hit_percent,
    }
}

/// Concrete names standing in for each prefix rule when a set without prefix rules (every peer)
/// must know that family.
const PREFIX_RULE_EXPANSION: [&str; 4] = ["id", "trace", "mode", "upstream-host"];

/// The W2/W3 internal set in both forms.
#[derive(Debug, Clone)]
pub struct InternalSet {
    /// What edgewise is built from: the default list, prefix rules included.
    pub rules: Vec<&'static str>,
    /// What the peers are built from: the default list with each `foo-*` rule replaced by a
    /// handful of concrete `foo-…` names, lowercase. Requests draw their internal names from here,
    /// so every peer knows every internal name a request carries.
    pub concrete: Vec<Vec<u8>>,
}

/// The internal set of W2/W3: `edgewise::DEFAULT_INTERNAL_REQUEST_HEADERS`.
pub fn internal_set() -> InternalSet {
    let rules: Vec<&'static str> = DEFAULT_INTERNAL_REQUEST_HEADERS.to_vec();
    let mut concrete = BTreeSet::new();
    for rule in &rules {
        let lower = rule.to_ascii_lowercase();
        match lower.strip_suffix('*') {
            Some(prefix) => {
                for suffix in PREFIX_RULE_EXPANSION {
                    concrete.insert(format!("{prefix}{suffix}").into_bytes());
                }
            }
            None => {
                concrete.insert(lower.into_bytes());
            }
        }
    }
    InternalSet {
        rules,
        concrete: concrete.into_iter().collect(),
    }
}

/// Request header names seen in real traffic (browsers, API clients, CDNs, tracing). Many share a
/// prefix with an internal name (`x-forwarded-for` / `x-forwarded-user`, `x-amzn-trace-id` /
/// `x-amzn-oidc-data`, `x-client-ip` / `x-client-cert`, `fastly-…`, `akamai-…`), which is what
/// makes misses expensive for a trie.
const COMMON_REQUEST_HEADERS: &[&str] = &[
    "host",
    "user-agent",
    "accept",
    "accept-encoding",
    "accept-language",
    "accept-charset",
    "access-control-request-method",
    "access-control-request-headers",
    "authorization",
    "cache-control",
    "connection",
    "content-length",
    "content-type",
    "content-encoding",
    "content-language",
    "content-disposition",
    "cookie",
    "dnt",
    "expect",
    "forwarded",
    "if-match",
    "if-modified-since",
    "if-none-match",
    "if-range",
    "if-unmodified-since",
    "keep-alive",
    "origin",
    "pragma",
    "priority",
    "range",
    "referer",
    "te",
    "upgrade",
    "upgrade-insecure-requests",
    "via",
    "sec-ch-ua",
    "sec-ch-ua-mobile",
    "sec-ch-ua-platform",
    "sec-ch-ua-platform-version",
    "sec-ch-ua-arch",
    "sec-ch-ua-model",
    "sec-ch-ua-full-version-list",
    "sec-fetch-dest",
    "sec-fetch-mode",
    "sec-fetch-site",
    "sec-fetch-user",
    "sec-gpc",
    "sec-purpose",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "traceparent",
    "tracestate",
    "baggage",
    "cdn-loop",
    "true-client-ip",
    "cf-connecting-ip",
    "cf-ipcountry",
    "cf-ray",
    "cf-visitor",
    "x-forwarded-for",
    "x-forwarded-proto",
    "x-forwarded-host",
    "x-forwarded-port",
    "x-forwarded-prefix",
    "x-real-ip",
    "x-request-id",
    "x-correlation-id",
    "x-amzn-trace-id",
    "x-b3-traceid",
    "x-b3-spanid",
    "x-b3-sampled",
    "x-cloud-trace-context",
    "x-datadog-trace-id",
    "x-datadog-parent-id",
    "x-requested-with",
    "x-csrf-token",
    "x-xsrf-token",
    "x-api-key",
    "x-client-ip",
    "x-client-version",
    "x-http-method-override",
    "x-user-agent",
    "x-cache",
    "x-middleware-cache",
    "x-original-forwarded-for",
    "x-auth-token",
    "x-ms-client-request-id",
    "x-goog-api-client",
    "fastly-client",
];

/// W2/W3: requests to run the strip decision on.
#[derive(Debug, Clone)]
pub struct Requests {
    /// Each request's headers in arrival order.
    pub requests: Vec<Vec<Header>>,
    /// How many headers over all requests are internal.
    pub internal: usize,
}

impl Requests {
    /// How many headers over all requests.
    pub fn headers(&self) -> usize {
        self.requests.iter().map(Vec::len).sum()
    }
}

/// The request-name pool W2 draws its non-internal names from: the common names that `is_internal`
/// (edgewise's answer, prefix rules included) calls not internal. Filtering by edgewise's own
/// answer keeps every miss a miss for edgewise and for the peers alike.
pub fn miss_pool(is_internal: impl Fn(&[u8]) -> bool) -> Vec<&'static str> {
    COMMON_REQUEST_HEADERS
        .iter()
        .copied()
        .filter(|name| !is_internal(name.as_bytes()))
        .collect()
}

/// W2: `count` requests of 10–30 distinct lowercase names, of which one or two (drawn from
/// `internal.concrete`) are internal and the rest come from `pool`, in random order.
pub fn w2(internal: &InternalSet, pool: &[&str], count: usize) -> Requests {
    let mut rng = SplitMix64::new(0x5eed_0002);
    let mut requests = Vec::with_capacity(count);
    let mut internal_total = 0;
    let mut shuffled: Vec<&[u8]> = pool.iter().map(|name| name.as_bytes()).collect();
    for _ in 0..count {
        let len = rng.between(10, 30);
        let internal_count = rng.between(1, 2);
        rng.shuffle(&mut shuffled);
        let mut names: Vec<&[u8]> = shuffled
            .iter()
            .copied()
            .take(len - internal_count)
            .collect();
        let first_internal = rng.below(internal.concrete.len());
        let mut second_internal = rng.below(internal.concrete.len());
        if second_internal == first_internal {
            second_internal = (first_internal + 1) % internal.concrete.len();
        }
        for index in [first_internal, second_internal]
            .into_iter()
            .take(internal_count)
        {
            let at = rng.between(0, names.len());
            names.insert(at, &internal.concrete[index]);
        }
        internal_total += internal_count;
        requests.push(
            names
                .into_iter()
                .map(|name| (Box::from(name), Box::from(&b"1"[..])))
                .collect(),
        );
    }
    Requests {
        requests,
        internal: internal_total,
    }
}

/// `x-forwarded-for` → `X-Forwarded-For`.
pub fn title_case(name: &[u8]) -> Vec<u8> {
    let mut start = true;
    name.iter()
        .map(|&b| {
            let out = if start {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            };
            start = b == b'-';
            out
        })
        .collect()
}

/// W3: the same requests as `w2`, names in Title-Case.
pub fn w3(w2: &Requests) -> Requests {
    Requests {
        requests: w2
            .requests
            .iter()
            .map(|request| {
                request
                    .iter()
                    .map(|(name, value)| (title_case(name).into_boxed_slice(), value.clone()))
                    .collect()
            })
            .collect(),
        internal: w2.internal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trie_hard_names_are_reversed_and_complete() {
        let names = trie_hard_reversed_names();
        assert_eq!(names.len(), 117);
        assert!(names.contains(&b"snoitidda-tpecca".to_vec()));
    }

    #[test]
    fn w1_hits_at_the_stated_rate() {
        let set = trie_hard_reversed_names();
        for percent in W1_HIT_PERCENTS {
            let stream = w1(&set, percent, W1_LOOKUPS);
            assert_eq!(stream.lookups.len(), W1_LOOKUPS);
            assert_eq!(stream.hits, W1_LOOKUPS * percent as usize / 100);
            let counted = stream.lookups.iter().filter(|n| set.contains(n)).count();
            assert_eq!(counted, stream.hits);
            assert!(
                stream
                    .lookups
                    .iter()
                    .all(|n| (4..=29).contains(&n.len()) || set.contains(n))
            );
        }
    }

    #[test]
    fn requests_have_the_promised_shape() {
        let internal = internal_set();
        let pool = miss_pool(|name| internal.concrete.iter().any(|c| c == name));
        let requests = w2(&internal, &pool, 200);
        let mut internal_seen = 0;
        for request in &requests.requests {
            assert!((10..=30).contains(&request.len()));
            let n = request
                .iter()
                .filter(|(name, _)| internal.concrete.iter().any(|c| **c == **name))
                .count();
            assert!((1..=2).contains(&n));
            internal_seen += n;
        }
        assert_eq!(internal_seen, requests.internal);
        let title = w3(&requests);
        assert_eq!(title.headers(), requests.headers());
    }

    #[test]
    fn title_case_capitalises_each_word() {
        assert_eq!(title_case(b"x-forwarded-for"), b"X-Forwarded-For");
        assert_eq!(title_case(b"dnt"), b"Dnt");
    }

    #[test]
    fn prefix_rules_are_expanded() {
        let internal = internal_set();
        assert!(internal.concrete.iter().all(|n| !n.ends_with(b"*")));
        assert!(internal.concrete.len() >= internal.rules.len());
    }
}
