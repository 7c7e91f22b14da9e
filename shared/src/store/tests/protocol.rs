//! The protocol on plain memory: these run under Miri, whose data-race detector checks that
//! no reader ever reads a copy while the writer writes it.

#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};
use std::prelude::rust_2024::*;
use std::sync::Arc;
use std::thread;

use crate::store::protocol::{EnterError, IDLE, Protocol, words_for};

/// A zeroed region of 8 reader slots.
fn region() -> Box<[AtomicU64]> {
    (0..words_for(8)).map(|_| AtomicU64::new(0)).collect()
}

#[test]
fn attach_checks_the_header() {
    let words = region();
    assert!(Protocol::attach(&words).is_err());
    assert!(Protocol::init(&words[..words_for(0)]).is_none());
    Protocol::init(&words).unwrap();
    assert!(
        Protocol::attach(&words[..words_for(7)]).is_err(),
        "slot count in the header"
    );
    assert!(Protocol::attach(&words).is_ok());
    words[1].store(7, Ordering::Relaxed);
    assert_eq!(
        Protocol::attach(&words).unwrap_err(),
        "state layout of another version"
    );
}

#[test]
fn registration_and_writer_see_each_other() {
    let words = region();
    let p = Protocol::init(&words).unwrap();
    let slot = p.slot(3).unwrap();
    assert_eq!(p.enter(slot, 4), Err(EnterError::Empty));
    p.begin(1);
    p.publish(1);
    assert_eq!(p.enter(slot, 4), Ok(1));
    // Generation 2 goes to the other copy: the reader on 1 does not hold it up.
    p.begin(2);
    assert_eq!(p.readers_on(2), 0);
    p.publish(2);
    // Generation 3 overwrites copy 1, which the reader still reads.
    p.begin(3);
    assert_eq!(p.readers_on(3), 1);
    // A reader that loaded generation 1 before and registers only now must fail.
    let late = p.slot(4).unwrap();
    assert!(!p.register(late, 1));
    // ... while registering on 2 (other copy) is fine.
    assert!(p.register(late, 2));
    Protocol::release(slot);
    assert_eq!(p.readers_on(3), 0);
    assert_eq!(slot.load(Ordering::Relaxed), IDLE);
    assert!(p.slot(8).is_none());
}

#[test]
fn replaced_copies_ignore_older_readers() {
    let words = region();
    let p = Protocol::init(&words).unwrap();
    let slot = p.slot(0).unwrap();
    p.begin(1);
    p.publish(1);
    assert_eq!(p.enter(slot, 1), Ok(1));
    p.begin(2);
    p.publish(2);
    p.begin(3);
    assert_eq!(p.readers_on(3), 1, "stuck reader on copy 1");
    // The writer gave up on it and wrote generation 3 into a new file.
    p.set_replaced(1, 3);
    p.publish(3);
    p.begin(4);
    p.publish(4);
    p.begin(5);
    assert_eq!(p.readers_on(5), 0, "the stuck reader holds the old file");
}

#[test]
fn overrun_is_bounded() {
    let words = region();
    let p = Protocol::init(&words).unwrap();
    p.publish(1);
    // A writer that announced generation 3 without publishing 2 is what a reader sees when
    // the writer overtakes it on every attempt.
    p.begin(3);
    let slot = p.slot(0).unwrap();
    assert_eq!(p.enter(slot, 5), Err(EnterError::Overrun(5)));
    assert_eq!(slot.load(Ordering::Relaxed), IDLE);
}

/// Two copies of plain (non-atomic) words.
struct Copies([UnsafeCell<[u64; 8]>; 2]);

// SAFETY: access is coordinated by the protocol under test; Miri reports any race.
unsafe impl Sync for Copies {}

/// A writer publishing back to back and readers reading: every read sees one generation's
/// words only, and generations never go backwards. Under Miri a protocol bug is a data race.
#[test]
fn readers_never_see_a_copy_being_written() {
    let (publishes, reads, readers) = if cfg!(miri) {
        (30, 80, 2)
    } else {
        (3000, 20_000, 3)
    };
    let words: Arc<Box<[AtomicU64]>> = Arc::new(region());
    Protocol::init(&words).unwrap();
    let copies = Arc::new(Copies([UnsafeCell::new([0; 8]), UnsafeCell::new([0; 8])]));
    let writer = {
        let (words, copies) = (Arc::clone(&words), Arc::clone(&copies));
        thread::spawn(move || {
            let p = Protocol::over(&words);
            for generation in 1..=publishes {
                p.begin(generation);
                while p.readers_on(generation) > 0 {
                    thread::yield_now();
                }
                let cell = &copies.0[(generation % 2) as usize];
                // SAFETY: no reader is registered on this copy and none can newly register.
                unsafe { *cell.get() = [generation; 8] };
                p.publish(generation);
            }
        })
    };
    let readers: Vec<_> = (0..readers)
        .map(|r| {
            let (words, copies) = (Arc::clone(&words), Arc::clone(&copies));
            thread::spawn(move || {
                let p = Protocol::over(&words);
                let slot = p.slot(r).unwrap();
                let mut last = 0;
                for _ in 0..reads {
                    let Ok(generation) = p.enter(slot, 64) else {
                        continue;
                    };
                    // SAFETY: registered on `generation` (the property under test).
                    let seen = unsafe { *copies.0[(generation % 2) as usize].get() };
                    Protocol::release(slot);
                    assert_eq!(seen, [generation; 8], "torn or wrong copy");
                    assert!(generation >= last, "went backwards");
                    last = generation;
                }
            })
        })
        .collect();
    writer.join().unwrap();
    for reader in readers {
        reader.join().unwrap();
    }
}
