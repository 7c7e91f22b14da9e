use alloc::vec::Vec;

use proptest::prelude::*;

use super::*;

proptest! {
    /// The fast path's picks are the general pick's, draw for draw, for every set it takes:
    /// all members live and healthy, weights even but for random and for round robin once its
    /// sums are made.
    #[test]
    fn clean_picks_are_the_general_picks(
        n in 1u32..40,
        actives in prop::collection::vec(0u16..4, 40),
        weight in 1u32..5,
        uneven in any::<bool>(),
        all in any::<bool>(),
        policy in prop::sample::select(&[
            LbPolicy::RoundRobin,
            LbPolicy::Weighted,
            LbPolicy::Random,
            LbPolicy::LeastRequest,
        ][..]),
        entropy in any::<u64>(),
    ) {
        let slots: Vec<Slot> = (0..n)
            .map(|s| {
                // Uneven for round robin's weighted turns: one host heavier.
                let heavy = uneven && s == n / 2 && n > 1;
                let mut slot = Slot::new(weight + u32::from(heavy), true);
                slot.active = actives[s as usize];
                slot
            })
            .collect();
        // Members in an order of their own, so a member's index is not its slot.
        let make = || match all {
            true => {
                let mut set = PickSet::all();
                (0..n).for_each(|s| set.add(s, &slots));
                set
            }
            false => PickSet::new(Members::owned((0..n).rev().collect()), false, &slots, &[]),
        };
        let (mut fast, mut general) = (make(), make());
        let child = Child { policy, panic_threshold: 50 };
        // Over uneven weights only random and round robin (its sums made) take the fast path.
        let uneven = uneven && n > 1;
        let declines = uneven && matches!(policy, LbPolicy::Weighted | LbPolicy::LeastRequest);
        if uneven && policy == LbPolicy::RoundRobin {
            let (a, b) = (&mut Rng(entropy), &mut Rng(entropy));
            prop_assert_eq!(fast.pick_clean(&slots, &[], policy, a), None);
            prop_assert_eq!(
                fast.pick_general(&slots, &[], child, a, None),
                general.pick_general(&slots, &[], child, b, None)
            );
        }
        for k in 0..2 * u64::from(n) {
            let seed = entropy.wrapping_add(k);
            let picked = fast.pick_clean(&slots, &[], policy, &mut Rng(seed));
            if declines {
                prop_assert_eq!(picked, None, "{:?} took uneven weights", policy);
                continue;
            }
            prop_assert!(picked.is_some(), "{policy:?} declined a clean set");
            let model = general.pick_general(&slots, &[], child, &mut Rng(seed), None);
            prop_assert_eq!(picked, model.map(|p| p.slot), "{:?} pick {}", policy, k);
        }
    }
}
