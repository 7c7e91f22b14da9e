use super::*;

#[test]
fn histogram_quantiles_are_exact_below_2us_and_close_above() {
    let mut h = Histogram::default();
    assert!(h.quantile(0.5).is_nan());
    for v in 1..=1000u64 {
        h.record(v + 20, 20);
    }
    assert_eq!(h.quantile(0.5), 501.0);
    assert_eq!(h.quantile(0.99), 990.0);
    assert_eq!(h.quantile(1.0), 1000.0);
    let mut big = Histogram::default();
    for v in [
        3_000u64,
        50_000,
        1_000_000,
        9_500_000,
        u64::from(u32::MAX) * 4,
    ] {
        big.record(v, 0);
        let got = big.quantile(1.0);
        assert_eq!(got, v as f64, "max is exact");
        let mut one = Histogram::default();
        one.record(v, 0);
        let mid = {
            let mut two = one.clone();
            two.record(v, 0);
            two.quantile(0.5)
        };
        assert!((mid - v as f64).abs() / (v as f64) < 0.008, "{v}: {mid}");
    }
    let mut merged = h.clone();
    merged.merge(big);
    assert_eq!(merged.len(), 1005);
    assert_eq!(merged.quantile(1.0), (u64::from(u32::MAX) * 4) as f64);
}
