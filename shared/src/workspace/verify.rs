//! Sampled verification: when to check, and the zero check itself.
//!
//! The check reads everything above the watermark (up to ~500 KiB), so it must run at cache
//! speed: it ORs 256-byte blocks together a u64 word at a time, with no branch inside a block,
//! and tests the result once per block. The obvious loops fall far short: `iter().all(|b| *b ==
//! 0)` and a byte loop with an early return stay scalar (one byte per compare and branch), and
//! a byte-wise OR-fold without early exit vectorizes natively but not in Wasm.
//!
//! What the compiler makes of it (release builds, checked in the linked binaries; see
//! `scripts/bench-workspace.sh` for the commands, `benches/benches/workspace.rs` for timings).
//! Look at a linked binary: the release profiles use fat LTO, so `--emit asm` of this crate
//! alone shows code from before LLVM's vectorizers ran (a chain of scalar 64-bit `or`s).
//! - x86_64 (baseline SSE2): per block, 16 unaligned 16-byte loads (`movdqu`) folded by 15
//!   `por`, then one `pcmpeqd`/`movmskps` test; the sub-block tail is vectorized as well.
//!   ~50 GB/s from L2, 50x the byte loop.
//! - wasm32 (the target leaves `simd128` off): per block, 32 `i64.load` folded by 31 `i64.or`,
//!   one test: eight bytes per instruction, 20-30 GB/s under V8. With `+simd128` LLVM still
//!   picks the i64 form for the block (only the tail becomes `v128`), so enabling SIMD for the
//!   worker would not change this loop. The zeroing itself is a `memory.fill`.

/// Bytes OR-folded between two tests for non-zero.
const BLOCK: usize = 256;

/// Whether every byte of `bytes` is zero.
#[inline(never)]
pub(crate) fn is_zero(bytes: &[u8]) -> bool {
    let (blocks, tail) = bytes.as_chunks::<BLOCK>();
    blocks.iter().all(block_is_zero) && tail.iter().fold(0, |acc, &b| acc | b) == 0
}

#[inline(always)]
fn block_is_zero(block: &[u8; BLOCK]) -> bool {
    let (words, _) = block.as_chunks::<8>();
    words
        .iter()
        .fold(0u64, |acc, word| acc | u64::from_ne_bytes(*word))
        == 0
}

/// Offset of the first non-zero byte, if any. Fast when there is none, which is always unless
/// there is a bug.
pub(crate) fn first_nonzero(bytes: &[u8]) -> Option<usize> {
    if is_zero(bytes) {
        return None;
    }
    bytes.iter().position(|&b| b != 0)
}

/// Decides which operations are verified: about one in `one_in`, at gaps drawn uniformly from
/// `1..2 * one_in` so that nothing periodic in the traffic lines up with the samples. A
/// countdown keeps the common case to a decrement and a branch.
#[derive(Debug)]
pub(crate) struct Sampler {
    one_in: u32,
    countdown: u64,
    /// splitmix64 state: plain integer arithmetic, the same in Wasm and natively.
    state: u64,
}

impl Sampler {
    pub(crate) fn new(one_in: u32, seed: u64) -> Sampler {
        let mut sampler = Sampler {
            one_in,
            countdown: 0,
            state: seed,
        };
        sampler.countdown = sampler.gap();
        sampler
    }

    /// Samples about one in `one_in` from now on.
    pub(crate) fn set_rate(&mut self, one_in: u32) {
        self.one_in = one_in;
        self.countdown = self.gap();
    }

    /// Counts one operation; true if it is to be verified.
    #[inline]
    pub(crate) fn tick(&mut self) -> bool {
        if self.countdown > 1 {
            self.countdown -= 1;
            return false;
        }
        self.countdown = self.gap();
        self.one_in != 0
    }

    fn gap(&mut self) -> u64 {
        match self.one_in {
            0 => u64::MAX,
            n => 1 + self.next() % (2 * u64::from(n) - 1),
        }
    }

    fn next(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}
