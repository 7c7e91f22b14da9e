//! Fault injection: a reader that stalls between loading the version and registering on it
//! (the window mmap-sync gets wrong) is never handed a copy being written.
//!
//! The writer runs as a sequence of single steps (announce, wait for readers, write one word,
//! publish), so the reader can be stalled for any number of writer steps, at any point of a
//! publish, and the writer can step between each word the reader reads. Every combination is
//! tried. The same checker run with a `register` that skips the re-check (mmap-sync's reader)
//! must find torn reads, or it would not be testing anything.

use core::sync::atomic::{AtomicU64, Ordering};
use std::prelude::rust_2024::*;

use crate::store::protocol::{Protocol, words_for};

/// Words per copy: each publish writes them one step at a time.
const WORDS: usize = 4;
/// Writer steps per publish when no reader holds it up: begin, wait, the words, publish.
const STEPS: usize = WORDS + 3;

#[derive(Debug, Clone, Copy)]
enum Phase {
    Begin,
    Wait,
    Write(usize),
    Publish,
}

/// The writer's publish loop, one step at a time, over plain (non-atomic) copies.
struct Writer<'a> {
    protocol: Protocol<'a>,
    copies: [[u64; WORDS]; 2],
    generation: u64,
    phase: Phase,
}

impl<'a> Writer<'a> {
    fn new(protocol: Protocol<'a>) -> Writer<'a> {
        Writer {
            protocol,
            copies: [[0; WORDS]; 2],
            generation: 1,
            phase: Phase::Begin,
        }
    }

    /// One step of publishing; a writer waiting for a reader stays where it is.
    fn step(&mut self) {
        let g = self.generation;
        self.phase = match self.phase {
            Phase::Begin => {
                self.protocol.begin(g);
                Phase::Wait
            }
            Phase::Wait if self.protocol.readers_on(g) > 0 => Phase::Wait,
            Phase::Wait => Phase::Write(0),
            Phase::Write(i) => {
                self.copies[(g % 2) as usize][i] = g;
                if i + 1 == WORDS {
                    Phase::Publish
                } else {
                    Phase::Write(i + 1)
                }
            }
            Phase::Publish => {
                self.protocol.publish(g);
                self.generation += 1;
                Phase::Begin
            }
        };
    }
}

/// How the reader registers after loading the version.
type Register = fn(Protocol<'_>, &AtomicU64, u64) -> bool;

/// The reader as `Protocol::enter` runs it, with `stall` writer steps between loading the
/// version and registering, and a writer step between every word read; the words it saw and
/// the generation it registered on.
fn stalled_read(writer: &mut Writer<'_>, register: Register, stall: usize) -> (u64, [u64; WORDS]) {
    let protocol = writer.protocol;
    let slot = protocol.slot(0).unwrap();
    let mut stall = stall;
    let generation = loop {
        let generation = protocol.current();
        for _ in 0..core::mem::take(&mut stall) {
            writer.step();
        }
        if register(protocol, slot, generation) {
            break generation;
        }
    };
    let mut seen = [0; WORDS];
    for (i, word) in seen.iter_mut().enumerate() {
        *word = writer.copies[(generation % 2) as usize][i];
        writer.step();
    }
    Protocol::release(slot);
    (generation, seen)
}

/// Every start point within a publish and every stall of up to three publishes: how many
/// reads were handed a copy other than the generation they registered on.
fn torn_reads(register: Register) -> usize {
    let mut torn = 0;
    for offset in 0..STEPS {
        for stall in 0..=3 * STEPS {
            let words: Box<[AtomicU64]> = (0..words_for(2)).map(|_| AtomicU64::new(0)).collect();
            let protocol = Protocol::init(&words).unwrap();
            let mut writer = Writer::new(protocol);
            // Two whole publishes, so both copies hold a complete generation.
            for _ in 0..2 * STEPS + offset {
                writer.step();
            }
            let (generation, seen) = stalled_read(&mut writer, register, stall);
            assert!(generation >= 2, "read generation {generation}");
            torn += usize::from(seen != [generation; WORDS]);
        }
    }
    torn
}

/// mmap-sync's reader: it marks itself on the copy and reads, never checking again.
fn register_without_recheck(_: Protocol<'_>, slot: &AtomicU64, generation: u64) -> bool {
    slot.store(generation, Ordering::SeqCst);
    true
}

#[test]
fn a_reader_stalled_before_registering_is_never_handed_a_copy_being_written() {
    assert_eq!(torn_reads(|p, slot, g| p.register(slot, g)), 0);
}

#[test]
fn without_the_recheck_a_stalled_reader_reads_a_copy_being_written() {
    assert!(torn_reads(register_without_recheck) > 0);
}
