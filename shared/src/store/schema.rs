//! What a snapshot holds, owned and archived.
//!
//! The owned tables are `HashMap<u64, Vec<f32>>`, as in bliss, so the daemon can apply upserts
//! cheaply. Archived, a table is not rkyv's hash map but a flat layout that answers a lookup in
//! two cache misses: an open-addressing index of 16-byte slots (key, start, length; load at
//! most one half, linear probing) and all vectors back to back in one `f32` array. rkyv's
//! `ArchivedHashMap<u64, ArchivedVec<f32>>` takes a control-byte group, an entry and the
//! vector's own relative pointer. The serializer writes each vector straight from the owned
//! map into the output (the mapped data file, for the writer): no intermediate copy of the
//! payload, only of the index.

use std::collections::HashMap;
use std::prelude::rust_2024::*;
use std::string::String;
use std::vec::Vec;

use rkyv::rancor::{Fallible, Source};
use rkyv::rend::f32_le;
use rkyv::ser::{Allocator, Writer, WriterExt};
use rkyv::vec::{ArchivedVec, VecResolver};
use rkyv::with::{ArchiveWith, DeserializeWith, SerializeWith};
use rkyv::{Archive, Deserialize, Place, Serialize};

#[cfg(not(target_endian = "little"))]
compile_error!("the feature store writes vectors as native bytes and needs a little-endian target");

/// One published state of all feature tables.
#[derive(Debug, Clone, Default, PartialEq, Archive, Serialize, Deserialize)]
#[rkyv(derive(Debug))]
pub struct FeatureSnapshot {
    /// Version of the data, chosen by the publisher; each publish must raise it.
    pub version: u64,
    /// When the snapshot was made, milliseconds since the Unix epoch.
    pub created_unix_ms: u64,
    /// The tables, looked up by name.
    pub tables: Vec<FeatureTable>,
}

/// A named table of feature vectors keyed by a 64-bit dimension key.
#[derive(Debug, Clone, Default, PartialEq, Archive, Serialize, Deserialize)]
#[rkyv(derive(Debug))]
pub struct FeatureTable {
    /// The table's name, unique within a snapshot.
    pub name: String,
    /// Vector per key; vectors may differ in length.
    #[rkyv(with = RowLayout)]
    pub rows: HashMap<u64, Vec<f32>>,
}

impl FeatureTable {
    /// An empty table called `name`.
    pub fn new(name: impl Into<String>) -> FeatureTable {
        FeatureTable {
            name: name.into(),
            rows: HashMap::new(),
        }
    }
}

/// `len` of a free index slot (no vector has `u32::MAX` floats: [`RowLayout`] refuses it).
pub(crate) const EMPTY: u32 = u32::MAX;

/// An index slot: where the vector of `key` starts in the value array, and its length.
#[derive(Debug, Clone, Copy, Archive, Serialize)]
#[rkyv(derive(Debug))]
pub(crate) struct Slot {
    key: u64,
    start: u32,
    len: u32,
}

const FREE: Slot = Slot {
    key: 0,
    start: 0,
    len: EMPTY,
};

/// The archived shape of a table's rows (never built owned: [`RowLayout`] serializes a
/// `HashMap` into it).
#[allow(dead_code, reason = "only its archived form is ever built")]
#[derive(Archive)]
#[rkyv(archived = ArchivedRows, derive(Debug))]
pub(crate) struct Rows {
    count: u64,
    // Validation claims subtrees in field order and each must follow the last: the values are
    // written first (the index is built while they are).
    values: Vec<f32>,
    slots: Vec<Slot>,
}

/// Archives a `HashMap<u64, Vec<f32>>` as [`ArchivedRows`].
#[derive(Debug)]
pub(crate) struct RowLayout;

/// Where [`RowLayout`] wrote the index and the values.
pub(crate) struct IndexResolver {
    slots: VecResolver,
    slot_count: usize,
    values: VecResolver,
    value_count: usize,
}

/// Slots for `rows` keys: a power of two at least twice as many (0 for none).
fn index_capacity(rows: usize) -> Option<usize> {
    match rows {
        0 => Some(0),
        n => n.checked_mul(2)?.checked_next_power_of_two(),
    }
}

/// Bytes a table's rows take archived, at most (the writer sizes data files with it).
pub(crate) fn rows_size_bound(rows: &HashMap<u64, Vec<f32>>) -> Option<usize> {
    let floats = rows
        .values()
        .try_fold(0usize, |n, row| n.checked_add(row.len()))?;
    let index = index_capacity(rows.len())?.checked_mul(size_of::<ArchivedSlot>())?;
    floats.checked_mul(4)?.checked_add(index)?.checked_add(64)
}

/// splitmix64's finalizer: keys are often small counters or already hashes; either way the
/// low bits that pick a slot must depend on all of the key.
#[inline]
pub(crate) fn mix(key: u64) -> u64 {
    let z = (key ^ (key >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn insert(slots: &mut [Slot], slot: Slot) {
    let mask = slots.len().wrapping_sub(1);
    let mut i = mix(slot.key) as usize & mask;
    // The map has unique keys and the index is at most half full: a free slot comes first.
    for _ in 0..slots.len() {
        if let Some(free) = slots.get_mut(i).filter(|s| s.len == EMPTY) {
            *free = slot;
            return;
        }
        i = (i + 1) & mask;
    }
}

impl ArchiveWith<HashMap<u64, Vec<f32>>> for RowLayout {
    type Archived = ArchivedRows;
    type Resolver = IndexResolver;

    fn resolve_with(
        rows: &HashMap<u64, Vec<f32>>,
        resolver: IndexResolver,
        out: Place<ArchivedRows>,
    ) {
        rkyv::munge::munge!(let ArchivedRows { count, slots, values } = out);
        (rows.len() as u64).resolve((), count);
        ArchivedVec::resolve_from_len(resolver.slot_count, resolver.slots, slots);
        ArchivedVec::resolve_from_len(resolver.value_count, resolver.values, values);
    }
}

impl<S> SerializeWith<HashMap<u64, Vec<f32>>, S> for RowLayout
where
    S: Fallible + Writer + Allocator + ?Sized,
    S::Error: Source,
{
    fn serialize_with(
        rows: &HashMap<u64, Vec<f32>>,
        serializer: &mut S,
    ) -> Result<IndexResolver, S::Error> {
        let too_large = || S::Error::new(TooLarge);
        let mut slots = std::vec![FREE; index_capacity(rows.len()).ok_or_else(too_large)?];
        let values_at = serializer.align_for::<f32_le>()?;
        let mut start = 0u32;
        for (&key, row) in rows {
            let len = u32::try_from(row.len()).map_err(|_| too_large())?;
            let end = start.checked_add(len).filter(|&end| end < EMPTY);
            let end = end.ok_or_else(too_large)?;
            serializer.write(bytemuck::cast_slice(row))?;
            insert(&mut slots, Slot { key, start, len });
            start = end;
        }
        Ok(IndexResolver {
            slots: ArchivedVec::serialize_from_slice(&slots, serializer)?,
            slot_count: slots.len(),
            values: VecResolver::from_pos(values_at),
            value_count: start as usize,
        })
    }
}

impl<D: Fallible + ?Sized> DeserializeWith<ArchivedRows, HashMap<u64, Vec<f32>>, D> for RowLayout {
    fn deserialize_with(
        rows: &ArchivedRows,
        _: &mut D,
    ) -> Result<HashMap<u64, Vec<f32>>, D::Error> {
        Ok(rows.iter().map(|(key, row)| (key, row.to_vec())).collect())
    }
}

/// A table too large for the layout: a vector of 2^32 - 1 floats or more, or more than
/// 2^32 - 2 floats in all.
#[derive(Debug)]
struct TooLarge;

impl core::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("a table holds 2^32 - 1 floats or more")
    }
}

impl core::error::Error for TooLarge {}

impl ArchivedRows {
    #[inline]
    fn vector(&self, start: u32, len: u32) -> Option<&[f32]> {
        let values: &[f32] = bytemuck::cast_slice(self.values.as_slice());
        let start = start as usize;
        values.get(start..start.checked_add(len as usize)?)
    }

    /// Its slots and its values, where they lie (the writer's table index records them).
    pub(crate) fn parts(&self) -> (&[ArchivedSlot], &[f32_le]) {
        (self.slots.as_slice(), self.values.as_slice())
    }

    /// Keys stored.
    pub(crate) fn len(&self) -> usize {
        self.count.to_native() as usize
    }

    /// Every key and its vector, in index order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &[f32])> {
        self.slots
            .iter()
            .filter(|slot| slot.len.to_native() != EMPTY)
            .filter_map(|slot| {
                let row = self.vector(slot.start.to_native(), slot.len.to_native())?;
                Some((slot.key.to_native(), row))
            })
    }

    /// What bytecheck cannot see: a power-of-two index with a free slot, every vector inside
    /// the value array, `count` keys, vectors as long in all as the value array. One
    /// sequential pass over the index (a probe per key would cost a cache miss each); a key
    /// stored twice, which only a forged archive with a matching checksum could hold, is
    /// harmless: lookups find the first.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        let slots = self.slots.as_slice();
        if !(slots.is_empty() || slots.len().is_power_of_two()) {
            return Err("table index size is not a power of two");
        }
        let values = self.values.len() as u64;
        let (mut keys, mut floats) = (0u64, 0u64);
        for slot in slots.iter().filter(|slot| slot.len.to_native() != EMPTY) {
            let len = u64::from(slot.len.to_native());
            if u64::from(slot.start.to_native()) + len > values {
                return Err("table vector outside the value array");
            }
            keys += 1;
            floats += len;
        }
        if keys != self.count.to_native() {
            return Err("table key count disagrees with its index");
        }
        // The writer lays vectors end to end. Vectors sharing floats, which only a forged
        // archive holds, would each be copied whole by `deserialize_with`: 65,536 keys on one
        // run of 4,096 floats, a 2.4 MB file, became 1 GiB in the daemon.
        if floats != values {
            return Err("table vectors do not add up to its value array");
        }
        if keys > 0 && keys as usize >= slots.len() {
            return Err("table index has no free slot");
        }
        Ok(())
    }
}

impl ArchivedFeatureSnapshot {
    /// [`ArchivedRows::check`] of every table, and unique table names.
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        for table in self.tables.iter() {
            table.rows.check()?;
        }
        // Sorted, not each compared with those before: 40k tables took minutes.
        let mut names: Vec<&str> = self.tables.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err("two tables share a name");
        }
        Ok(())
    }
}

impl FeatureSnapshot {
    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<&FeatureTable> {
        self.tables.iter().find(|table| table.name == name)
    }

    /// The table called `name`, added empty if missing.
    pub fn table_mut(&mut self, name: &str) -> &mut FeatureTable {
        let index = match self.tables.iter().position(|table| table.name == name) {
            Some(index) => index,
            None => {
                self.tables.push(FeatureTable::new(name));
                self.tables.len() - 1
            }
        };
        &mut self.tables[index]
    }

    /// Bytes the archive takes at most, header included.
    pub(crate) fn size_bound(&self) -> Option<usize> {
        self.tables.iter().try_fold(4096usize, |n, table| {
            n.checked_add(rows_size_bound(&table.rows)?)?
                .checked_add(table.name.len())?
                .checked_add(128)
        })
    }
}
