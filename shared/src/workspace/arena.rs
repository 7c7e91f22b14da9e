//! The bump allocator over a workspace buffer.

use core::{fmt, mem};

use super::{ArenaWriter, Tracker};

/// Hands out pieces of a request's workspace.
///
/// Every slice lives for `'w`, the arena's borrow of its [`RequestScope`](super::RequestScope),
/// and may be held while more is allocated. Allocation never panics: without room it returns
/// `None` and marks the request as overflowed (Varnish's overflow flag), and later, smaller
/// allocations may still succeed.
///
/// Memory from [`Arena::alloc`] is zero. Bytes are only ever handed out once per request
/// unless a [snapshot](Arena::snapshot) rolled them back, and those are zeroed again when they
/// are handed out.
pub struct Arena<'w> {
    /// The unallocated tail of the buffer; it starts at offset `top`.
    rest: &'w mut [u8],
    top: usize,
    tracker: &'w mut Tracker,
}

impl<'w> Arena<'w> {
    pub(crate) fn new(buf: &'w mut [u8], tracker: &'w mut Tracker) -> Arena<'w> {
        Arena {
            rest: buf,
            top: 0,
            tracker,
        }
    }

    /// `len` zeroed bytes, byte-aligned.
    #[inline]
    pub fn alloc(&mut self, len: usize) -> Option<&'w mut [u8]> {
        self.alloc_aligned(len, 1)
    }

    /// `len` zeroed bytes whose address is a multiple of `align`. `None` (and the overflow
    /// flag) also when `align` is not a power of two.
    #[inline]
    pub fn alloc_aligned(&mut self, len: usize, align: usize) -> Option<&'w mut [u8]> {
        let (bytes, reused) = self.take(len, align)?;
        if let Some(reused) = bytes.get_mut(..reused) {
            reused.fill(0);
        }
        Some(bytes)
    }

    /// A copy of `bytes`, byte-aligned.
    #[inline]
    pub fn copy(&mut self, bytes: &[u8]) -> Option<&'w mut [u8]> {
        let (dst, _) = self.take(bytes.len(), 1)?;
        dst.copy_from_slice(bytes);
        Some(dst)
    }

    /// A copy of `s`.
    ///
    /// The arena has no `unsafe`, so the copy is re-validated as UTF-8 (the ASCII fast path
    /// runs at several bytes per cycle); it cannot fail.
    #[inline]
    pub fn copy_str(&mut self, s: &str) -> Option<&'w mut str> {
        core::str::from_utf8_mut(self.copy(s.as_bytes())?).ok()
    }

    /// Reserves all remaining room for an [`ArenaWriter`], which appends and then commits what
    /// it wrote; nothing else can be allocated while it is open.
    pub fn writer(&mut self) -> ArenaWriter<'_, 'w> {
        self.operation();
        ArenaWriter::new(self)
    }

    /// A snapshot: an arena over this one's free room. Everything allocated through it is rolled
    /// back when it is dropped (the borrow checker has proven those slices dead by then), while
    /// what this arena handed out before stays valid. The watermark does not go back down: the
    /// rolled-back bytes may still hold data until the reset.
    pub fn snapshot(&mut self) -> Arena<'_> {
        self.operation();
        Arena {
            rest: &mut *self.rest,
            top: self.top,
            tracker: &mut *self.tracker,
        }
    }

    /// Rolls a snapshot back now; the same as dropping it.
    pub fn rollback(self) {}

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// Offset of the next free byte.
    pub fn used(&self) -> usize {
        self.top
    }

    /// The request's high watermark so far.
    pub fn watermark(&self) -> usize {
        self.tracker.watermark()
    }

    /// Whether an allocation or a write failed for want of room during this request.
    pub fn overflowed(&self) -> bool {
        self.tracker.overflowed()
    }

    /// Carves `len` bytes aligned to `align` off the free room and raises the watermark over
    /// them. Also returns how many of them lie below the old watermark (written earlier in this
    /// request, then rolled back).
    #[inline]
    fn take(&mut self, len: usize, align: usize) -> Option<(&'w mut [u8], usize)> {
        if !align.is_power_of_two() {
            return self.overflow();
        }
        // Alignment of the address, not of the offset: the buffer itself is only byte-aligned.
        let pad = self.rest.as_ptr().addr().wrapping_neg() & (align - 1);
        let Some(need) = pad.checked_add(len).filter(|&n| n <= self.rest.len()) else {
            return self.overflow();
        };
        let (head, tail) = mem::take(&mut self.rest).split_at_mut(need);
        self.rest = tail;
        let start = self.top + pad;
        self.top += need;
        let old_watermark = self.tracker.raise(self.top);
        self.operation();
        let (_, bytes) = head.split_at_mut(pad);
        Some((bytes, old_watermark.saturating_sub(start).min(len)))
    }

    #[cold]
    fn overflow<T>(&mut self) -> Option<T> {
        self.tracker.mark_overflow();
        self.operation();
        None
    }

    /// Counts an operation and, when it is sampled, verifies the free room above the watermark.
    #[inline]
    pub(crate) fn operation(&mut self) {
        if self.tracker.sample_operation() {
            let at = self.tracker.watermark().max(self.top);
            let above = self.rest.get_mut(at - self.top..).unwrap_or_default();
            self.tracker.verify(above, at, false);
        }
    }

    pub(crate) fn tracker(&mut self) -> &mut Tracker {
        self.tracker
    }

    /// Lends the free room to a writer, which gives back what it does not commit.
    pub(crate) fn lend(&mut self) -> (&'w mut [u8], usize) {
        (mem::take(&mut self.rest), self.top)
    }

    /// Takes back the free room from a writer that used `used` bytes of it.
    pub(crate) fn give_back(&mut self, rest: &'w mut [u8], used: usize) {
        self.rest = rest;
        self.top += used;
    }

    /// Writes a byte past the watermark without raising it: the bug that sampled verification
    /// exists to catch.
    #[cfg(test)]
    pub(crate) fn write_untracked(&mut self, offset: usize, byte: u8) {
        if let Some(b) = self.rest.get_mut(offset - self.top) {
            *b = byte;
        }
    }
}

impl fmt::Debug for Arena<'_> {
    // Never the contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Arena")
            .field("used", &self.top)
            .field("remaining", &self.rest.len())
            .field("watermark", &self.tracker.watermark())
            .finish()
    }
}
