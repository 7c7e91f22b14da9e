//! The bytes of a host table, as `GET /v1/hosts` serves them: columns, with each label key and
//! each key=value pair stored once per table and hosts naming their pairs by position.
//!
//! The worker indexes the table it fetches in place. Archived as hosts with a map of strings
//! each, 100k hosts of 4 labels were 800k strings for rkyv to check and the build to
//! fingerprint and intern, most of the build. Here the daemon interns once, when it encodes;
//! the worker checks and interns one string per distinct key and pair, and reads a host's
//! labels as integers. Addresses lie back to back in one string, checked as one.
//!
//! The bytes start with a 16-byte header, a magic and the format number, so that a worker and
//! a daemon of different formats refuse each other's bytes by name
//! ([`HostTableError::UnsupportedFormat`]) instead of as garbage; the rkyv archive follows.

use alloc::{collections::BTreeMap, string::String, vec, vec::Vec};

use hashbrown::HashMap;

use super::config::ArchivedSubsetConfig;
use super::{Host, HostTable, HostTableError, MAX_HOSTS, SubsetConfig, deserialize_config};
use crate::hosttable::view::HostView;
use crate::origin::Scanned;

/// The format number of tables and deltas this build reads and writes: 1 was an archive of
/// [`HostTable`] itself, without a header.
pub(crate) const FORMAT: u16 = 2;

/// The header's magic of a table.
pub(crate) const TABLE_MAGIC: [u8; 14] = *b"edgewise/hosts";

/// The header's length: it keeps the archive behind it 16-byte aligned.
const HEADER: usize = 16;

/// A host table as columns.
#[derive(rkyv::Archive, rkyv::Serialize)]
pub(crate) struct Wire {
    version: u64,
    subset: SubsetConfig,
    /// Label keys, strictly ascending: a host's keys ascend as their positions do.
    keys: Vec<String>,
    /// Per pair, the position of its key in `keys`. `encode` writes the pairs ascending by key
    /// and value; decoders take any order (see `Columns::pairs_ascend`).
    pair_keys: Vec<u32>,
    /// Pair values back to back; pair `p`'s ends at `value_ends[p]`.
    values: String,
    value_ends: Vec<u32>,
    /// Addresses back to back; host `i`'s ends at `address_ends[i]`.
    addresses: String,
    address_ends: Vec<u32>,
    weights: Vec<u32>,
    healthy: Vec<bool>,
    /// The pairs of each host, by position, keys ascending; host `i`'s end at `label_ends[i]`.
    labels: Vec<u32>,
    label_ends: Vec<u32>,
}

#[cfg(test)]
mod tests;

/// `archive` behind a header of `magic` and [`FORMAT`].
pub(crate) fn frame(magic: &[u8; 14], archive: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER + archive.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&FORMAT.to_le_bytes());
    bytes.extend_from_slice(archive);
    bytes
}

/// The archive behind a header of `magic` and [`FORMAT`].
pub(crate) fn unframe<'a>(magic: &[u8; 14], bytes: &'a [u8]) -> Result<&'a [u8], HostTableError> {
    let (header, archive) = bytes
        .split_at_checked(HEADER)
        .ok_or(HostTableError::Malformed)?;
    if header[..14] != magic[..] {
        return Err(HostTableError::Malformed);
    }
    match u16::from_le_bytes([header[14], header[15]]) {
        FORMAT => Ok(archive),
        found => Err(HostTableError::UnsupportedFormat {
            found,
            supported: FORMAT,
        }),
    }
}

/// The framed bytes of `table`, not validated (the caller has, or a test wants them invalid).
pub(crate) fn encode(table: &HostTable) -> Result<Vec<u8>, HostTableError> {
    let too_large = |_| HostTableError::TooLargeToEncode;
    let wire = Wire::new(table).ok_or(HostTableError::TooLargeToEncode)?;
    let archive = rkyv::to_bytes::<rkyv::rancor::Failure>(&wire).map_err(too_large)?;
    Ok(frame(&TABLE_MAGIC, &archive))
}

/// See [`HostTable::encode_pair_per_label`].
#[cfg(test)]
pub(crate) fn encode_pair_per_label(table: &HostTable) -> Vec<u8> {
    let mut wire = Wire::new(table).unwrap();
    let (keys, mut labels) = (&wire.keys, Vec::new());
    let (mut pair_keys, mut values, mut value_ends) = (Vec::new(), String::new(), Vec::new());
    for (k, v) in table.hosts.iter().flat_map(|h| &h.labels) {
        labels.push(pair_keys.len() as u32);
        pair_keys.push(keys.iter().position(|key| key == k).unwrap() as u32);
        values.push_str(v);
        value_ends.push(values.len() as u32);
    }
    (wire.labels, wire.pair_keys, wire.values, wire.value_ends) =
        (labels, pair_keys, values, value_ends);
    frame(
        &TABLE_MAGIC,
        &rkyv::to_bytes::<rkyv::rancor::Failure>(&wire).unwrap(),
    )
}

/// Positions of strings in a dictionary being made.
type Positions<K> = HashMap<K, u32, foldhash::fast::FixedState>;

impl Wire {
    /// `None` if an offset does not fit in 32 bits.
    fn new<'a>(table: &'a HostTable) -> Option<Wire> {
        let mut keys: Vec<&str> = table
            .hosts
            .iter()
            .flat_map(|h| h.labels.keys().map(String::as_str))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let key_at: Positions<&str> = (0u32..).zip(keys.iter().copied()).map(swap).collect();
        let mut wire = Wire::empty(table, keys.len());
        wire.keys.extend(keys.iter().map(|k| String::from(*k)));
        let pair = |(k, v): (&'a String, &'a String)| (key_at[k.as_str()], v.as_str());
        // Ascending, so that a decoder knows them distinct by comparing neighbours, and interns
        // each key's values at once (see `Columns::pairs_ascend`).
        let mut pairs: Vec<(u32, &str)> = table
            .hosts
            .iter()
            .flat_map(|h| h.labels.iter().map(pair))
            .collect();
        pairs.sort_unstable();
        pairs.dedup();
        for &(k, v) in &pairs {
            wire.pair_keys.push(k);
            wire.values.push_str(v);
            wire.value_ends.push(end(&wire.values)?);
        }
        let pair_at: Positions<(u32, &str)> = (0u32..).zip(pairs).map(swap).collect();
        for host in &table.hosts {
            for label in &host.labels {
                wire.labels.push(pair_at[&pair(label)]);
            }
            wire.label_ends.push(u32::try_from(wire.labels.len()).ok()?);
            wire.addresses.push_str(&host.address);
            wire.address_ends.push(end(&wire.addresses)?);
        }
        Some(wire)
    }

    fn empty(table: &HostTable, keys: usize) -> Wire {
        let n = table.hosts.len();
        let labels: usize = table.hosts.iter().map(|h| h.labels.len()).sum();
        Wire {
            version: table.version,
            subset: table.subset.clone(),
            keys: Vec::with_capacity(keys),
            pair_keys: Vec::new(),
            values: String::new(),
            value_ends: Vec::new(),
            addresses: String::with_capacity(table.hosts.iter().map(|h| h.address.len()).sum()),
            address_ends: Vec::with_capacity(n),
            weights: table.hosts.iter().map(|h| h.weight).collect(),
            healthy: table.hosts.iter().map(|h| h.healthy).collect(),
            labels: Vec::with_capacity(labels),
            label_ends: Vec::with_capacity(n),
        }
    }
}

fn swap<A, B>((a, b): (A, B)) -> (B, A) {
    (b, a)
}

fn end(text: &str) -> Option<u32> {
    u32::try_from(text.len()).ok()
}

/// An archived table whose columns agree (every offset in range, every value end on a
/// character boundary, keys ascending, every pair naming a key), all but its labels: what a
/// build reads before it maps each label to an id, checking the labels on the way
/// ([`Dictionary::label_ids`]). [`Dictionary::check_labels`] makes it [`Columns`]. Address
/// ends are not known to fall on characters until [`Dictionary::hosts_fit_but_labels`] or
/// [`Dictionary::check_labels`] says so: addresses the scan finds plain are ASCII, where every
/// end does, and a check of every end there was a gather through all the address bytes (5% of
/// a build of 100k hosts of 4 keys from bytes).
#[derive(Clone, Copy)]
pub(crate) struct Dictionary<'a> {
    wire: &'a ArchivedWire,
}

/// An archived table whose columns agree: every offset in range and on a character boundary,
/// every position names an entry, keys ascend in the dictionary and in each host. What is left
/// to check is what [`HostTable::validate`] checks of an owned table.
pub(crate) struct Columns<'a> {
    dictionary: Dictionary<'a>,
}

impl<'a> core::ops::Deref for Columns<'a> {
    type Target = Dictionary<'a>;

    fn deref(&self) -> &Dictionary<'a> {
        &self.dictionary
    }
}

impl<'a> Columns<'a> {
    /// The columns of the (bytechecked) archive `wire`, if they agree.
    pub(crate) fn new(wire: &'a ArchivedWire) -> Result<Columns<'a>, HostTableError> {
        Dictionary::new(wire)?.check_labels()
    }

    /// The hosts, in order.
    pub(crate) fn hosts(&self) -> impl Iterator<Item = ColumnHost<'a>> {
        let wire = self.wire;
        let ends = wire.address_ends.iter().zip(wire.label_ends.iter());
        let (mut address_at, mut labels_at) = (0, 0);
        let hosts = ends.zip(wire.weights.iter().zip(wire.healthy.iter()));
        hosts.map(move |((address_end, labels_end), (weight, &healthy))| {
            let (address_end, labels_end) = (address_end.to_native(), labels_end.to_native());
            let host = ColumnHost {
                wire,
                address_at: address_at as usize,
                address: &wire.addresses[address_at as usize..address_end as usize],
                weight: weight.to_native(),
                healthy,
                labels: &wire.labels[labels_at as usize..labels_end as usize],
            };
            (address_at, labels_at) = (address_end, labels_end);
            host
        })
    }

    /// The table, owned (not validated).
    pub(crate) fn to_table(&self) -> Result<HostTable, HostTableError> {
        let subset = deserialize_config(self.config())?;
        let hosts = self.hosts().map(|h| h.to_host()).collect();
        Ok(HostTable {
            version: self.version(),
            hosts,
            subset,
        })
    }
}

/// A pair as [`Dictionary::label_ids`] reads it for a label: one bounds check a label for
/// all three.
#[derive(Clone, Copy)]
struct Entry {
    key: u32,
    id: u32,
    count: u32,
}

impl<'a> Dictionary<'a> {
    /// The dictionary of the (bytechecked) archive `wire`, if its columns agree.
    pub(crate) fn new(wire: &'a ArchivedWire) -> Result<Dictionary<'a>, HostTableError> {
        let n = wire.weights.len();
        if n > MAX_HOSTS {
            return Err(HostTableError::TooManyHosts(n));
        }
        let agree = [
            wire.address_ends.len(),
            wire.healthy.len(),
            wire.label_ends.len(),
        ]
        .iter()
        .all(|&len| len == n)
            && wire.pair_keys.len() == wire.value_ends.len()
            && ascending(&wire.address_ends, wire.addresses.len())
            && ends_in(&wire.value_ends, &wire.values)
            && ascending(&wire.label_ends, wire.labels.len())
            && super::validate::ascending(wire.keys.iter().map(|k| k.as_str()))
            && (wire.pair_keys.iter().map(|k| k.to_native()).max())
                .is_none_or(|k| k < wire.keys.len() as u32);
        match agree {
            true => Ok(Dictionary { wire }),
            false => Err(HostTableError::Malformed),
        }
    }

    /// Every key is named by a pair, as `encode` writes them (see [`Dictionary::check_labels`]).
    fn keys_named(&self) -> bool {
        let mut named = vec![false; self.wire.keys.len()];
        (self.wire.pair_keys.iter()).for_each(|k| named[k.to_native() as usize] = true);
        named.iter().all(|&n| n)
    }

    /// Every label names a pair, a host's keys are strictly ascending, and every pair is named
    /// by a host and every key by a pair, as `encode` writes them: an entry no host has would
    /// be interned in place but not by a build from the decoded table, and the two must route
    /// alike. One pass over the labels, a host's verdict made at its end.
    pub(crate) fn check_labels(self) -> Result<Columns<'a>, HostTableError> {
        if !self.addresses_on_characters() {
            return Err(HostTableError::Malformed);
        }
        let (pairs, labels) = (&self.wire.pair_keys[..], &self.wire.labels[..]);
        let mut named = vec![false; pairs.len()];
        let mut start = 0;
        for (index, end) in self.wire.label_ends.iter().enumerate() {
            let end = end.to_native() as usize;
            let (mut previous, mut ascending) = (-1i64, true);
            for p in &labels[start..end] {
                // Not `ok_or`: it makes (and drops) the error for every label.
                let Some(key) = pairs.get(p.to_native() as usize) else {
                    return Err(HostTableError::Malformed);
                };
                named[p.to_native() as usize] = true;
                let key = i64::from(key.to_native());
                ascending &= key > previous;
                previous = key;
            }
            if !ascending {
                return Err(HostTableError::LabelsOutOfOrder { index });
            }
            start = end;
        }
        match named.iter().all(|&n| n) && self.keys_named() {
            true => Ok(Columns { dictionary: self }),
            false => Err(HostTableError::Malformed),
        }
    }

    /// [`Dictionary::check_labels`], with each label's pair `p` mapped to `ids[p]` (pushed onto
    /// `out`, in label order) and counted in the same pass: the worker's build from bytes made
    /// three passes over the labels (the check, the ids, the index's counts). `ids` has an id
    /// per pair, each below `id_count`; `label` is called with each label's host index and id,
    /// in label order. Returns how many labels carry each id, at `[id + 1]` (pairs may share
    /// an id). A refusal is [`Dictionary::check_labels`]'s.
    pub(crate) fn label_ids(
        self,
        ids: &[u32],
        id_count: usize,
        out: &mut Vec<u32>,
        mut label: impl FnMut(usize, u32),
    ) -> Result<Vec<u32>, HostTableError> {
        let (pairs, labels) = (&self.wire.pair_keys[..], &self.wire.labels[..]);
        if ids.len() != pairs.len() {
            return Err(HostTableError::Malformed);
        }
        let entry = |(k, &id): (&rkyv::Archived<u32>, &u32)| Entry {
            key: k.to_native(),
            id,
            count: 0,
        };
        let mut entries: Vec<Entry> = pairs.iter().zip(ids).map(entry).collect();
        let base = out.len();
        out.resize(base + labels.len(), 0);
        let out = &mut out[base..];
        let (mut start, mut fine) = (0, true);
        for (host, end) in self.wire.label_ends.iter().enumerate() {
            let end = end.to_native() as usize;
            let mut previous = -1i64;
            for (p, id) in labels[start..end].iter().zip(&mut out[start..end]) {
                let Some(entry) = entries.get_mut(p.to_native() as usize) else {
                    return Err(self.refusal());
                };
                entry.count += 1;
                *id = entry.id;
                label(host, entry.id);
                fine &= i64::from(entry.key) > previous;
                previous = i64::from(entry.key);
            }
            start = end;
        }
        // Every pair named by a label, checked as the counts are summed per id.
        let mut counts = vec![0u32; id_count + 1];
        let mut unnamed = false;
        for entry in &entries {
            unnamed |= entry.count == 0;
            counts[entry.id as usize + 1] += entry.count;
        }
        if !fine || unnamed || !self.keys_named() {
            return Err(self.refusal());
        }
        Ok(counts)
    }

    /// Why [`Dictionary::check_labels`] refuses the labels, which it does.
    #[cold]
    fn refusal(self) -> HostTableError {
        self.check_labels()
            .err()
            .unwrap_or(HostTableError::Malformed)
    }

    pub(crate) fn version(&self) -> u64 {
        self.wire.version.to_native()
    }

    pub(crate) fn config(&self) -> &'a ArchivedSubsetConfig {
        &self.wire.subset
    }

    /// Number of hosts.
    pub(crate) fn len(&self) -> usize {
        self.wire.weights.len()
    }

    /// Whether every host passes [`host_fits_but_labels`](super::host_fits_but_labels), checked
    /// column by column: weights, label counts, addresses. If they do (and so every address
    /// ends on a character), what the scan of the addresses found (their order, when they are
    /// all plain).
    pub(crate) fn hosts_fit_but_labels(&self) -> Option<Scanned> {
        let weights = self.wire.weights.iter();
        let weighed = weights.fold(true, |ok, w| ok & super::weight_fits(w.to_native()));
        let mut start = 0;
        let counted = self.label_ends().fold(true, |ok, end| {
            // Ends ascend (`Columns::new`).
            let count = end.wrapping_sub(start);
            start = end;
            ok & super::label_count_fits(count)
        });
        if !(weighed && counted) {
            return None;
        }
        let scanned = super::scan_addresses(self.address_pieces());
        let fit = scanned.plain
            || (self.addresses_on_characters() && self.addresses().all(super::address_fits));
        fit.then_some(scanned)
    }

    /// Whether every address ends on a character boundary (see [`Dictionary`]).
    fn addresses_on_characters(&self) -> bool {
        ends_in(&self.wire.address_ends, &self.wire.addresses)
    }

    /// Each host's weight and health, in host order.
    pub(crate) fn slots(&self) -> impl Iterator<Item = (u32, bool)> + 'a {
        let weights = self.wire.weights.iter().map(|w| w.to_native());
        weights.zip(self.wire.healthy.iter().copied())
    }

    /// Where each host's address ends in [`Columns::all_addresses`], in host order.
    pub(crate) fn address_ends(&self) -> impl Iterator<Item = usize> + 'a {
        self.wire
            .address_ends
            .iter()
            .map(|e| e.to_native() as usize)
    }

    /// Where each host's labels end in [`Columns::labels`], in host order.
    pub(crate) fn label_ends(&self) -> impl Iterator<Item = usize> + 'a {
        self.wire.label_ends.iter().map(|e| e.to_native() as usize)
    }

    /// The addresses of all hosts, back to back (see [`ColumnHost::address_at`]).
    pub(crate) fn all_addresses(&self) -> &'a str {
        &self.wire.addresses
    }

    /// The addresses, in host order, once they are known to end on characters (see
    /// [`Dictionary`]).
    fn addresses(&self) -> impl Iterator<Item = &'a str> {
        pieces(&self.wire.addresses, &self.wire.address_ends)
    }

    /// [`Columns::addresses`] as bytes, without a check that each piece's ends fall on
    /// characters (two a host, a sixth of a scan of 8k addresses).
    fn address_pieces(&self) -> impl Iterator<Item = &'a [u8]> {
        let (text, mut start) = (self.wire.addresses.as_bytes(), 0);
        self.wire.address_ends.iter().map(move |e| {
            let end = e.to_native() as usize;
            let piece = &text[start..end];
            start = end;
            piece
        })
    }

    /// Bytes of all addresses.
    pub(crate) fn address_bytes(&self) -> usize {
        self.wire.addresses.len()
    }

    /// Labels of all hosts.
    pub(crate) fn label_count(&self) -> usize {
        self.wire.labels.len()
    }

    /// Whether every host is healthy and of the same weight; that weight.
    pub(crate) fn uniform(&self) -> Option<u32> {
        let weights = &self.wire.weights[..];
        let weight = weights.first().map_or(1, |w| w.to_native());
        let same = weights.iter().all(|w| w.to_native() == weight);
        (same && self.wire.healthy.iter().all(|&h| h)).then_some(weight)
    }

    /// The label keys, ascending.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &'a str> {
        self.wire.keys.iter().map(|k| k.as_str())
    }

    /// How many pairs [`Columns::pairs`] gives.
    pub(crate) fn pair_count(&self) -> usize {
        self.wire.pair_keys.len()
    }

    /// The pairs: each one's key position and value.
    pub(crate) fn pairs(&self) -> impl Iterator<Item = (usize, &'a str)> {
        let keys = self.wire.pair_keys.iter().map(|k| k.to_native() as usize);
        keys.zip(self.values())
    }

    /// The pairs' values, in order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &'a str> {
        pieces(&self.wire.values, &self.wire.value_ends)
    }

    /// Whether the pairs ascend strictly, by key position and then value, as `encode` writes
    /// them: then no two are the same, and each key's pairs lie together (see
    /// [`Columns::key_runs`]).
    #[cfg(test)]
    pub(crate) fn pairs_ascend(&self) -> bool {
        let keys = self.wire.pair_keys.iter().map(|k| k.to_native());
        let mut pairs = keys.zip(self.values().map(str::as_bytes));
        let Some(mut last) = pairs.next() else {
            return true;
        };
        pairs.all(|pair| {
            let before = crate::hosttable::validate::before;
            let ascends = last.0 < pair.0 || (last.0 == pair.0 && before(last.1, pair.1));
            last = pair;
            ascends
        })
    }

    /// The pairs' keys as runs: each key position with how many pairs in a row have it.
    pub(crate) fn key_runs(&self) -> impl Iterator<Item = (usize, usize)> + 'a {
        let keys = &self.wire.pair_keys[..];
        let mut at = 0;
        core::iter::from_fn(move || {
            let key = keys.get(at)?;
            let run = keys[at..].iter().take_while(|k| *k == key).count();
            at += run;
            Some((key.to_native() as usize, run))
        })
    }
}

/// One host of [`Columns`].
pub(crate) struct ColumnHost<'a> {
    wire: &'a ArchivedWire,
    /// Where the address starts in [`Columns::all_addresses`].
    pub(crate) address_at: usize,
    address: &'a str,
    weight: u32,
    healthy: bool,
    /// Positions of its pairs.
    pub(crate) labels: &'a [rkyv::Archived<u32>],
}

impl<'a> ColumnHost<'a> {
    fn to_host(&self) -> Host {
        let mut labels = BTreeMap::new();
        self.visit_labels(|k, v| {
            labels.insert(k.into(), v.into());
            core::ops::ControlFlow::<()>::Continue(())
        });
        Host {
            address: self.address.into(),
            weight: self.weight,
            healthy: self.healthy,
            labels,
        }
    }
}

impl HostView for ColumnHost<'_> {
    // Checked by `Columns::new`.
    const ORDERED: bool = true;

    fn address(&self) -> &str {
        self.address
    }

    fn weight(&self) -> u32 {
        self.weight
    }

    fn healthy(&self) -> bool {
        self.healthy
    }

    fn label_count(&self) -> usize {
        self.labels.len()
    }

    fn visit_labels<B>(
        &self,
        mut f: impl FnMut(&str, &str) -> core::ops::ControlFlow<B>,
    ) -> Option<B> {
        let wire = self.wire;
        let mut pairs = self.labels.iter().map(|p| {
            let p = p.to_native() as usize;
            let key = &wire.keys[wire.pair_keys[p].to_native() as usize];
            (key.as_str(), piece(&wire.values, &wire.value_ends, p))
        });
        pairs.try_for_each(|(k, v)| f(k, v)).break_value()
    }
}

/// Whether `ends` never go back and the last is `len` (0 if there are none).
fn ascending(ends: &[rkyv::Archived<u32>], len: usize) -> bool {
    // Folded without a branch, not `all`: every pair compared, vectorised, where `all` took
    // one end at a time (with the two folds below, `Dictionary::new` of 100k hosts went from
    // 278 to 229 µs).
    let monotone = ends
        .windows(2)
        .fold(true, |ok, w| ok & (w[0].to_native() <= w[1].to_native()));
    monotone && ends.last().map_or(0, |e| e.to_native()) as usize == len
}

/// [`ascending`], and each end a character boundary of `text`.
fn ends_in(ends: &[rkyv::Archived<u32>], text: &str) -> bool {
    // Ends ascend to `text.len()`, so each is within `text` or its end.
    let bytes = text.as_bytes();
    let boundary = |e: &rkyv::Archived<u32>| {
        // Not a UTF-8 continuation byte (0b10xx_xxxx), as `str::is_char_boundary` tests.
        (bytes.get(e.to_native() as usize)).is_none_or(|&b| (b as i8) >= -0x40)
    };
    ascending(ends, text.len()) && ends.iter().fold(true, |ok, e| ok & boundary(e))
}

/// The `index`-th piece of `text` cut at `ends`.
fn piece<'a>(text: &'a str, ends: &[rkyv::Archived<u32>], index: usize) -> &'a str {
    let start = index.checked_sub(1).map_or(0, |i| ends[i].to_native());
    &text[start as usize..ends[index].to_native() as usize]
}

/// The pieces of `text` cut at `ends`, in order.
fn pieces<'a>(text: &'a str, ends: &'a [rkyv::Archived<u32>]) -> impl Iterator<Item = &'a str> {
    let mut start = 0;
    ends.iter().map(move |e| {
        let end = e.to_native() as usize;
        let piece = &text[start..end];
        start = end;
        piece
    })
}
