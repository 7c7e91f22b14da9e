//! Internal header sets: which header names an edge must strip, decided in a few nanoseconds.
//!
//! More than 90% of lookups miss (ordinary request headers), so a miss must be nearly free.
//! [`HeaderSet`] keys a small table by (length, first byte, last byte): the key is computed from
//! the probe without reading its middle, and a perfect-hash seed is searched at build time so
//! that distinct keys never share a slot. A miss therefore costs one multiply and one slot load;
//! a hit adds one case-folding compare, eight bytes at a time. Prefix rules (`x-edgewise-*`) live
//! in the same table, keyed by (prefix length, first byte, last byte of the prefix): a probe
//! costs one more slot load per distinct prefix length, and only when a two-byte bitmap filter
//! lets it through, so ordinary `x-forwarded-*` names do not probe at all.
//!
//! Names match ignoring ASCII case and reading `_` as `-`: CGI-style gateways (PHP's
//! `$_SERVER`, Django's `META`, WSGI, Go's `net/http/cgi`, Rack before CVE-2024-45614) turn
//! both `X-Remote-User` and `X-Remote_User` into `HTTP_X_REMOTE_USER`, so an edge that strips
//! only the first lets a client set the second. nginx drops names with `_` by default for the
//! same reason.
//!
//! Building takes microseconds for a hundred names, cheap enough for a Worker cold start.

mod defaults;
mod fold;
mod token;

use alloc::{boxed::Box, string::String, vec, vec::Vec};
use core::fmt;

pub use defaults::{DEFAULT_INTERNAL_REQUEST_HEADERS, DEFAULT_INTERNAL_RESPONSE_HEADERS};

use crate::Error;

/// The `from_list` token that stands for the built-in list.
pub const DEFAULT_LIST_TOKEN: &str = "@default";

/// Slot ranges are `u16`, and an entry takes up to four (see [`spellings`]).
const MAX_NAMES: usize = u16::MAX as usize / 4;

/// An immutable set of header names and name prefixes, matched ignoring ASCII case and with
/// `_` read as `-` (see the module docs).
#[derive(Clone)]
pub struct HeaderSet {
    slots: Box<[Slot]>,
    seed: u32,
    shift: u32,
    /// Exact names and prefixes, grouped by slot.
    entries: Box<[Span]>,
    /// Distinct prefix lengths, ascending.
    prefix_lens: Box<[u32]>,
    /// Filter in front of the prefix probes: bit [`gate_bit`] of (first byte, byte at
    /// `gate_at`) is set for every prefix. Names such as `x-forwarded-for` share the first byte
    /// with `x-edgewise-*` but not the byte at the shortest prefix's end, and stop here.
    prefix_gate: [u64; 4],
    /// Last index of the shortest prefix.
    gate_at: usize,
    names: usize,
    prefixes: usize,
    /// All names and prefixes, folded (lower case, `-` for `_`), back to back.
    bytes: Box<[u8]>,
}

#[derive(Clone, Copy, Default)]
struct Slot {
    /// [`key`] of the entries in this slot; 0 when empty (real keys have bit 24 or 25 set).
    key: u32,
    start: u16,
    len: u16,
}

#[derive(Clone, Copy)]
struct Span {
    at: u32,
    len: u32,
}

/// Position in the 256-bit prefix filter; `| 0x20` folds case as in [`key`].
#[inline(always)]
fn gate_bit(first: u8, at: u8) -> usize {
    (usize::from(first | 0x20) * 31 + usize::from(at | 0x20)) & 0xff
}

const EXACT: u32 = 1 << 24;
const PREFIX: u32 = 1 << 25;

/// (length, first byte, last byte) and the entry kind: cheap to compute and, for real header
/// lists, nearly unique per entry. `| 0x20` folds case without a branch; it also merges a few
/// punctuation pairs (`^` and `~`), which only puts both in one bucket: the compare is exact.
/// It does not make `_` of `-`: an entry beginning or ending with `-` is entered under each
/// key a probe with `_` there has ([`spellings`]), so that a miss stays this cheap.
#[inline(always)]
fn key(kind: u32, len: usize, first: u8, last: u8) -> u32 {
    (len as u32 & 0xff) | u32::from(first | 0x20) << 8 | u32::from(last | 0x20) << 16 | kind
}

/// The spellings a probe may give byte `b` of a folded entry, as keys and the prefix filter
/// read them: `-` may come as `_`.
fn spellings(b: u8) -> impl Iterator<Item = u8> + Clone {
    [b, b'_'].into_iter().take(if b == b'-' { 2 } else { 1 })
}

/// The spellings a probe may give the bytes `first` and `last` of an entry, in pairs.
fn end_spellings(first: u8, last: u8) -> impl Iterator<Item = (u8, u8)> {
    spellings(first).flat_map(move |f| spellings(last).map(move |l| (f, l)))
}

impl HeaderSet {
    /// Builds a set from header names; an entry ending in `*` is a prefix rule (`x-edgewise-*`
    /// matches every name starting with `x-edgewise-`). Duplicates, mixed case and `_` for `-`
    /// are fine (and collapse); anything that is not an RFC 9110 token is refused with an
    /// error naming the entry.
    pub fn new<I, S>(names: I) -> Result<HeaderSet, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        let mut exact: Vec<Vec<u8>> = Vec::new();
        let mut prefixes: Vec<Vec<u8>> = Vec::new();
        for (index, name) in names.into_iter().enumerate() {
            let name = name.as_ref();
            match validate(name).map_err(|reason| invalid(index, name, reason))? {
                Rule::Exact(n) => exact.push(n.iter().map(|&b| fold::fold(b)).collect()),
                Rule::Prefix(p) => prefixes.push(p.iter().map(|&b| fold::fold(b)).collect()),
            }
        }
        exact.sort_unstable();
        exact.dedup();
        prefixes.sort_unstable();
        prefixes.dedup();
        if exact.len() + prefixes.len() > MAX_NAMES {
            return Err(Error::HeaderSetTooLarge(exact.len() + prefixes.len()));
        }
        Ok(Builder::default().build(exact, prefixes))
    }

    /// An empty set: strips nothing.
    pub fn empty() -> HeaderSet {
        Builder::default().build(Vec::new(), Vec::new())
    }

    /// Builds a set from a configuration string: names separated by commas and/or whitespace,
    /// where [`DEFAULT_LIST_TOKEN`] (`@default`) stands for `defaults`. An empty string gives an
    /// empty set.
    pub fn from_list(list: &str, defaults: &[&str]) -> Result<HeaderSet, Error> {
        let mut names: Vec<&str> = Vec::new();
        for entry in list.split(|c: char| c == ',' || c.is_ascii_whitespace()) {
            match entry {
                "" => {}
                DEFAULT_LIST_TOKEN => names.extend_from_slice(defaults),
                name => names.push(name),
            }
        }
        HeaderSet::new(names)
    }

    /// Whether `name` is in the set or starts with one of its prefixes, ignoring ASCII case
    /// and reading `_` as `-`. Exact: no false positives or negatives. Never allocates.
    ///
    /// Inlined into the caller's loop: the miss path is a handful of instructions, and anything
    /// beyond it (a bucket compare, prefix probes) is out of line.
    #[inline(always)]
    pub fn contains(&self, name: &[u8]) -> bool {
        let (Some(&first), Some(&last)) = (name.first(), name.last()) else {
            return false;
        };
        let key = key(EXACT, name.len(), first, last);
        let slot = self.slot(key);
        (slot.key == key && self.bucket_has(slot, name))
            || (self.may_match_prefix(name, first) && self.matches_prefix(name, first))
    }

    #[inline(always)]
    fn may_match_prefix(&self, name: &[u8], first: u8) -> bool {
        let Some(&at) = name.get(self.gate_at) else {
            return false;
        };
        let bit = gate_bit(first, at);
        self.prefix_gate[bit >> 6] >> (bit & 63) & 1 != 0
    }

    #[inline(never)]
    fn matches_prefix(&self, name: &[u8], first: u8) -> bool {
        self.prefix_lens
            .iter()
            .any(|&len| match name.get(..len as usize) {
                Some(head @ [.., last]) => {
                    let key = key(PREFIX, head.len(), first, *last);
                    let slot = self.slot(key);
                    slot.key == key && self.bucket_has(slot, head)
                }
                _ => false,
            })
    }

    #[inline(always)]
    fn slot(&self, key: u32) -> Slot {
        let index = key.wrapping_mul(self.seed) >> self.shift;
        self.slots.get(index as usize).copied().unwrap_or_default()
    }

    /// Whether an entry of `slot` equals `text`, ignoring case.
    #[inline(never)]
    fn bucket_has(&self, slot: Slot, text: &[u8]) -> bool {
        let start = usize::from(slot.start);
        let bucket = self.entries.get(start..start + usize::from(slot.len));
        bucket
            .unwrap_or(&[])
            .iter()
            .any(|&span| span.len as usize == text.len() && fold::eq_folded(text, self.text(span)))
    }

    #[inline(always)]
    fn text(&self, span: Span) -> &[u8] {
        let at = span.at as usize;
        self.bytes.get(at..at + span.len as usize).unwrap_or(&[])
    }

    /// Number of exact names plus prefix rules.
    pub fn len(&self) -> usize {
        self.names + self.prefixes
    }

    /// Whether the set matches nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every header whose name the set matches: matches are collected first, then each
    /// is removed once (removing while iterating is what made the original slow). Returns the
    /// number of distinct names removed.
    pub fn strip<H: HeaderNames + ?Sized>(&self, headers: &mut H) -> usize {
        self.strip_with(headers, &mut Vec::new())
    }

    /// [`HeaderSet::strip`] with caller-provided scratch memory, so a hot path can reuse one
    /// buffer across requests.
    pub fn strip_with<H: HeaderNames + ?Sized>(
        &self,
        headers: &mut H,
        scratch: &mut Vec<u8>,
    ) -> usize {
        scratch.clear();
        let mut count = 0;
        headers.each_name(&mut |name| {
            if self.contains(name) {
                scratch.extend_from_slice(&(name.len() as u32).to_le_bytes());
                scratch.extend_from_slice(name);
                count += 1;
            }
        });
        if count == 0 {
            return 0;
        }
        // Repeats found by sorting, not by comparing each match with those before it: a
        // client choosing thousands of distinct names under a prefix (`x-debug-*`) made that
        // quadratic, seconds of CPU within a 64 KiB workspace.
        let names_end = scratch.len();
        let mut at = 0;
        while let Some(&len) = scratch[..names_end].get(at..).and_then(|r| r.first_chunk()) {
            scratch.extend_from_slice(&(at as u32).to_le_bytes());
            at += 4 + u32::from_le_bytes(len) as usize;
        }
        let (names, index) = scratch.split_at_mut(names_end);
        let (index, _) = index.as_chunks_mut::<4>();
        index.sort_unstable_by(|a, b| lower(name_at(names, a)).cmp(lower(name_at(names, b))));
        let mut removed = 0;
        let mut last: Option<&[u8]> = None;
        for name in index.iter().filter_map(|i| name_at(names, i)) {
            if last.is_none_or(|l| !l.eq_ignore_ascii_case(name)) {
                headers.remove_all(name);
                removed += 1;
                last = Some(name);
            }
        }
        removed
    }
}

/// A name's bytes lower-cased, as `strip_with` orders them.
fn lower(name: Option<&[u8]>) -> impl Iterator<Item = u8> + '_ {
    name.unwrap_or(&[]).iter().map(u8::to_ascii_lowercase)
}

/// The name recorded at offset `i` (little-endian) of `names`.
fn name_at<'n>(names: &'n [u8], i: &[u8; 4]) -> Option<&'n [u8]> {
    matched(names.get(u32::from_le_bytes(*i) as usize..)?).next()
}

/// Names recorded by `strip_with`: a little-endian u32 length before each.
fn matched(scratch: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = scratch;
    core::iter::from_fn(move || {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = u32::from_le_bytes(*len) as usize;
        let (name, tail) = tail.split_at_checked(len)?;
        rest = tail;
        Some(name)
    })
}

/// A header container that [`HeaderSet::strip`] can work on.
pub trait HeaderNames {
    /// Calls `f` with each header name; a repeated header may be reported once or every time.
    fn each_name(&self, f: &mut dyn FnMut(&[u8]));
    /// Removes every header called `name` (ASCII case-insensitively).
    fn remove_all(&mut self, name: &[u8]);
}

/// A plain list of (name, value) pairs, as parsers and tests hold them.
impl<N: AsRef<[u8]>, V> HeaderNames for Vec<(N, V)> {
    fn each_name(&self, f: &mut dyn FnMut(&[u8])) {
        for (name, _) in self {
            f(name.as_ref());
        }
    }

    fn remove_all(&mut self, name: &[u8]) {
        self.retain(|(n, _)| !n.as_ref().eq_ignore_ascii_case(name));
    }
}

impl fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeaderSet")
            .field("names", &self.names)
            .field("prefixes", &self.prefixes)
            .field("slots", &self.slots.len())
            .finish()
    }
}

enum Rule<'a> {
    Exact(&'a [u8]),
    Prefix(&'a [u8]),
}

fn validate(name: &[u8]) -> Result<Rule<'_>, &'static str> {
    let rule = match name.strip_suffix(b"*") {
        Some([]) => return Err("a bare '*' would match every header"),
        Some(prefix) => Rule::Prefix(prefix),
        None if name.is_empty() => return Err("empty name"),
        None => Rule::Exact(name),
    };
    let (Rule::Exact(body) | Rule::Prefix(body)) = &rule;
    if !body.iter().all(|&b| token::is_tchar(b)) {
        return Err("not an RFC 9110 token (allowed: letters, digits and !#$%&'*+-.^_`|~)");
    }
    Ok(rule)
}

fn invalid(index: usize, name: &[u8], reason: &'static str) -> Error {
    const SHOWN: usize = 64;
    let mut shown: String = name
        .iter()
        .take(SHOWN)
        .flat_map(|b| b.escape_ascii())
        .map(char::from)
        .collect();
    if name.len() > SHOWN {
        shown.push_str("...");
    }
    Error::InvalidHeaderName {
        index,
        name: shown,
        reason,
    }
}

/// Finds a seed under which distinct keys land in distinct slots.
#[derive(Default)]
struct Builder {
    rng: u64,
}

impl Builder {
    fn build(mut self, exact: Vec<Vec<u8>>, prefixes: Vec<Vec<u8>>) -> HeaderSet {
        let (names, prefix_count) = (exact.len(), prefixes.len());
        let mut prefix_lens: Vec<u32> = prefixes.iter().map(|p| p.len() as u32).collect();
        prefix_lens.sort_unstable();
        prefix_lens.dedup();
        // With no prefixes the filter stays empty and rejects every name.
        let gate_at = prefixes.iter().map(|p| p.len() - 1).min().unwrap_or(0);
        let mut prefix_gate = [0u64; 4];
        for p in &prefixes {
            for (first, at) in end_spellings(p[0], p[gate_at]) {
                let bit = gate_bit(first, at);
                prefix_gate[bit >> 6] |= 1 << (bit & 63);
            }
        }
        let tagged = exact
            .into_iter()
            .map(|n| (EXACT, n))
            .chain(prefixes.into_iter().map(|p| (PREFIX, p)));
        let mut keyed: Vec<(u32, Vec<u8>)> = Vec::new();
        for (kind, t) in tagged {
            let (Some(&first), Some(&last)) = (t.first(), t.last()) else {
                continue;
            };
            for (f, l) in end_spellings(first, last) {
                keyed.push((key(kind, t.len(), f, l), t.clone()));
            }
        }
        let mut keys: Vec<u32> = keyed.iter().map(|(k, _)| *k).collect();
        keys.sort_unstable();
        keys.dedup();
        let (seed, bits) = self.perfect_seed(&keys);
        let shift = 32 - bits;
        let slot_of = |k: u32| (k.wrapping_mul(seed) >> shift) as usize;
        keyed.sort_by_key(|(k, _)| slot_of(*k));

        let mut bytes = Vec::new();
        let mut slots = vec![Slot::default(); 1 << bits];
        let mut entries = Vec::with_capacity(keyed.len());
        for (i, (k, text)) in keyed.iter().enumerate() {
            let slot = &mut slots[slot_of(*k)];
            if slot.key == 0 {
                *slot = Slot {
                    key: *k,
                    start: i as u16,
                    len: 0,
                };
            }
            slot.len += 1;
            entries.push(push_text(&mut bytes, text));
        }
        HeaderSet {
            slots: slots.into_boxed_slice(),
            seed,
            shift,
            entries: entries.into_boxed_slice(),
            prefix_lens: prefix_lens.into_boxed_slice(),
            prefix_gate,
            gate_at,
            names,
            prefixes: prefix_count,
            bytes: bytes.into_boxed_slice(),
        }
    }

    /// Smallest table (at most half full) with a collision-free seed; doubles on bad luck.
    fn perfect_seed(&mut self, keys: &[u32]) -> (u32, u32) {
        let mut bits = (keys.len() * 2).next_power_of_two().trailing_zeros().max(1);
        let mut seen = Vec::new();
        loop {
            for _ in 0..64 {
                let seed = self.next_seed();
                if injective(keys, seed, bits, &mut seen) {
                    return (seed, bits);
                }
            }
            bits += 1;
        }
    }

    /// splitmix64, fixed start: builds are deterministic. Seeds are odd so multiplication is a
    /// bijection on u32.
    fn next_seed(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u32 | 1
    }
}

fn injective(keys: &[u32], seed: u32, bits: u32, seen: &mut Vec<bool>) -> bool {
    seen.clear();
    seen.resize(1 << bits, false);
    keys.iter().all(|&k| {
        let slot = &mut seen[(k.wrapping_mul(seed) >> (32 - bits)) as usize];
        !core::mem::replace(slot, true)
    })
}

fn push_text(bytes: &mut Vec<u8>, text: &[u8]) -> Span {
    let at = bytes.len() as u32;
    bytes.extend_from_slice(text);
    Span {
        at,
        len: text.len() as u32,
    }
}

#[cfg(test)]
mod tests;
