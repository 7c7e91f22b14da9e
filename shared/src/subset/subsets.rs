//! The subsets' records: each one's selector, hosts and value ids. The ids sit in one pool, a
//! fixed stride (the most keys of a selector) per subset, rather than inline in room for
//! [`METADATA_CAPACITY`](super::METADATA_CAPACITY) ids each: a key unique per host makes a
//! subset per host, and inline ids were a quarter of such an index.

use alloc::vec::Vec;

use super::pickset::SetRef;

/// One subset: a selector's keys with one value each.
#[derive(Debug, Clone, Copy)]
pub(super) struct Subset {
    pub selector: u8,
    /// How many value ids (its selector's keys, at least one); 0 marks a free record, which
    /// keeps a record at 8 bytes where an `Option` would take 12.
    len: u8,
    pub set: SetRef,
}

impl Subset {
    const FREE: Subset = Subset {
        selector: 0,
        len: 0,
        set: SetRef::one(0),
    };
}

/// Subset records by index, with free indices reused.
#[derive(Debug, Default)]
pub(super) struct Subsets {
    records: Vec<Subset>,
    /// `stride` ids per record: its value ids in the order of its selector's keys, then unused.
    ids: Vec<u32>,
    stride: usize,
    free: Vec<u32>,
}

impl Subsets {
    /// Records of at most `stride` value ids each.
    pub fn new(stride: usize) -> Subsets {
        Subsets {
            stride,
            ..Subsets::default()
        }
    }

    pub fn reserve_exact(&mut self, n: usize) {
        self.records.reserve_exact(n);
        self.ids.reserve_exact(n * self.stride);
    }

    /// Adds a subset of `selector` with value ids `kvs` over `set`; returns its index.
    pub fn push(&mut self, selector: u8, kvs: &[u32], set: SetRef) -> u32 {
        debug_assert!(!kvs.is_empty());
        let record = Subset {
            selector,
            len: kvs.len() as u8,
            set,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.records[i as usize] = record;
                i
            }
            None => {
                self.records.push(record);
                self.ids.resize(self.records.len() * self.stride, 0);
                (self.records.len() - 1) as u32
            }
        };
        let at = i as usize * self.stride;
        self.ids[at..at + kvs.len()].copy_from_slice(kvs);
        i
    }

    pub fn get(&self, i: u32) -> Option<&Subset> {
        self.records.get(i as usize).filter(|s| s.len > 0)
    }

    pub fn get_mut(&mut self, i: u32) -> Option<&mut Subset> {
        self.records.get_mut(i as usize).filter(|s| s.len > 0)
    }

    /// The value ids of subset `i` (none if it was removed).
    pub fn kvs(&self, i: u32) -> &[u32] {
        let len = self.get(i).map_or(0, |s| usize::from(s.len));
        let at = i as usize * self.stride;
        &self.ids[at..at + len]
    }

    pub fn remove(&mut self, i: u32) {
        self.records[i as usize] = Subset::FREE;
        self.free.push(i);
    }

    /// Gives back what was reserved beyond the subsets made.
    pub fn shrink_to_fit(&mut self) {
        self.records.shrink_to_fit();
        self.ids.shrink_to_fit();
    }

    /// Heap bytes held, for the memory figures.
    pub fn heap_bytes(&self) -> usize {
        self.records.capacity() * size_of::<Subset>()
            + self.ids.capacity() * size_of::<u32>()
            + self.free.capacity() * size_of::<u32>()
    }
}
