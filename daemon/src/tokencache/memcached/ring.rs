//! Which servers hold a spend record: rendezvous (highest random weight) hashing. Each server
//! scores every key; the R best win. Adding or removing a server moves only the keys it wins or
//! won, and with a handful of servers scoring them all is cheaper than walking a ring.

/// A server's hashing identity, derived from its configured address so that every daemon
/// configured with the same list agrees on placement.
pub(crate) fn seed(addr: &str) -> u64 {
    // FNV-1a: stable across builds and platforms, unlike std's randomly keyed hasher.
    addr.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Indexes of the `replicas` servers (of `seeds`) that own `key`, best first.
pub(crate) fn owners(seeds: &[u64], key: &[u8; 32], replicas: usize) -> Vec<usize> {
    // Spend keys are SHA-256 output: any 8 bytes are uniform.
    let mut word = [0; 8];
    word.copy_from_slice(&key[..8]);
    let key = u64::from_le_bytes(word);
    let mut scored: Vec<(u64, usize)> = seeds
        .iter()
        .enumerate()
        .map(|(i, &seed)| (mix(seed ^ key), i))
        .collect();
    scored.sort_unstable_by(|a, b| b.cmp(a));
    scored.into_iter().take(replicas).map(|(_, i)| i).collect()
}

/// splitmix64's finalizer: a bijection that spreads every input bit over the output.
fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests;
