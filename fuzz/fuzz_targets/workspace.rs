//! Random request sequences on a Workspace: allocations of random sizes and alignments,
//! reservations with short commits, snapshots and rollbacks, fresh arenas and resets, in every
//! scrub mode with every reset and operation verified. After each reset the whole buffer must
//! be zero and no verification may have failed; during a request, no byte it can read may hold
//! the previous request's data (bytes carry the request's parity in their high bit).
#![no_main]

use edgewise::{Arena, ScrubMode, Workspace, WorkspaceConfig};
use libfuzzer_sys::fuzz_target;

struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn len(&mut self, max: usize) -> Option<usize> {
        let hi = usize::from(self.byte()?);
        let lo = usize::from(self.byte()?);
        Some((hi << 8 | lo) % (max + 1))
    }
}

enum Flow {
    Rollback,
    NewArena,
    Reset,
    Done,
}

struct Request {
    parity: u8,
    watermark: usize,
    depth: usize,
}

impl Request {
    fn byte(&self, i: usize) -> u8 {
        self.parity << 7 | (i % 127 + 1) as u8
    }

    fn mine(&self, b: u8) -> bool {
        b == 0 || b >> 7 == self.parity
    }

    fn check(&mut self, arena: &Arena<'_>) {
        assert!(arena.watermark() >= self.watermark, "watermark went down");
        assert!(arena.watermark() >= arena.used());
        self.watermark = arena.watermark();
    }

    fn run(&mut self, arena: &mut Arena<'_>, input: &mut Input<'_>) -> Flow {
        let mut live: Vec<(&mut [u8], u8)> = Vec::new();
        let flow = loop {
            let Some(op) = input.byte() else {
                break Flow::Done;
            };
            let fill = self.byte(live.len());
            match op % 8 {
                0 => {
                    let (Some(len), Some(a)) = (input.len(1024), input.byte()) else {
                        break Flow::Done;
                    };
                    let align = 1usize << (a % 8);
                    if let Some(bytes) = arena.alloc_aligned(len, align) {
                        assert_eq!(bytes.as_ptr() as usize % align, 0);
                        assert!(bytes.iter().all(|&b| b == 0), "allocation not zeroed");
                        bytes.fill(fill);
                        live.push((bytes, fill));
                    }
                }
                1 => {
                    let Some(len) = input.len(512) else {
                        break Flow::Done;
                    };
                    if let Some(bytes) = arena.copy(&vec![fill; len]) {
                        live.push((bytes, fill));
                    }
                }
                2 => {
                    if let Some(bytes) = self.writer(arena, input, fill) {
                        live.push((bytes, fill));
                    }
                }
                3 if self.depth < 16 => {
                    let before = (arena.used(), arena.remaining());
                    self.depth += 1;
                    let flow = self.run(&mut arena.snapshot(), input);
                    self.depth -= 1;
                    assert_eq!((arena.used(), arena.remaining()), before, "rollback");
                    if !matches!(flow, Flow::Rollback) {
                        break flow;
                    }
                }
                4 => break Flow::Rollback,
                5 => break Flow::NewArena,
                6 => break Flow::Reset,
                _ => {
                    let Some(len) = input.len(64) else {
                        break Flow::Done;
                    };
                    // Multi-byte UTF-8 has the high bit set: only for odd requests.
                    let text = if self.parity == 0 {
                        "a".repeat(len)
                    } else {
                        "é".repeat(len / 2)
                    };
                    if let Some(s) = arena.copy_str(&text) {
                        assert_eq!(&*s, text);
                    }
                }
            }
            self.check(arena);
        };
        for (bytes, fill) in &live {
            assert!(bytes.iter().all(|b| b == fill), "live allocation clobbered");
        }
        flow
    }

    /// A reservation: pushes, maybe a `spare` read, maybe a truncation, commit or drop.
    fn writer<'w>(
        &mut self,
        arena: &mut Arena<'w>,
        input: &mut Input<'_>,
        fill: u8,
    ) -> Option<&'w mut [u8]> {
        let flags = input.byte()?;
        let mut writer = arena.writer();
        let mut len = 0;
        for _ in 0..flags % 4 {
            let n = input.len(600)?;
            if writer.push(&vec![fill; n]).is_ok() {
                len += n;
            }
        }
        if flags & 0x10 != 0 {
            let (max, filled) = (input.len(2048)?, input.len(2048)?);
            let room = writer.spare(max);
            assert!(
                room.iter().all(|&b| self.mine(b)),
                "previous request visible"
            );
            let filled = filled.min(room.len());
            room.fill(fill);
            if writer.advance(filled).is_ok() {
                len += filled;
            }
        }
        if flags & 0x20 != 0 {
            let t = input.len(1024)?;
            writer.truncate(t);
            len = len.min(t);
        }
        assert_eq!(writer.len(), len);
        let failed = writer.failed();
        if flags & 0x40 == 0 {
            return None;
        }
        let committed = writer.commit();
        assert_eq!(committed.is_none(), failed);
        let bytes = committed?;
        assert_eq!(bytes.len(), len);
        assert!(bytes.iter().all(|&b| b == fill));
        Some(bytes)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input(data);
    let (Some(mode), Some(size)) = (input.byte(), input.len(16 * 1024)) else {
        return;
    };
    let mode = [ScrubMode::Full, ScrubMode::Shadow, ScrubMode::Watermark][usize::from(mode % 3)];
    let config = WorkspaceConfig::new(size)
        .with_mode(mode)
        .with_verify_one_in(1)
        .with_verify_operations(true);
    let mut ws = Workspace::with_config(config);
    let mut parity = 0;
    loop {
        let mut request = Request {
            parity,
            watermark: 0,
            depth: 0,
        };
        let mut scope = ws.begin();
        let flow = loop {
            match request.run(&mut scope.arena(), &mut input) {
                Flow::NewArena | Flow::Rollback => {}
                flow => break flow,
            }
        };
        let report = scope.reset();
        assert_eq!(report.failure, None, "tracking missed a byte");
        assert_eq!(report.watermark, request.watermark);
        let expected = if mode == ScrubMode::Watermark {
            request.watermark
        } else {
            size
        };
        assert_eq!(report.zeroed, expected);
        assert!(ws.is_scrubbed(), "buffer not zero after reset");
        parity ^= 1;
        if matches!(flow, Flow::Done) {
            break;
        }
    }
    assert_eq!(ws.stats().failures, 0);
});
