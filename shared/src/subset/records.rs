//! Host records, what only updates and address lookups read: each host's address and its
//! key=value ids, kept in two buffers shared by all hosts (a build makes no allocation per
//! host). A record replaced or removed leaves its bytes behind until they are half of a buffer;
//! then the buffer is rewritten without them, so updates stay O(1) amortised.
//!
//! Offsets are `u32`: a record's span is 16 bytes, not 24 (0.8 MB less written at 100k hosts,
//! in a build whose passes over fresh memory are much of its cost). A span's offsets reach
//! [`LIMIT`]: a build refuses a table whose records pass it ([`Records::fits`]), and an update
//! makes room first ([`Records::make_room`]).

use alloc::{string::String, vec::Vec};
use core::ops::Range;

use crate::hosttable::before;

/// Most address bytes, and most ids, a buffer holds: what a span's `u32` offsets reach. A
/// table past it is absurd (over 4 GiB of addresses, or of 2^32 ids, which only `list_as_any`
/// lists of hundreds of items on every host make), but no less refused for it.
const LIMIT: usize = u32::MAX as usize;

/// Where a record lies in the buffers.
#[derive(Debug, Clone, Copy, Default)]
struct Span {
    text: u32,
    kvs: u32,
    text_len: u32,
    kvs_len: u32,
}

impl Span {
    /// Where the address lies in [`Records`]' text.
    fn address(&self) -> Range<usize> {
        let start = self.text as usize;
        start..start + self.text_len as usize
    }

    /// Where the ids lie in [`Records`]' ids.
    fn kvs(&self) -> Range<usize> {
        let start = self.kvs as usize;
        start..start + self.kvs_len as usize
    }
}

/// The records of all slots.
#[derive(Debug)]
pub(super) struct Records {
    /// Addresses, back to back.
    text: String,
    /// Key=value ids per host, distinct (several per key with `list_as_any`).
    kvs: Vec<u32>,
    spans: Vec<Span>,
    /// Bytes and ids of the buffers no span covers.
    dead_text: usize,
    dead_kvs: usize,
    /// Most a span's offset or length may be: [`LIMIT`] (a small one in tests).
    limit: usize,
    /// Whether a span was made with an offset or length past `limit` (cut short to `u32`):
    /// then the records are wrong, and the build that made them is refused.
    overflowed: bool,
}

impl Default for Records {
    fn default() -> Records {
        Records::with_limit(LIMIT)
    }
}

impl Records {
    fn with_limit(limit: usize) -> Records {
        Records {
            text: String::new(),
            kvs: Vec::new(),
            spans: Vec::new(),
            dead_text: 0,
            dead_kvs: 0,
            limit,
            overflowed: false,
        }
    }

    /// `n` as a span's offset or length, noted if past the limit.
    fn offset(&mut self, n: usize) -> u32 {
        self.overflowed |= n > self.limit;
        n as u32
    }

    /// Room for `hosts` records with `text` bytes of addresses and about `kvs` ids.
    pub fn reserve(&mut self, hosts: usize, text: usize, kvs: usize) {
        self.spans.reserve_exact(hosts);
        self.text.reserve_exact(text);
        self.kvs.reserve(kvs);
    }

    pub fn address(&self, s: u32) -> &str {
        &self.text[self.spans[s as usize].address()]
    }

    /// [`Records::address`] as bytes, for hashing and comparing: a `str` slice checks that
    /// both its ends fall on characters (a fifth of a build's pass over 100k addresses).
    pub fn address_bytes(&self, s: u32) -> &[u8] {
        self.bytes(&self.spans[s as usize])
    }

    fn bytes(&self, span: &Span) -> &[u8] {
        &self.text.as_bytes()[span.address()]
    }

    /// Whether the addresses ascend strictly by slot.
    pub fn ascending(&self) -> bool {
        (self.spans.windows(2)).all(|pair| before(self.bytes(&pair[0]), self.bytes(&pair[1])))
    }

    pub fn kvs(&self, s: u32) -> &[u32] {
        &self.kvs[self.spans[s as usize].kvs()]
    }

    /// Whether every span holds its offsets and lengths whole: a build checks it once, at
    /// its end, and refuses the table if not (a table past [`LIMIT`]).
    pub fn fits(&self) -> bool {
        !self.overflowed
    }

    /// Whether `text` more bytes and `kvs` more ids would keep both buffers within the limit.
    fn within(&self, text: usize, kvs: usize) -> bool {
        self.under_limit((self.text.len(), self.kvs.len()), text, kvs)
    }

    /// Whether records of `added` (bytes, ids) in all would fit once records of `freed` were
    /// removed and the buffers lost their dead parts, as [`Records::make_room`] makes them:
    /// the check of a whole table change before any of it is applied.
    pub fn room_for(&self, (text, kvs): (usize, usize), freed: (usize, usize)) -> bool {
        let live = (
            self.text.len() - self.dead_text - freed.0,
            self.kvs.len() - self.dead_kvs - freed.1,
        );
        self.under_limit(live, text, kvs)
    }

    fn under_limit(&self, (text_len, kvs_len): (usize, usize), text: usize, kvs: usize) -> bool {
        (text_len.checked_add(text)).is_some_and(|t| t <= self.limit)
            && (kvs_len.checked_add(kvs)).is_some_and(|k| k <= self.limit)
    }

    /// Lowers the limit, for a test of what passes it.
    #[cfg(test)]
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Whether a record of `text` more bytes and up to `kvs` more ids fits within the limit,
    /// the buffers compacted first if they would not and hold dead bytes or ids: an update's
    /// check before it records a host.
    pub fn make_room(&mut self, text: usize, kvs: usize) -> bool {
        if !self.within(text, kvs) && self.dead_text + self.dead_kvs > 0 {
            self.compact();
        }
        self.within(text, kvs)
    }

    /// Every slot's ids in slot order, each slot's `(slot, ids)`, read straight through the
    /// buffer: as a build leaves the records (none replaced or removed yet), a slot's ids
    /// follow the one before's. What the index's two passes over every label read.
    pub fn built_kvs(&self) -> impl Iterator<Item = (u32, &[u32])> {
        debug_assert!(self.dead_kvs == 0);
        let mut rest = &self.kvs[..];
        (0u32..).zip(&self.spans).map(move |(s, span)| {
            debug_assert_eq!(span.kvs as usize, self.kvs.len() - rest.len());
            let (ids, after) = rest.split_at(span.kvs_len as usize);
            rest = after;
            (s, ids)
        })
    }

    /// Every slot's ids back to back, as a build leaves them (see [`Records::built_kvs`]).
    pub fn all_kvs(&self) -> &[u32] {
        debug_assert!(self.dead_kvs == 0);
        &self.kvs
    }

    /// Starts the record of slot `s` (an empty one, or the next new one) with its address;
    /// returns the id buffer for the caller to push the host's ids onto, then
    /// [`Records::seal`] them.
    pub fn start(&mut self, s: u32, address: &str) -> &mut Vec<u32> {
        let at = self.push_text(address);
        self.start_at(s, at, address.len())
    }

    /// Appends `text` (the addresses of several hosts, for [`Records::start_at`]); returns
    /// where it starts.
    pub fn push_text(&mut self, text: &str) -> usize {
        let at = self.text.len();
        self.text.push_str(text);
        at
    }

    /// [`Records::start`] with an address already pushed: the `len` bytes at `at`.
    pub fn start_at(&mut self, s: u32, at: usize, len: usize) -> &mut Vec<u32> {
        let span = Span {
            text: self.offset(at),
            kvs: self.offset(self.kvs.len()),
            text_len: self.offset(len),
            kvs_len: 0,
        };
        match self.spans.get_mut(s as usize) {
            Some(old) => *old = span,
            None => self.spans.push(span),
        }
        &mut self.kvs
    }

    /// The records of the next new slots, in order: the addresses pushed at `text` (see
    /// [`Records::push_text`]) cut at `text_ends`, their ids, which `push_ids` appends to the
    /// id buffer it is given (its room kept for later changes), cut at `kv_ends` (ends
    /// ascending, offsets from `text` and from the first id pushed). Ids stay in label order,
    /// as [`Records::seal`] without dedup leaves them. Nothing is recorded if `push_ids` fails.
    pub fn push_all<R, E>(
        &mut self,
        text: usize,
        text_ends: impl Iterator<Item = usize>,
        kv_ends: impl Iterator<Item = usize>,
        push_ids: impl FnOnce(&mut Vec<u32>) -> Result<R, E>,
    ) -> Result<R, E> {
        let (mut text_at, mut kvs_at) = (text, self.kvs.len());
        let kvs_base = kvs_at;
        let pushed = push_ids(&mut self.kvs).inspect_err(|_| self.kvs.truncate(kvs_base))?;
        for (t, k) in text_ends.zip(kv_ends) {
            let (t, k) = (text + t, kvs_base + k);
            self.spans.push(Span {
                text: text_at as u32,
                kvs: kvs_at as u32,
                text_len: (t - text_at) as u32,
                kvs_len: (k - kvs_at) as u32,
            });
            (text_at, kvs_at) = (t, k);
        }
        // The last ends are the largest: every offset and length is at most those.
        self.offset(text_at.max(kvs_at));
        Ok(pushed)
    }

    /// Ends the record of slot `s`: its ids pushed since [`Records::start`]; with `dedup`
    /// (a host's values may repeat: `list_as_any` lists such as `a,b,a`), sorted and with
    /// repeats dropped. Without, ids of distinct labels are distinct and stay in label order.
    #[inline]
    pub fn seal(&mut self, s: u32, dedup: bool) {
        if dedup {
            return self.seal_deduped(s);
        }
        let len = self.kvs.len() - self.spans[s as usize].kvs as usize;
        self.spans[s as usize].kvs_len = self.offset(len);
    }

    /// [`Records::seal`] with `dedup`: out of line, where it does not weigh on every host of
    /// a build without (37 instructions a seal of MOSN's scheme).
    #[inline(never)]
    fn seal_deduped(&mut self, s: u32) {
        let start = self.spans[s as usize].kvs as usize;
        let tail = &mut self.kvs[start..];
        tail.sort_unstable();
        let mut kept = 0;
        for i in 0..tail.len() {
            if i == 0 || tail[i] != tail[kept - 1] {
                tail[kept] = tail[i];
                kept += 1;
            }
        }
        self.spans[s as usize].kvs_len = self.offset(kept);
        self.kvs.truncate(start + kept);
    }

    /// Forgets the record of slot `s` (its host was removed).
    pub fn remove(&mut self, s: u32) {
        let span = core::mem::take(&mut self.spans[s as usize]);
        self.dead_text += span.text_len as usize;
        self.dead_kvs += span.kvs_len as usize;
        if self.dead_text > self.text.len() / 2 || self.dead_kvs > self.kvs.len() / 2 {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let mut text = String::with_capacity(self.text.len() - self.dead_text);
        let mut kvs = Vec::with_capacity(self.kvs.len() - self.dead_kvs);
        // Live records fit: each buffer is within the limit already, and loses its dead part.
        for span in &mut self.spans {
            let (address, ids) = (span.address(), span.kvs());
            span.text = text.len() as u32;
            span.kvs = kvs.len() as u32;
            text.push_str(&self.text[address]);
            kvs.extend_from_slice(&self.kvs[ids]);
        }
        (self.text, self.kvs) = (text, kvs);
        (self.dead_text, self.dead_kvs) = (0, 0);
    }

    /// Heap bytes held, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.text.capacity()
            + self.kvs.capacity() * size_of::<u32>()
            + self.spans.capacity() * size_of::<Span>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_survive_replacement_and_compaction() {
        let mut records = Records::default();
        records.reserve(10, 100, 20);
        for s in 0..10u32 {
            records
                .start(s, &alloc::format!("http://h{s}"))
                .extend([s + 2, s, s + 2]);
            records.seal(s, true);
        }
        assert_eq!(records.kvs(3), &[3, 5]);
        for round in 0..5u32 {
            for s in (0..10u32).step_by(2) {
                records.remove(s);
                let address = alloc::format!("http://h{s}-{round}");
                records.start(s, &address).push(round);
                records.seal(s, false);
            }
        }
        for s in 0..10u32 {
            match s % 2 {
                0 => assert_eq!(
                    (records.address(s), records.kvs(s)),
                    (&*alloc::format!("http://h{s}-4"), &[4][..])
                ),
                _ => assert_eq!(
                    (records.address(s), records.kvs(s)),
                    (&*alloc::format!("http://h{s}"), &[s, s + 2][..])
                ),
            }
        }
        assert!(records.text.len() < 2 * 10 * 14);
    }

    /// Room is made by compacting when the dead records are what stands in the way, and
    /// refused when the live ones alone pass the limit.
    #[test]
    fn room_past_the_limit_is_made_by_compacting_or_refused() {
        let mut records = Records::with_limit(40);
        for s in 0..4u32 {
            records.start(s, "http://a").extend([s, s + 1]);
            records.seal(s, false);
        }
        // 32 bytes and 8 ids, all live.
        assert!(records.make_room(8, 2));
        assert!(!records.make_room(9, 2));
        assert!(!records.make_room(8, 33));
        assert_eq!(records.text.len(), 32);
        records.remove(1);
        // 8 bytes and 2 ids dead, kept (a quarter of each buffer): room made by dropping them.
        assert_eq!((records.text.len(), records.kvs.len()), (32, 8));
        assert!(records.room_for((16, 2), (0, 0)) && !records.room_for((17, 2), (0, 0)));
        assert!(records.room_for((24, 2), (8, 2)) && !records.room_for((16, 37), (8, 2)));
        assert!(records.make_room(16, 2));
        assert_eq!((records.text.len(), records.kvs.len()), (24, 6));
        assert!(!records.make_room(17, 2));
        assert!(!records.make_room(0, usize::MAX));
        assert_eq!(
            (records.address(2), records.kvs(2)),
            ("http://a", &[2, 3][..])
        );
        assert!(records.fits());
    }

    /// A build's records past the limit, one by one or all at once, do not fit.
    #[test]
    fn records_past_the_limit_do_not_fit() {
        let mut records = Records::with_limit(20);
        for s in 0..3u32 {
            records.start(s, "http://a").push(s);
            records.seal(s, false);
        }
        // The third starts at 16, within the limit, and ends past it: its span is whole.
        assert!(records.fits());
        records.start(3, "http://a");
        assert!(!records.fits());
        let mut records = Records::with_limit(20);
        records.start(0, "http://a").extend(0..21);
        records.seal(0, false);
        assert!(!records.fits());
        let mut records = Records::with_limit(20);
        let at = records.push_text("http://ahttp://bhttp://c");
        let ends = [8, 16, 24].into_iter();
        let ids = |kvs: &mut Vec<u32>| {
            kvs.extend([0, 1, 2]);
            Ok::<_, ()>(())
        };
        assert_eq!(
            records.push_all(at, ends, [1, 2, 3].into_iter(), ids),
            Ok(())
        );
        assert!(!records.fits());
    }
}
