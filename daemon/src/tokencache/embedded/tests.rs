use super::*;

#[test]
fn second_spend_is_refused_until_expiry() {
    let store = Embedded::new(100);
    let key = [7; 32];
    assert_eq!(store.spend(&key, 1000, 2000), Ok(Decision::Fresh));
    assert_eq!(store.spend(&key, 1500, 2000), Ok(Decision::Spent));
    // Past its key's expiry a token is worthless anyway; the record may go.
    assert_eq!(store.spend(&key, 2000, 3000), Ok(Decision::Fresh));
}

#[test]
fn full_store_fails_closed_instead_of_forgetting() {
    let store = Embedded::new(SHARDS);
    let mut first = None;
    for i in 0..=255u8 {
        let mut key = [0; 32];
        key[0] = i % SHARDS as u8;
        key[1] = i;
        match store.spend(&key, 10, 100) {
            Ok(Decision::Fresh) => {
                first.get_or_insert(key);
            }
            Err(Fault::Server(why)) => assert!(why.contains("full")),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(store.records(), SHARDS);
    // The records it kept still refuse a second spend.
    assert_eq!(store.spend(&first.unwrap(), 20, 100), Ok(Decision::Spent));
    // Once they expire there is room again.
    let mut late = [0; 32];
    late[1] = 1;
    assert_eq!(store.spend(&late, 200, 300), Ok(Decision::Fresh));
}
