//! edgewise's `HeaderSet` and its peers behind one trait, so every workload runs the very same
//! loop over each of them, monomorphised (no dynamic dispatch in the measured code).

use std::collections::HashSet;
use std::fmt;

use edgewise::HeaderSet;
use radix_trie::{Trie, TrieCommon};
use trie_hard::TrieHard;

use crate::workload::Header;

/// A set of header names answering membership.
pub trait Lookup {
    /// The label used in bench ids and tables.
    fn name(&self) -> &'static str;
    /// Whether `name` is in the set.
    fn contains(&self, name: &[u8]) -> bool;
}

impl<L: Lookup + ?Sized> Lookup for &L {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        (**self).contains(name)
    }
}

/// edgewise: ASCII case-insensitive, prefix rules built in.
#[derive(Debug)]
pub struct Edgewise(pub HeaderSet);

impl Edgewise {
    /// Built from edgewise's own input form (prefix rules allowed).
    pub fn new<S: AsRef<[u8]>>(names: &[S]) -> Self {
        match HeaderSet::new(names) {
            Ok(set) => Edgewise(set),
            Err(e) => panic!("edgewise refused the bench's name list: {e}"),
        }
    }
}

impl Lookup for Edgewise {
    fn name(&self) -> &'static str {
        "edgewise"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.contains(name)
    }
}

/// `std::collections::HashSet` with its default SipHash-1-3.
#[derive(Debug)]
pub struct StdHashSet(pub HashSet<Vec<u8>>);

impl StdHashSet {
    /// Built from lowercase concrete names.
    pub fn new(names: &[Vec<u8>]) -> Self {
        StdHashSet(names.iter().cloned().collect())
    }
}

impl Lookup for StdHashSet {
    fn name(&self) -> &'static str {
        "std-hashset"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.contains(name)
    }
}

/// `rustc_hash::FxHashSet`: the fast non-DoS-resistant hash many proxies reach for.
#[derive(Debug)]
pub struct FxHashSet(pub rustc_hash::FxHashSet<Vec<u8>>);

impl FxHashSet {
    /// Built from lowercase concrete names.
    pub fn new(names: &[Vec<u8>]) -> Self {
        FxHashSet(names.iter().cloned().collect())
    }
}

impl Lookup for FxHashSet {
    fn name(&self) -> &'static str {
        "fx-hashset"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.contains(name)
    }
}

/// trie-hard 0.2, the structure Pingora strips internal headers with.
#[derive(Debug)]
pub struct TrieHardSet<'a>(pub TrieHard<'a, ()>);

impl<'a> TrieHardSet<'a> {
    /// Built from lowercase concrete names, which the trie borrows.
    pub fn new(names: &'a [Vec<u8>]) -> Self {
        TrieHardSet(TrieHard::new(
            names.iter().map(|name| (name.as_slice(), ())).collect(),
        ))
    }
}

impl Lookup for TrieHardSet<'_> {
    fn name(&self) -> &'static str {
        "trie-hard"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.get_from_bytes(name).is_some()
    }
}

/// radix_trie 0.3, the general-purpose trie trie-hard measures itself against.
pub struct RadixTrieSet(pub Trie<Vec<u8>, ()>);

impl RadixTrieSet {
    /// Built from lowercase concrete names.
    pub fn new(names: &[Vec<u8>]) -> Self {
        let mut trie = Trie::new();
        for name in names {
            trie.insert(name.clone(), ());
        }
        RadixTrieSet(trie)
    }
}

// radix_trie's Debug prints every node; the size is all a reader of bench output needs.
impl fmt::Debug for RadixTrieSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RadixTrieSet")
            .field("len", &self.0.len())
            .finish()
    }
}

impl Lookup for RadixTrieSet {
    fn name(&self) -> &'static str {
        "radix-trie"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.get(name).is_some()
    }
}

/// The original loop's per-lookup form: compare against every internal name, ASCII
/// case-insensitively.
#[derive(Debug)]
pub struct OriginalLoop<'a>(pub &'a [Vec<u8>]);

impl Lookup for OriginalLoop<'_> {
    fn name(&self) -> &'static str {
        "original-loop"
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        self.0.iter().any(|known| known.eq_ignore_ascii_case(name))
    }
}

/// Longest name lowercased on the stack; the `http` crate uses the same 64-byte scratch buffer.
const LOWERCASE_BUF: usize = 64;

/// A case-sensitive set made ASCII case-insensitive the way a proxy would: lowercase the name
/// into a stack buffer, then look that up. The copy is part of what such a set costs.
#[derive(Debug)]
pub struct Lowercasing<L>(pub L);

impl<L: Lookup> Lookup for Lowercasing<L> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    #[inline]
    fn contains(&self, name: &[u8]) -> bool {
        let mut buf = [0u8; LOWERCASE_BUF];
        match buf.get_mut(..name.len()) {
            Some(lower) => {
                for (dst, src) in lower.iter_mut().zip(name) {
                    *dst = src.to_ascii_lowercase();
                }
                self.0.contains(lower)
            }
            None => self.0.contains(&name.to_ascii_lowercase()),
        }
    }
}

/// Something run once per peer: the criterion bench registers a bench, the Wasm binary times a
/// loop, setup checks the answers.
pub trait Visit {
    /// Called with each peer in turn.
    fn visit<L: Lookup>(&mut self, peer: &L);
}

/// Whether the workload's names may arrive in any case (HTTP/1.1) or are lowercase (HTTP/2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Case {
    /// Names are lowercase; case-sensitive peers look them up as they are.
    Lower,
    /// Names arrive in any case; case-sensitive peers lowercase first.
    Any,
}

/// Every structure of one run, each built from the same names.
#[derive(Debug)]
pub struct Peers<'a> {
    /// edgewise's set.
    pub edgewise: Edgewise,
    /// std HashSet.
    pub std: StdHashSet,
    /// Fx HashSet.
    pub fx: FxHashSet,
    /// trie-hard.
    pub trie_hard: TrieHardSet<'a>,
    /// radix_trie.
    pub radix: RadixTrieSet,
    /// The concrete lowercase names the original loop compares against.
    pub original: OriginalLoop<'a>,
}

impl<'a> Peers<'a> {
    /// edgewise from `rules` (its own input form), the others from `concrete` lowercase names.
    pub fn new<S: AsRef<[u8]>>(rules: &[S], concrete: &'a [Vec<u8>]) -> Self {
        Peers {
            edgewise: Edgewise::new(rules),
            std: StdHashSet::new(concrete),
            fx: FxHashSet::new(concrete),
            trie_hard: TrieHardSet::new(concrete),
            radix: RadixTrieSet::new(concrete),
            original: OriginalLoop(concrete),
        }
    }

    /// Visits the five sets (not the original loop, whose per-request form is no set lookup),
    /// edgewise first; for `Case::Any` the case-sensitive ones lowercase each name first.
    pub fn visit_sets(&self, case: Case, v: &mut impl Visit) {
        v.visit(&self.edgewise);
        match case {
            Case::Lower => {
                v.visit(&self.std);
                v.visit(&self.fx);
                v.visit(&self.trie_hard);
                v.visit(&self.radix);
            }
            Case::Any => {
                v.visit(&Lowercasing(&self.std));
                v.visit(&Lowercasing(&self.fx));
                v.visit(&Lowercasing(&self.trie_hard));
                v.visit(&Lowercasing(&self.radix));
            }
        }
    }
}

/// How many of `names` are in `set`: the per-lookup loop. Each name goes through `black_box` as in
/// trie-hard's own bench, so W1 figures compare with its published ones.
#[inline]
pub fn count_hits<L: Lookup>(set: &L, names: &[Vec<u8>]) -> usize {
    names
        .iter()
        .filter(|name| set.contains(std::hint::black_box(name)))
        .count()
}

/// The strip decision for one request: how many of its headers are internal.
#[inline]
pub fn count_internal<L: Lookup>(set: &L, request: &[Header]) -> usize {
    request
        .iter()
        .filter(|(name, _)| set.contains(name))
        .count()
}

/// The original strip: for each internal name, remove every header of that name from the
/// request (a copy of it in `scratch`, so the input stays intact between runs), comparing ASCII
/// case-insensitively. Returns how many headers were removed.
#[inline]
pub fn original_loop<'r>(
    internal: &[Vec<u8>],
    request: &'r [Header],
    scratch: &mut Vec<(&'r [u8], &'r [u8])>,
) -> usize {
    scratch.clear();
    scratch.extend(request.iter().map(|(name, value)| (&**name, &**value)));
    for known in internal {
        scratch.retain(|(name, _)| !name.eq_ignore_ascii_case(known));
    }
    request.len() - scratch.len()
}

/// Panics unless every peer finds exactly `expected` hits in `names`, so a bench can never
/// silently compare different work.
pub fn assert_lookups_agree(peers: &Peers<'_>, case: Case, names: &[Vec<u8>], expected: usize) {
    struct Check<'n> {
        names: &'n [Vec<u8>],
        expected: usize,
    }
    impl Visit for Check<'_> {
        fn visit<L: Lookup>(&mut self, peer: &L) {
            let got = count_hits(peer, self.names);
            assert_eq!(got, self.expected, "{} disagrees", peer.name());
        }
    }
    let mut check = Check { names, expected };
    peers.visit_sets(case, &mut check);
    check.visit(&peers.original);
}

/// Panics unless every peer, and the original loop, finds exactly `expected` internal headers
/// over `requests`.
pub fn assert_requests_agree(
    peers: &Peers<'_>,
    case: Case,
    requests: &[Vec<Header>],
    expected: usize,
) {
    struct Check<'n> {
        requests: &'n [Vec<Header>],
        expected: usize,
    }
    impl Visit for Check<'_> {
        fn visit<L: Lookup>(&mut self, peer: &L) {
            let got: usize = self
                .requests
                .iter()
                .map(|request| count_internal(peer, request))
                .sum();
            assert_eq!(got, self.expected, "{} disagrees", peer.name());
        }
    }
    peers.visit_sets(case, &mut Check { requests, expected });
    let mut scratch = Vec::new();
    let got: usize = requests
        .iter()
        .map(|request| original_loop(peers.original.0, request, &mut scratch))
        .sum();
    assert_eq!(got, expected, "original-loop disagrees");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::{self, Requests};

    fn w2() -> (workload::InternalSet, Requests) {
        let internal = workload::internal_set();
        let edgewise = Edgewise::new(&internal.rules);
        let pool = workload::miss_pool(|name| edgewise.contains(name));
        let requests = workload::w2(&internal, &pool, 300);
        (internal, requests)
    }

    #[test]
    fn all_peers_agree_on_w1() {
        let set = workload::trie_hard_reversed_names();
        let peers = Peers::new(&set, &set);
        for percent in workload::W1_HIT_PERCENTS {
            let stream = workload::w1(&set, percent, 2_000);
            assert_lookups_agree(&peers, Case::Lower, &stream.lookups, stream.hits);
        }
    }

    #[test]
    fn all_peers_agree_on_w2_and_w3() {
        let (internal, requests) = w2();
        let peers = Peers::new(&internal.rules, &internal.concrete);
        assert_requests_agree(&peers, Case::Lower, &requests.requests, requests.internal);
        let title = workload::w3(&requests);
        assert_requests_agree(&peers, Case::Any, &title.requests, title.internal);
    }

    #[test]
    fn lowercasing_handles_names_longer_than_its_buffer() {
        let long = vec![b'a'; LOWERCASE_BUF + 10];
        let set = StdHashSet::new(std::slice::from_ref(&long));
        let upper = long.to_ascii_uppercase();
        assert!(Lowercasing(&set).contains(&upper));
        assert!(!set.contains(&upper));
    }

    #[test]
    fn original_loop_removes_every_occurrence() {
        let internal = vec![b"x-internal".to_vec()];
        let request: Vec<Header> = [&b"Host"[..], b"X-Internal", b"x-internal"]
            .iter()
            .map(|name| (Box::from(*name), Box::from(&b""[..])))
            .collect();
        assert_eq!(original_loop(&internal, &request, &mut Vec::new()), 2);
    }
}
