//! The subset table's key for a subset of several keys: its value ids (which imply its keys,
//! and so its selector) packed into one word, so that a lookup finds its set with one probe
//! and one integer comparison, without following a pointer to the subset's ids.
//!
//! `len` ids share the low 60 bits in lanes of `60 / len` bits, each id stored plus one (a lane
//! is never zero); the top 4 bits hold `len`. While every id interned fits its lane (below
//! 2^60 ids for one, 2^30 for two, 2^20 for three, 2^15 for four) the packing is one-to-one and
//! the key alone decides; beyond, ids spill into the lanes above theirs (the last into the
//! length's bits, which it can only set, so a key is never 0) and the caller also compares the
//! subset's ids. Nothing masks an id to its lane: while keys are exact none needs it, and
//! four masks were 2% of a 4 keys x 3 values lookup's instructions.

use super::metadata::{METADATA_CAPACITY, UNKNOWN_VALUE as UNKNOWN};

const LANES: u32 = 60;

/// `LANES / len` (0 counts as 1) by table: a division per lookup cost more than the probe.
const LANE: [u32; METADATA_CAPACITY + 1] = {
    let mut lanes = [LANES; METADATA_CAPACITY + 1];
    let mut len = 2;
    while len <= METADATA_CAPACITY {
        lanes[len] = LANES / len as u32;
        len += 1;
    }
    lanes
};

fn lane(len: usize) -> u32 {
    match LANE.get(len) {
        Some(&lane) => lane,
        None => LANES / len as u32,
    }
}

/// The key of the first `len` value ids of `kvs` (0 for none). A value no host has
/// ([`UNKNOWN_VALUE`](super::metadata::UNKNOWN_VALUE), `u32::MAX`) wraps to 0 when made
/// one-based, and a lane of 0 is in no subset's key while keys are exact; when they are not,
/// the caller compares ids, which never equal `UNKNOWN_VALUE`. No branch per id: the ids of a
/// request are whatever it sent.
#[inline(always)]
pub(super) fn pack(kvs: impl Iterator<Item = u32>, len: usize) -> u64 {
    // Unrolled per length, with constant lanes: the loop over a length known only at run time
    // was ~45 instructions of a 4-key lookup's 260.
    match len {
        0 => 0,
        1 => pack_n::<1>(kvs),
        2 => pack_n::<2>(kvs),
        3 => pack_n::<3>(kvs),
        4 => pack_n::<4>(kvs),
        5 => pack_n::<5>(kvs),
        6 => pack_n::<6>(kvs),
        7 => pack_n::<7>(kvs),
        8 => pack_n::<8>(kvs),
        _ => pack_any(kvs, len),
    }
}

/// [`pack`] of `N` ids.
#[inline(always)]
fn pack_n<const N: usize>(mut kvs: impl Iterator<Item = u32>) -> u64 {
    let lane = LANES / N as u32;
    let mut key = (N as u64) << LANES;
    for i in 0..N as u32 {
        let kv = kvs.next().unwrap_or(UNKNOWN);
        key |= u64::from(kv.wrapping_add(1)) << (lane * i);
    }
    key
}

/// [`pack`] of any number of ids.
fn pack_any(kvs: impl Iterator<Item = u32>, len: usize) -> u64 {
    let lane = lane(len);
    let mut key = (len as u64) << LANES;
    for (i, kv) in kvs.enumerate() {
        key |= u64::from(kv.wrapping_add(1)).unbounded_shl(lane * i as u32);
    }
    key
}

/// Whether keys of `len` ids are one-to-one while `kv_count` value ids exist.
pub(super) fn is_exact(len: usize, kv_count: usize) -> bool {
    (kv_count as u64) < (1u64 << lane(len))
}

#[cfg(test)]
mod tests {
    use super::super::metadata::UNKNOWN_VALUE;
    use super::*;

    /// The unrolled packing of each length is the general loop's.
    #[test]
    fn unrolled_keys_are_the_loops() {
        let ids = [
            0,
            1,
            7,
            1 << 14,
            (1 << 15) - 1,
            1 << 20,
            u32::MAX - 1,
            UNKNOWN_VALUE,
        ];
        for len in 1..=METADATA_CAPACITY {
            for rotation in 0..ids.len() {
                let kvs = ids.iter().cycle().skip(rotation).take(len).copied();
                assert_eq!(
                    pack(kvs.clone(), len),
                    pack_any(kvs, len),
                    "{len} {rotation}"
                );
            }
        }
        let nine = ids.iter().chain(&[3]).copied();
        assert_eq!(pack(nine.clone(), 9), pack_any(nine, 9));
    }

    #[test]
    fn keys_differ_while_exact() {
        let sets: [&[u32]; 7] = [
            &[0],
            &[1],
            &[0, 1],
            &[1, 0],
            &[0, 0, 0],
            &[14, 14, 14, 14],
            &[0, 14],
        ];
        for a in sets {
            for b in sets {
                let (ka, kb) = (
                    pack(a.iter().copied(), a.len()),
                    pack(b.iter().copied(), b.len()),
                );
                assert_eq!(ka == kb, a == b, "{a:?} {b:?}");
            }
        }
        assert!(is_exact(4, (1 << 15) - 1));
        assert!(!is_exact(4, 1 << 15));
        assert!(is_exact(2, (1 << 30) - 1));
        assert!(is_exact(1, u32::MAX as usize));
        for len in 0..=2 * METADATA_CAPACITY {
            assert_eq!(lane(len), LANES / len.max(1) as u32, "{len}");
        }
        // An unknown value leaves its lane 0, which no interned id does while keys are exact.
        for len in 1..=METADATA_CAPACITY {
            let lane = lane(len);
            let mut ids = [0; METADATA_CAPACITY];
            for at in 0..len {
                ids[at] = UNKNOWN_VALUE;
                let key = pack(ids[..len].iter().copied(), len);
                assert_eq!(
                    key >> (lane * at as u32) & ((1 << lane) - 1),
                    0,
                    "{len} {at}"
                );
                ids[at] = 0;
            }
        }
    }
}
