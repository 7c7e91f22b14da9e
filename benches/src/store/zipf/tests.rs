use super::*;

/// Draw frequencies match `1 / (k * H_n)` for the top ranks and every index stays below `n`.
#[test]
fn frequencies_follow_one_over_rank() {
    for n in [1u64, 2, 10, 1000, 1_000_000] {
        let zipf = Zipf::new(n);
        let mut probes = Probes::new(7);
        let draws = 400_000;
        let mut top = [0u64; 4];
        for _ in 0..draws {
            let i = zipf.sample(&mut probes);
            assert!(i < n, "index {i} out of 0..{n}");
            if let Some(count) = top.get_mut(i as usize) {
                *count += 1;
            }
        }
        let harmonic: f64 = (1..=n).map(|k| 1.0 / k as f64).sum();
        for (rank, &count) in top.iter().enumerate().take(n as usize) {
            let expected = 1.0 / ((rank + 1) as f64 * harmonic);
            let seen = count as f64 / f64::from(draws);
            assert!(
                (seen - expected).abs() < 0.005,
                "n {n}, index {rank}: {seen:.4} drawn, {expected:.4} expected"
            );
        }
    }
}
