//! The base64 flavours of RFC 9577.
//!
//! RFC 9577 says base64url with padding, but clients in the wild drop the padding; both decode
//! to the same bytes, so accepting either costs nothing. Non-zero trailing bits are refused, so
//! each byte string has at most two spellings. Operator-supplied keys may also come in the
//! standard alphabet, as openssl prints them.

use alloc::{string::String, vec::Vec};

use base64::{
    Engine,
    alphabet::{STANDARD, URL_SAFE},
    engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig},
};

const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_encode_padding(true)
    .with_decode_padding_mode(DecodePaddingMode::Indifferent);

/// base64url, padded on output, padding optional on input.
const URL: GeneralPurpose = GeneralPurpose::new(&URL_SAFE, CONFIG);

/// The standard alphabet, for configuration only.
const STD: GeneralPurpose = GeneralPurpose::new(&STANDARD, CONFIG);

/// Appends padded base64url to `out`.
pub(crate) fn encode_into(bytes: &[u8], out: &mut String) {
    URL.encode_string(bytes, out);
}

/// The exact decoded length of `text`, or `None` if no base64 string has its length.
pub(crate) fn decoded_len(text: &[u8]) -> Option<usize> {
    let data = text
        .strip_suffix(b"==")
        .or_else(|| text.strip_suffix(b"="))
        .unwrap_or(text);
    match data.len() % 4 {
        1 => None,
        rest => Some(data.len() / 4 * 3 + rest.saturating_sub(1)),
    }
}

/// Decodes base64url into `out`, which must be exactly the decoded length.
pub(crate) fn decode_url_exact(text: &[u8], out: &mut [u8]) -> Option<()> {
    let written = URL.decode_slice(text, out).ok()?;
    (written == out.len()).then_some(())
}

/// Decodes base64url or standard base64, whichever alphabet `text` is in.
pub(crate) fn decode_any(text: &[u8]) -> Option<Vec<u8>> {
    let standard = text.iter().any(|&b| b == b'+' || b == b'/');
    let engine = if standard { &STD } else { &URL };
    engine.decode(text).ok()
}
