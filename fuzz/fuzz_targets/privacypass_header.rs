//! Authorization header parsing and token decoding on arbitrary bytes: never panics, and a
//! token that decodes re-encodes (base64url, in a fresh header) to the very same bytes.
#![no_main]

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE;
use edgewise::{TOKEN_SCRATCH_LEN, Token, spend_key, spend_key_from_fields};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    let _ = Token::decode(data, &mut scratch);
    let mut scratch = [0u8; TOKEN_SCRATCH_LEN];
    let Ok(token) = Token::from_authorization(data, &mut scratch) else {
        return;
    };
    assert_eq!(token.as_bytes().len(), TOKEN_SCRATCH_LEN);
    assert_eq!(
        spend_key(&token),
        spend_key_from_fields(token.token_type(), token.token_key_id(), token.nonce())
    );
    let header = format!(
        "PrivateToken token=\"{}\"",
        URL_SAFE.encode(token.as_bytes())
    );
    let mut again = [0u8; TOKEN_SCRATCH_LEN];
    let decoded =
        Token::from_authorization(header.as_bytes(), &mut again).expect("re-encoded token");
    assert_eq!(decoded.as_bytes(), token.as_bytes());
});
