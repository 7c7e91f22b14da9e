use super::*;

fn key(i: u32) -> [u8; 32] {
    let mut key = [0; 32];
    // Spread the index like a hash would.
    key[..8].copy_from_slice(&mix(u64::from(i)).to_le_bytes());
    key
}

fn seeds(n: usize) -> Vec<u64> {
    (0..n).map(|i| seed(&format!("10.0.0.{i}:11211"))).collect()
}

#[test]
fn owners_are_distinct_and_stable() {
    let seeds = seeds(5);
    for i in 0..1000 {
        let owners = owners(&seeds, &key(i), 3);
        assert_eq!(owners.len(), 3);
        let mut sorted = owners.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 3);
        assert_eq!(owners, super::owners(&seeds, &key(i), 3));
    }
    assert_eq!(owners(&seeds, &key(1), 9).len(), 5);
}

#[test]
fn load_spreads_evenly() {
    let seeds = seeds(4);
    let mut load = [0u32; 4];
    for i in 0..40_000 {
        load[owners(&seeds, &key(i), 1)[0]] += 1;
    }
    for n in load {
        assert!((9_000..11_000).contains(&n), "{load:?}");
    }
}

#[test]
fn removing_a_server_moves_only_its_keys() {
    let all = seeds(5);
    let fewer: Vec<u64> = all[..4].to_vec();
    for i in 0..10_000 {
        let before = owners(&all, &key(i), 1)[0];
        let after = owners(&fewer, &key(i), 1)[0];
        if before != 4 {
            assert_eq!(before, after, "key {i} moved though its server stayed");
        }
    }
}
