//! Workloads and peers of the request-workspace benchmarks, shared by the criterion bench
//! (`benches/workspace.rs`) and the `workspace_wasm` binary so that both measure the same loops.
//!
//! A request allocates `used` bytes of a 512 KiB workspace, writes one byte per cache line of
//! them (so they are in cache and dirty, as after a real request that filled them), and ends
//! with a reset. The touch costs the same in every mode; [`touch_only`] measures it alone so
//! that it can be subtracted.

use std::hint::black_box;

use edgewise::{ScrubMode, Workspace, WorkspaceConfig};

/// Varnish's workspace size, as in Fastly's write-up.
pub const SIZE: usize = 512 * 1024;

/// Bytes used per request, per table row: 2 KiB (a bare GET) to 200 KiB.
pub const USED: [usize; 5] = [2 << 10, 8 << 10, 20 << 10, 64 << 10, 200 << 10];

/// A traffic mix, cycled: mostly small requests, the occasional big one (mean 27 KiB).
pub const MIX: [usize; 16] = [
    2 << 10,
    2 << 10,
    2 << 10,
    2 << 10,
    2 << 10,
    2 << 10,
    8 << 10,
    8 << 10,
    8 << 10,
    8 << 10,
    20 << 10,
    20 << 10,
    20 << 10,
    64 << 10,
    64 << 10,
    200 << 10,
];

/// Where the watermark must be at least 10x cheaper than a full clear (issue 7), and where the
/// verification overhead is measured.
pub const TARGET_USED: usize = 20 << 10;

const LINE: usize = 64;

/// The configurations compared: label, mode, verification rate.
pub const CONFIGS: [(&str, ScrubMode, u32); 4] = [
    ("full", ScrubMode::Full, 0),
    ("shadow", ScrubMode::Shadow, edgewise::DEFAULT_VERIFY_ONE_IN),
    (
        "watermark",
        ScrubMode::Watermark,
        edgewise::DEFAULT_VERIFY_ONE_IN,
    ),
    ("watermark-noverify", ScrubMode::Watermark, 0),
];

/// A [`SIZE`] workspace.
pub fn workspace(mode: ScrubMode, verify_one_in: u32, seed: u64) -> Workspace {
    Workspace::with_config(
        WorkspaceConfig::new(SIZE)
            .with_mode(mode)
            .with_verify_one_in(verify_one_in)
            .with_seed(seed),
    )
}

/// One store per cache line.
#[inline]
pub fn touch(bytes: &mut [u8]) {
    for line in bytes.chunks_mut(LINE) {
        line[0] = 0xa5;
    }
}

/// One request on `ws`: allocate and touch `used` bytes, reset. Returns the bytes zeroed.
#[inline]
pub fn request(ws: &mut Workspace, used: usize) -> usize {
    let mut scope = ws.begin();
    if let Some(bytes) = scope.arena().alloc(used) {
        touch(bytes);
    }
    scope.reset().zeroed
}

/// What code without a workspace does: a fresh zeroed 512 KiB buffer per request, touched and
/// freed.
#[inline]
pub fn fresh_vec_request(used: usize) -> usize {
    let mut buf = vec![0u8; SIZE];
    touch(&mut buf[..used]);
    black_box(&buf);
    SIZE
}

/// The touch alone, on a plain buffer of the same size: the part of a request's time that is
/// not the reset.
#[inline]
pub fn touch_only(buf: &mut [u8], used: usize) -> usize {
    touch(&mut buf[..used]);
    black_box(buf);
    0
}

/// Workspaces cycled round-robin, so each request finds its workspace evicted from the caches
/// when the pool is larger than the last-level cache: the memory traffic regime where Fastly's
/// gain came from.
#[derive(Debug)]
pub struct Pool {
    workspaces: Vec<Workspace>,
    next: usize,
}

impl Pool {
    /// `count` workspaces, each with its own sampling seed.
    pub fn new(count: usize, mode: ScrubMode, verify_one_in: u32) -> Pool {
        Pool {
            workspaces: (0..count as u64)
                .map(|seed| workspace(mode, verify_one_in, seed))
                .collect(),
            next: 0,
        }
    }

    /// Changes mode and sampling rate of every workspace.
    pub fn set(&mut self, mode: ScrubMode, verify_one_in: u32) {
        for ws in &mut self.workspaces {
            ws.set_mode(mode);
            ws.set_verify_one_in(verify_one_in);
        }
    }

    /// The next workspace, round-robin.
    #[inline]
    pub fn next_workspace(&mut self) -> &mut Workspace {
        let i = self.next;
        self.next = (i + 1) % self.workspaces.len();
        &mut self.workspaces[i]
    }

    /// One request on every workspace (sizes cycled), untimed: brings the caches to this
    /// configuration's steady state, whatever ran before. Without it, a batch that follows a
    /// full-clear batch (which pushed megabytes through the last-level cache) pays for the
    /// misses that batch caused.
    pub fn settle(&mut self, sizes: &[usize]) {
        for used in sizes.iter().cycle().take(self.workspaces.len()) {
            request(self.next_workspace(), *used);
        }
    }

    /// Number of workspaces.
    pub fn len(&self) -> usize {
        self.workspaces.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.workspaces.is_empty()
    }
}

/// Plain buffers cycled like a [`Pool`], for the touch baseline.
#[derive(Debug)]
pub struct BufferPool {
    buffers: Vec<Vec<u8>>,
    next: usize,
}

impl BufferPool {
    /// `count` zeroed [`SIZE`] buffers.
    pub fn new(count: usize) -> BufferPool {
        BufferPool {
            buffers: (0..count).map(|_| vec![0u8; SIZE]).collect(),
            next: 0,
        }
    }

    /// One touch of every buffer, untimed, as [`Pool::settle`].
    pub fn settle(&mut self, sizes: &[usize]) {
        for used in sizes.iter().cycle().take(self.buffers.len()) {
            touch_only(self.next_buffer(), *used);
        }
    }

    /// The next buffer, round-robin.
    #[inline]
    pub fn next_buffer(&mut self) -> &mut [u8] {
        let i = self.next;
        self.next = (i + 1) % self.buffers.len();
        &mut self.buffers[i]
    }
}

/// Workspaces needed to cover `bytes`.
pub fn pool_len(bytes: usize) -> usize {
    bytes.div_ceil(SIZE).max(1)
}

/// The last-level cache size from sysfs (Linux), for sizing the pool natively.
pub fn llc_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| {
        let path = entry.ok()?.path();
        let level: u32 = std::fs::read_to_string(path.join("level"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        let size = std::fs::read_to_string(path.join("size")).ok()?;
        let size = size.trim();
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
        let scale = match unit {
            "K" => 1 << 10,
            "M" => 1 << 20,
            _ => return None,
        };
        Some((level, digits.parse::<usize>().ok()? * scale))
    })
    .max()
    .map(|(_, size)| size)
}

/// Mean bytes zeroed per reset for `used` (a size, or the [`MIX`] when `None`), from a fresh
/// workspace's counters.
pub fn bytes_zeroed_per_reset(mode: ScrubMode, verify_one_in: u32, used: Option<usize>) -> f64 {
    let mut ws = workspace(mode, verify_one_in, 0);
    let sizes: &[usize] = match &used {
        Some(used) => std::slice::from_ref(used),
        None => &MIX,
    };
    for &used in sizes {
        request(&mut ws, used);
    }
    let stats = ws.stats();
    stats.bytes_zeroed as f64 / stats.resets as f64
}

/// Zero checks the verification loop is measured against.
pub mod peers {
    /// The byte loop a first version would write: compare, branch, next byte.
    #[inline(never)]
    pub fn byte_loop(bytes: &[u8]) -> bool {
        for &b in bytes {
            if b != 0 {
                return false;
            }
        }
        true
    }

    /// The idiomatic one-liner; the early exit keeps it from vectorizing.
    #[inline(never)]
    pub fn iter_all(bytes: &[u8]) -> bool {
        bytes.iter().all(|&b| b == 0)
    }

    /// OR-fold byte by byte without early exit: vectorizes natively, not in Wasm without SIMD.
    #[inline(never)]
    pub fn byte_fold(bytes: &[u8]) -> bool {
        bytes.iter().fold(0u8, |acc, &b| acc | b) == 0
    }
}
