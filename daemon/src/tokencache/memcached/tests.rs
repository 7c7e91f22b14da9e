use super::*;

fn tally(votes: &[Result<Verdict, Fault>]) -> Result<Decision, Fault> {
    let mut tally = Tally::default();
    for vote in votes {
        tally.add(vote.clone());
    }
    tally.decide(votes.len() / 2 + 1)
}

const S: Result<Verdict, Fault> = Ok(Verdict::Stored);
const E: Result<Verdict, Fault> = Ok(Verdict::Exists);
const F: Result<Verdict, Fault> = Err(Fault::Timeout);

#[test]
fn single_server_votes_map_directly() {
    assert_eq!(tally(&[S]), Ok(Decision::Fresh));
    assert_eq!(tally(&[E]), Ok(Decision::Spent));
    assert_eq!(tally(&[F]), Err(Fault::Timeout));
}

#[test]
fn replicated_spend_needs_a_majority_of_stored() {
    assert_eq!(tally(&[S, S, F]), Ok(Decision::Fresh));
    assert_eq!(tally(&[S, F, F]), Err(Fault::Timeout));
    // A restarted, empty server says "stored" for a spent token: outvoted.
    assert_eq!(tally(&[E, E, S]), Ok(Decision::Spent));
    // A split between two concurrent redemptions: neither wins.
    assert_eq!(tally(&[S, E]), Ok(Decision::Spent));
    assert_eq!(tally(&[S, E, F]), Ok(Decision::Spent));
}

#[test]
fn two_concurrent_redemptions_never_both_win() {
    // Each server stores the record for exactly one of A and B; enumerate every assignment.
    for servers in 1..=5usize {
        for mask in 0u32..(1 << servers) {
            let votes_a: Vec<_> = (0..servers)
                .map(|i| if mask & (1 << i) != 0 { S } else { E })
                .collect();
            let votes_b: Vec<_> = (0..servers)
                .map(|i| if mask & (1 << i) != 0 { E } else { S })
                .collect();
            let a = tally(&votes_a) == Ok(Decision::Fresh);
            let b = tally(&votes_b) == Ok(Decision::Fresh);
            assert!(!(a && b), "{servers} servers, mask {mask:b}");
        }
    }
}
