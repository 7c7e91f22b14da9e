use super::*;

#[test]
fn strides_are_coprime_and_near_the_golden_fraction() {
    for total in 1..2000u64 {
        let s = stride(total);
        assert!(s >= 1 && (s < total || total <= 2), "{total}: {s}");
        assert_eq!(gcd(s, total.max(1)), 1, "{total}: {s}");
        let fraction = s as f64 / total as f64;
        if total > 100 {
            assert!((0.6..0.7).contains(&fraction), "{total}: {s}");
        }
    }
}

/// A cycle of `total` turns takes each member exactly as often as its weight, from any
/// starting point.
#[test]
fn a_cycle_of_turns_takes_each_member_by_its_weight() {
    let members = [
        (true, true, 3),
        (true, false, 9),
        (true, true, 1),
        (true, true, 6),
    ];
    for start in 0..10 {
        let mut w = Weights::default();
        let total = w.fill(members.into_iter(), |t| start % t).unwrap();
        assert_eq!(total, 10);
        assert_eq!((w.min, w.max), (1, 9));
        let mut counts = [0; 4];
        for _ in 0..total * 3 {
            counts[w.turn(total) as usize] += 1;
        }
        assert_eq!(counts, [9, 0, 3, 18]);
    }
}

#[test]
fn nothing_eligible_has_no_total() {
    let mut w = Weights::uniform(4);
    assert!(w.even());
    assert_eq!(
        w.fill([(true, false, 4), (false, false, 2)].into_iter(), |_| 0),
        None
    );
    // Only live members bound the weights.
    assert_eq!((w.min, w.max), (4, 4));
    w.count(5);
    assert!(!w.even());
}
