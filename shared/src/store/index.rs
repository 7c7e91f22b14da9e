//! The table index of a data file: where each table's name, probe slots and values lie in the
//! file. The writer appends it after the archive; a reader checks it against the mapping once
//! per version, in O(tables), and then every lookup is bounds-checked against what it checked.
//!
//! Nothing a reader does on the read path trusts a length or an offset read from the mapped
//! bytes: slot positions come from this reader-owned index, and a vector's start and length,
//! read from a slot, are checked against the table's value range before the slice is made. So
//! arbitrary bytes in a data file give a wrong answer or none, never a read outside the
//! mapping, a panic or undefined behaviour. Whole-archive integrity (the checksum) is the
//! writer's to establish, after writing, not every reader's.
//!
//! Layout, little-endian `u64`s, starting at the first multiple of 8 after the archive: the
//! number of tables; per table its name's offset and length, its slots' offset and count, its
//! values' offset and count, and its key count (offsets from the start of the file); then the
//! xxh3-64 of the words before it. The header's `index_len` word gives its length in bytes.

use core::ops::Range;
use std::prelude::rust_2024::*;
use std::vec::Vec;

use xxhash_rust::xxh3::xxh3_64;

use super::format::HEADER;
use super::schema::{ArchivedFeatureSnapshot, ArchivedSlot, EMPTY, mix};

/// Bytes of one slot in a data file: key (u64), start (u32), length (u32).
const SLOT: usize = 16;
const _: () = assert!(size_of::<ArchivedSlot>() == SLOT);
/// Words per table in the index.
const TABLE_WORDS: usize = 7;

/// Where the index of an archive of `archive_len` bytes starts in a data file.
pub(crate) fn offset(archive_len: u64) -> Option<u64> {
    (HEADER as u64)
        .checked_add(archive_len)?
        .checked_next_multiple_of(8)
}

/// Bytes the index of `tables` tables takes, padding before it included.
pub(crate) fn bound(tables: usize) -> Option<usize> {
    tables.checked_mul(TABLE_WORDS * 8)?.checked_add(2 * 8 + 8)
}

/// The index of `archived`, which lies in the file whose first byte is at `file`: the bytes to
/// append after the archive.
pub(crate) fn encode(file: *const u8, archived: &ArchivedFeatureSnapshot) -> Vec<u8> {
    let base = file as usize;
    let at = |ptr: *const u8| (ptr as usize - base) as u64;
    let mut words = Vec::with_capacity(2 + archived.tables.len() * TABLE_WORDS);
    words.push(archived.tables.len() as u64);
    for table in archived.tables.iter() {
        let (slots, values) = table.rows.parts();
        words.extend([
            at(table.name.as_str().as_ptr()),
            table.name.len() as u64,
            at(slots.as_ptr().cast()),
            slots.len() as u64,
            at(values.as_ptr().cast()),
            values.len() as u64,
            table.rows.len() as u64,
        ]);
    }
    let mut bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let sum = xxh3_64(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes
}

/// A table's place in a mapped data file, checked against the mapping.
#[derive(Debug, Clone)]
pub(crate) struct TableIndex {
    pub(crate) name: Box<str>,
    keys: u64,
    /// Byte range of the slots; its length is a power of two times [`SLOT`], or 0.
    slots: Range<usize>,
    /// Byte range of the values, 4-aligned.
    values: Range<usize>,
}

impl TableIndex {
    /// Keys in the table, as the index says.
    pub(crate) fn len(&self) -> usize {
        usize::try_from(self.keys).unwrap_or(usize::MAX)
    }

    fn slot_count(&self) -> usize {
        self.slots.len() / SLOT
    }

    /// Slot `i` of `file`: key, start and length; none past the slots.
    #[inline]
    fn slot(&self, file: &[u8], i: usize) -> Option<(u64, u32, u32)> {
        let at = self.slots.start.checked_add(i.checked_mul(SLOT)?)?;
        let bytes: &[u8; SLOT] = file.get(at..at.checked_add(SLOT)?)?.try_into().ok()?;
        let [
            k0,
            k1,
            k2,
            k3,
            k4,
            k5,
            k6,
            k7,
            s0,
            s1,
            s2,
            s3,
            l0,
            l1,
            l2,
            l3,
        ] = *bytes;
        Some((
            u64::from_le_bytes([k0, k1, k2, k3, k4, k5, k6, k7]),
            u32::from_le_bytes([s0, s1, s2, s3]),
            u32::from_le_bytes([l0, l1, l2, l3]),
        ))
    }

    /// `len` floats from float `start` of the value range; none if that leaves the range.
    #[inline]
    fn vector<'f>(&self, file: &'f [u8], start: u32, len: u32) -> Option<&'f [f32]> {
        let from = (start as usize).checked_mul(4)?;
        let to = from.checked_add((len as usize).checked_mul(4)?)?;
        if to > self.values.len() {
            return None;
        }
        let bytes = file.get(self.values.start + from..self.values.start + to)?;
        bytemuck::try_cast_slice(bytes).ok()
    }

    /// The vector of `key` in `file` (the mapping this index was checked against).
    #[inline]
    pub(crate) fn get<'f>(&self, file: &'f [u8], key: u64) -> Option<&'f [f32]> {
        let count = self.slot_count();
        let mask = count.wrapping_sub(1);
        let mut i = mix(key) as usize & mask;
        // At most one pass: damaged slots may hold no free one.
        for _ in 0..count {
            let (slot_key, start, len) = self.slot(file, i)?;
            if len == EMPTY {
                return None;
            }
            if slot_key == key {
                return self.vector(file, start, len);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Every key and its vector in `file`, in slot order; slots whose vector leaves the value
    /// range are skipped.
    pub(crate) fn iter<'f>(&self, file: &'f [u8]) -> impl Iterator<Item = (u64, &'f [f32])> {
        let index = self.clone();
        (0..self.slot_count()).filter_map(move |i| {
            let (key, start, len) = index.slot(file, i)?;
            (len != EMPTY)
                .then(|| index.vector(file, start, len))
                .flatten()
                .map(|row| (key, row))
        })
    }
}

/// The tables of the data file `file` whose archive is `archive_len` bytes and whose index is
/// `index_len` bytes, each range checked against `file`: O(tables), no pass over the data.
pub(crate) fn read(
    file: &[u8],
    archive_len: u64,
    index_len: u64,
) -> Result<Vec<TableIndex>, &'static str> {
    const MISSING: &str = "data file has no table index";
    let start = offset(archive_len).ok_or(MISSING)?;
    let end = start.checked_add(index_len).ok_or(MISSING)?;
    let (Ok(start), Ok(end)) = (usize::try_from(start), usize::try_from(end)) else {
        return Err(MISSING);
    };
    let bytes = file.get(start..end).ok_or("table index outside the file")?;
    if index_len < 16 || !index_len.is_multiple_of(8) {
        return Err(MISSING);
    }
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    if xxh3_64(body).to_le_bytes() != sum {
        return Err("table index checksum mismatch");
    }
    let words: Vec<u64> = body
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0xff; 8])))
        .collect();
    let (&count, tables) = words.split_first().ok_or(MISSING)?;
    if count.checked_mul(TABLE_WORDS as u64) != Some(tables.len() as u64) {
        return Err("table index length disagrees with its table count");
    }
    let archive = HEADER..usize::try_from(archive_len).map_or(usize::MAX, |n| HEADER + n);
    let mut out = Vec::with_capacity(tables.len() / TABLE_WORDS);
    for t in tables.chunks_exact(TABLE_WORDS) {
        let name = range(t[0], t[1], 1, 1, &archive).ok_or("table name outside the archive")?;
        let name = file.get(name).ok_or("table name outside the file")?;
        let name = std::str::from_utf8(name).map_err(|_| "table name is not UTF-8")?;
        let slots =
            range(t[2], t[3], SLOT, 8, &archive).ok_or("table slots outside the archive")?;
        if !(slots.is_empty() || (slots.len() / SLOT).is_power_of_two()) {
            return Err("table index size is not a power of two");
        }
        let values = range(t[4], t[5], 4, 4, &archive).ok_or("table values outside the archive")?;
        out.push(TableIndex {
            name: name.into(),
            keys: t[6],
            slots,
            values,
        });
    }
    let mut names: Vec<&str> = out.iter().map(|t| &*t.name).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err("two tables share a name");
    }
    Ok(out)
}

/// `count` items of `size` bytes from byte `at`, aligned to `align`, inside `within`.
fn range(
    at: u64,
    count: u64,
    size: usize,
    align: usize,
    within: &Range<usize>,
) -> Option<Range<usize>> {
    let at = usize::try_from(at).ok()?;
    let end = at.checked_add(usize::try_from(count).ok()?.checked_mul(size)?)?;
    (at.is_multiple_of(align) && within.start <= at && end <= within.end).then_some(at..end)
}
