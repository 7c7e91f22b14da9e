//! The records of the subsets the subset table keeps by packed key: each one's selector and
//! value ids (its set is in the table's entry; a one-key subset in the table's array has no
//! record). The ids sit in one pool, a fixed stride (the most keys of a selector) per subset,
//! rather than inline in room for [`METADATA_CAPACITY`](super::METADATA_CAPACITY) ids each.

use alloc::vec::Vec;

/// One subset: a selector's keys with one value each.
#[derive(Debug, Clone, Copy)]
pub(super) struct Subset {
    pub selector: u8,
    /// How many value ids (its selector's keys, at least one); 0 marks a free record.
    len: u8,
}

impl Subset {
    const FREE: Subset = Subset {
        selector: 0,
        len: 0,
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

    /// Adds a subset of `selector` with value ids `kvs`; returns its index.
    pub fn push(&mut self, selector: u8, kvs: &[u32]) -> u32 {
        debug_assert!(!kvs.is_empty());
        let record = Subset {
            selector,
            len: kvs.len() as u8,
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

    /// The value ids of subset `i` (none if it was removed, or has no record).
    pub fn kvs(&self, i: u32) -> &[u32] {
        let Some(subset) = self.get(i) else {
            return &[];
        };
        let at = i as usize * self.stride;
        &self.ids[at..at + usize::from(subset.len)]
    }

    /// Frees record `i`, if it is one.
    pub fn remove(&mut self, i: u32) {
        if let Some(record) = self.records.get_mut(i as usize)
            && record.len > 0
        {
            *record = Subset::FREE;
            self.free.push(i);
        }
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
