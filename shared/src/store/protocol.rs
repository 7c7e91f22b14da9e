//! The synchronization protocol between one writer and many readers, over a slice of atomic
//! words: the state file's mapping in production, a plain `Vec<AtomicU64>` in the unit tests
//! (so that Miri can check them; it cannot map files).
//!
//! Generations count publishes from 1; generation `g` lives in copy `g % 2`. The words:
//!
//! - `current`: the newest complete generation (0: none yet);
//! - `writing`: the generation being written, or the last one written;
//! - `replaced[c]`: the generation at which copy `c`'s file was last replaced by a new file;
//! - one slot per reader, each on its own 128-byte line (two cache lines: adjacent-line
//!   prefetchers pair them), holding the generation the reader is on, or [`IDLE`].
//!
//! A reader *registers* on generation `g` by storing `g` into its slot and then loading
//! `writing`: if `writing < g + 2`, copy `g % 2` is not being overwritten and cannot be without
//! the writer seeing the slot. The writer *begins* generation `w` by storing `w` into `writing`
//! and then scans the slots for readers on copy `w % 2`. Both pairs are `SeqCst`, so in the
//! single total order either the reader's load sees the writer's store (and the reader retries
//! on a newer generation), or the writer's scan sees the reader's slot (and waits for it). This
//! is what mmap-sync misses: its readers increment a counter after loading the version and
//! never check again, so a writer that started meanwhile overwrites the copy under them.

use core::sync::atomic::{AtomicU64, Ordering};

/// A slot's value when its reader holds no guard.
pub(crate) const IDLE: u64 = 0;

/// Reader slots in a state file (the protocol takes any number: the unit tests use few, so
/// that Miri gets through the writer's scans).
pub(crate) const SLOTS: usize = 1024;

const MAGIC: u64 = u64::from_le_bytes(*b"EWSTATE1");
/// Layout version, in the high half of the layout word; the slot count is the low half.
const LAYOUT_VERSION: u64 = 1;
/// Words per slot: 128 bytes.
const SLOT_STRIDE: usize = 16;
const MAGIC_AT: usize = 0;
const LAYOUT_AT: usize = 1;
/// `current`, `writing` and `replaced` share the second cache line: only the writer stores to
/// it, once per publish, so readers keep it shared in their caches.
const CURRENT_AT: usize = 8;
const WRITING_AT: usize = 9;
const REPLACED_AT: usize = 10;
const SLOTS_AT: usize = 16;

/// Words in a state region with `slots` reader slots.
pub(crate) const fn words_for(slots: usize) -> usize {
    SLOTS_AT + slots * SLOT_STRIDE
}

/// Words in a state file.
pub(crate) const WORDS: usize = words_for(SLOTS);

/// Why a reader could not register.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EnterError {
    /// Nothing was ever published.
    Empty,
    /// The writer overtook every attempt.
    Overrun(u32),
}

/// The protocol over a region of [`words_for`]`(slots)` words.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Protocol<'a> {
    words: &'a [AtomicU64],
}

impl<'a> Protocol<'a> {
    /// Writes the header into a fresh, zeroed region; `None` if it is too short for one slot.
    pub(crate) fn init(words: &'a [AtomicU64]) -> Option<Protocol<'a>> {
        let slots = Protocol::capacity(words);
        if slots == 0 {
            return None;
        }
        words[LAYOUT_AT].store(LAYOUT_VERSION << 32 | slots as u64, Ordering::Relaxed);
        words[MAGIC_AT].store(MAGIC, Ordering::Release);
        Some(Protocol { words })
    }

    /// The protocol over a region written by [`Protocol::init`].
    pub(crate) fn attach(words: &'a [AtomicU64]) -> Result<Protocol<'a>, &'static str> {
        let slots = Protocol::capacity(words);
        if slots == 0 || words[MAGIC_AT].load(Ordering::Acquire) != MAGIC {
            return Err("not a feature store state file (bad magic)");
        }
        if words[LAYOUT_AT].load(Ordering::Relaxed) != LAYOUT_VERSION << 32 | slots as u64 {
            return Err("state layout of another version");
        }
        let protocol = Protocol { words };
        if protocol.writing() < protocol.current() {
            return Err("writing generation below the current one");
        }
        Ok(protocol)
    }

    /// Slots a region of this length holds.
    fn capacity(words: &[AtomicU64]) -> usize {
        words.len().saturating_sub(SLOTS_AT) / SLOT_STRIDE
    }

    /// The protocol over a region already [attached](Protocol::attach) (or initialized).
    #[inline]
    pub(crate) fn over(words: &'a [AtomicU64]) -> Protocol<'a> {
        Protocol { words }
    }

    /// The newest complete generation, 0 if none.
    #[inline]
    pub(crate) fn current(self) -> u64 {
        self.words[CURRENT_AT].load(Ordering::Acquire)
    }

    /// The generation being (or last) written.
    pub(crate) fn writing(self) -> u64 {
        self.words[WRITING_AT].load(Ordering::SeqCst)
    }

    /// Reader slots.
    pub(crate) fn slots(self) -> usize {
        Protocol::capacity(self.words)
    }

    /// Reader slot `index` (`None` past [`Protocol::slots`]).
    #[inline]
    pub(crate) fn slot(self, index: usize) -> Option<&'a AtomicU64> {
        self.words.get(SLOTS_AT + index.checked_mul(SLOT_STRIDE)?)
    }

    /// Registers `slot` on generation `generation`; true if that copy is safe to read until
    /// [`Protocol::release`]. On false the slot still names the generation: register again or
    /// release.
    #[inline]
    pub(crate) fn register(self, slot: &AtomicU64, generation: u64) -> bool {
        slot.store(generation, Ordering::SeqCst);
        self.words[WRITING_AT].load(Ordering::SeqCst) < generation.saturating_add(2)
    }

    /// Registers `slot` on the current generation, retrying at most `tries` times while the
    /// writer overtakes it; the generation on success.
    #[inline]
    pub(crate) fn enter(self, slot: &AtomicU64, tries: u32) -> Result<u64, EnterError> {
        for _ in 0..tries {
            let generation = self.current();
            if generation == 0 {
                slot.store(IDLE, Ordering::Release);
                return Err(EnterError::Empty);
            }
            if self.register(slot, generation) {
                return Ok(generation);
            }
        }
        slot.store(IDLE, Ordering::Release);
        Err(EnterError::Overrun(tries))
    }

    /// Ends the reader's use of the copy it registered on: everything it read happens before
    /// the writer's next scan that sees [`IDLE`].
    #[inline]
    pub(crate) fn release(slot: &AtomicU64) {
        slot.store(IDLE, Ordering::Release);
    }

    /// Writer: announces `generation`; after this, no reader newly registers on a generation
    /// of the same copy.
    pub(crate) fn begin(self, generation: u64) {
        self.words[WRITING_AT].store(generation, Ordering::SeqCst);
    }

    /// Writer, after [`Protocol::begin`]: readers registered on copy `generation % 2` at or
    /// after the copy's last file replacement (readers on older generations of that copy hold
    /// a replaced file, which nobody writes any more).
    pub(crate) fn readers_on(self, generation: u64) -> usize {
        let since = self.replaced(generation % 2);
        (0..self.slots())
            .filter_map(|i| self.slot(i))
            .map(|slot| slot.load(Ordering::SeqCst))
            .filter(|&g| g != IDLE && g % 2 == generation % 2 && g >= since && g < generation)
            .count()
    }

    /// Writer: `generation` is complete; readers move to it.
    pub(crate) fn publish(self, generation: u64) {
        self.words[CURRENT_AT].store(generation, Ordering::Release);
    }

    /// Generation at which `copy`'s file was last replaced.
    pub(crate) fn replaced(self, copy: u64) -> u64 {
        self.words[REPLACED_AT + (copy % 2) as usize].load(Ordering::Acquire)
    }

    /// Writer: `copy`'s file was replaced by a new one holding `generation`.
    pub(crate) fn set_replaced(self, copy: u64, generation: u64) {
        self.words[REPLACED_AT + (copy % 2) as usize].store(generation, Ordering::Release);
    }
}
