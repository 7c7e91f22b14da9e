//! TokenChallenge decoding on arbitrary bytes: never panics, and whatever decodes encodes back
//! to the same bytes (one encoding per challenge, hence one digest). Challenges built from
//! arbitrary fields round-trip too, and the WWW-Authenticate builder takes them all.
#![no_main]

use edgewise::{TokenChallenge, www_authenticate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(challenge) = TokenChallenge::decode(data) {
        assert_eq!(challenge.encode(), data);
        let header = www_authenticate(&challenge, None, Some(60));
        assert!(header.starts_with("PrivateToken challenge=\""));
    }
    // Fields from the input: type, then issuer name and origin info split at the first 0xff;
    // a redemption context when the input's length is odd.
    let Some((head, rest)) = data.split_first_chunk::<2>() else {
        return;
    };
    let (issuer, origin) = match rest.iter().position(|&b| b == 0xff) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let context = [0x5a; 32];
    let context = (data.len() % 2 == 1).then_some(&context);
    let Ok(built) = TokenChallenge::new(u16::from_be_bytes(*head), issuer, context, origin) else {
        assert!(issuer.is_empty() || issuer.len() > 65535 || origin.len() > 65535);
        return;
    };
    let encoded = built.encode();
    let decoded = TokenChallenge::decode(&encoded).expect("built challenge decodes");
    assert_eq!(decoded, built);
    assert_eq!(decoded.digest(), built.digest());
});
