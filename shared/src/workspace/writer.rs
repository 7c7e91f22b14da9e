//! Reservations: reserve all remaining room, append, commit what was written.

use core::fmt;

use super::Arena;

/// The workspace had no room for a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct WorkspaceOverflow;

impl fmt::Display for WorkspaceOverflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("request workspace overflow")
    }
}

impl core::error::Error for WorkspaceOverflow {}

/// A growable byte buffer over all of an arena's remaining room (Varnish's reserve-all), for
/// building something whose size is not known up front: a memcached command assembled for one
/// `write`, a reply read in pieces.
///
/// [`commit`](Self::commit) keeps what was written and returns it; dropping the writer
/// releases everything. The watermark follows the furthest byte the writer ever exposed for
/// writing, not the end of the reservation (which would make every request with a writer zero
/// the whole workspace) and not the committed length (which would miss bytes written and then
/// truncated away).
///
/// A write that does not fit fails, marks the request as overflowed and poisons the writer:
/// `commit` then returns `None`, so a truncated command is never sent.
pub struct ArenaWriter<'a, 'w> {
    arena: &'a mut Arena<'w>,
    /// The reserved room, lent by the arena.
    buf: &'w mut [u8],
    /// Offset of `buf` in the workspace.
    start: usize,
    len: usize,
    /// How far into `buf` the watermark already reaches.
    exposed: usize,
    failed: bool,
    /// `buf` went back to the arena already.
    returned: bool,
}

impl<'a, 'w> ArenaWriter<'a, 'w> {
    pub(crate) fn new(arena: &'a mut Arena<'w>) -> ArenaWriter<'a, 'w> {
        let (buf, start) = arena.lend();
        ArenaWriter {
            arena,
            buf,
            start,
            len: 0,
            exposed: 0,
            failed: false,
            returned: false,
        }
    }

    /// Appends `bytes`.
    #[inline]
    pub fn push(&mut self, bytes: &[u8]) -> Result<(), WorkspaceOverflow> {
        let end = self.len + bytes.len();
        let Some(dst) = self.buf.get_mut(self.len..end) else {
            return Err(self.fail());
        };
        dst.copy_from_slice(bytes);
        self.len = end;
        self.expose(end);
        Ok(())
    }

    /// Appends one byte.
    #[inline]
    pub fn push_byte(&mut self, byte: u8) -> Result<(), WorkspaceOverflow> {
        self.push(&[byte])
    }

    /// Up to `max` bytes of unwritten room right after what was written, e.g. to `read` into;
    /// then [`advance`](Self::advance) over what was filled. Counts as written for the
    /// watermark whether or not it is filled. May hold bytes written earlier in this request
    /// (never another request's).
    pub fn spare(&mut self, max: usize) -> &mut [u8] {
        let end = self.len.saturating_add(max).min(self.buf.len());
        self.expose(end);
        self.buf.get_mut(self.len..end).unwrap_or_default()
    }

    /// Marks `n` more bytes as written, all of them inside room handed out by
    /// [`spare`](Self::spare); beyond that the writer fails.
    pub fn advance(&mut self, n: usize) -> Result<(), WorkspaceOverflow> {
        match self.len.checked_add(n) {
            Some(end) if end <= self.exposed => {
                self.len = end;
                Ok(())
            }
            _ => Err(self.fail()),
        }
    }

    /// Forgets everything after the first `len` written bytes (their bytes stay under the
    /// watermark).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Forgets everything written.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// What was written so far.
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or_default()
    }

    /// What was written so far, to patch in place (a length prefix, say).
    pub fn as_mut_bytes(&mut self) -> &mut [u8] {
        self.buf.get_mut(..self.len).unwrap_or_default()
    }

    /// Bytes written.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Room left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Whether a write failed; `commit` will return `None`.
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Keeps what was written and releases the rest of the reservation. `None` if a write
    /// failed: then nothing is kept.
    pub fn commit(mut self) -> Option<&'w mut [u8]> {
        let keep = if self.failed { 0 } else { self.len };
        let (kept, rest) = core::mem::take(&mut self.buf).split_at_mut(keep);
        self.arena.give_back(rest, keep);
        self.returned = true;
        // The release counts as an operation, so it may be sampled too.
        self.arena.operation();
        (!self.failed).then_some(kept)
    }

    /// Raises the watermark over the first `end` bytes of the reservation, before they can be
    /// written: a writer that is leaked (`mem::forget`) must not leave bytes untracked.
    #[inline]
    fn expose(&mut self, end: usize) {
        if end > self.exposed {
            self.exposed = end;
            self.arena.tracker().raise(self.start + end);
        }
    }

    #[cold]
    fn fail(&mut self) -> WorkspaceOverflow {
        self.failed = true;
        self.arena.tracker().mark_overflow();
        WorkspaceOverflow
    }

    /// Writes a byte of the reservation without raising the watermark (the bug sampled
    /// verification exists to catch).
    #[cfg(test)]
    pub(crate) fn write_untracked(&mut self, at: usize, byte: u8) {
        if let Some(b) = self.buf.get_mut(at) {
            *b = byte;
        }
    }
}

impl Drop for ArenaWriter<'_, '_> {
    fn drop(&mut self) {
        if !self.returned {
            self.arena.give_back(core::mem::take(&mut self.buf), 0);
        }
    }
}

impl fmt::Write for ArenaWriter<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push(s.as_bytes()).map_err(|_| fmt::Error)
    }
}

impl fmt::Debug for ArenaWriter<'_, '_> {
    // Never the contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArenaWriter")
            .field("start", &self.start)
            .field("len", &self.len)
            .field("capacity", &self.buf.len())
            .field("failed", &self.failed)
            .finish()
    }
}
