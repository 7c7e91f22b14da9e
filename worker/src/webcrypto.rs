//! Token signatures checked by the runtime's WebCrypto (`crypto.subtle.verify`, RSA-PSS,
//! SHA-384), which runs native code where the shared Rust verifier would run as Wasm.
//!
//! Each issuer key is imported once per isolate, on its first use. A token's salt is 48 bytes
//! (RSABSSA-SHA384-PSS) or empty (PSSZERO), and WebCrypto takes the salt length as a
//! parameter: the length that last verified under a key is tried first, the other only if it
//! fails, so a client population that uses one mode pays one verification per token, and a
//! forged token two.

use edgewise::IssuerKey;
use wasm_bindgen::{JsValue, prelude::wasm_bindgen};
use worker::{js_sys::Promise, wasm_bindgen_futures::JsFuture};

use crate::failure::js_error;

#[wasm_bindgen(inline_js = r#"
const IMPORT = { name: "RSA-PSS", hash: "SHA-384" };
export function pss_key(spki) {
  return { spki: spki.slice(), key: null, pending: null, salts: [48, 0] };
}
function imported(k) {
  // A failed import is tried again by the next token.
  k.pending ??= crypto.subtle.importKey("spki", k.spki, IMPORT, false, ["verify"])
    .then((key) => (k.key = key))
    .finally(() => { k.pending = null; });
  return k.pending;
}
async function verify(k, key, sig, msg) {
  for (const [i, saltLength] of k.salts.entries()) {
    if (await crypto.subtle.verify({ name: "RSA-PSS", saltLength }, key, sig, msg)) {
      if (i !== 0) k.salts.reverse();
      return true;
    }
  }
  return false;
}
export function pss_verify(k, signature, message) {
  // Copies: the views point into Wasm memory, which may grow (detaching them) during an await.
  const sig = signature.slice(), msg = message.slice();
  return k.key !== null
    ? verify(k, k.key, sig, msg)
    : imported(k).then((key) => verify(k, key, sig, msg));
}
"#)]
extern "C" {
    /// A JS handle to `spki` (rsaEncryption DER), imported on its first use.
    fn pss_key(spki: &[u8]) -> JsValue;
    /// Resolves to whether `signature` is a PSS signature (salt 48 or empty) of `message`
    /// under the key; rejects if the key cannot be imported.
    fn pss_verify(key: &JsValue, signature: &[u8], message: &[u8]) -> Promise;
}

/// Issuer keys as WebCrypto holds them, in the order of the verifier's.
#[derive(Debug, Default)]
pub(crate) struct Keys {
    keys: Vec<([u8; 32], JsValue)>,
}

impl Keys {
    pub(crate) fn new<'k>(keys: impl IntoIterator<Item = &'k IssuerKey>) -> Keys {
        Keys {
            keys: keys
                .into_iter()
                .map(|key| (*key.id(), pss_key(key.rsa_spki())))
                .collect(),
        }
    }

    /// Whether `signature` is `key`'s RSASSA-PSS signature of `message`; `Err` if WebCrypto
    /// cannot tell (the key is unknown here or cannot be imported).
    pub(crate) async fn verify(
        &self,
        key: &IssuerKey,
        message: &[u8],
        signature: &[u8],
    ) -> Result<bool, String> {
        let handle = self
            .keys
            .iter()
            .find(|(id, _)| id == key.id())
            .map(|(_, handle)| handle)
            .ok_or("issuer key not imported")?;
        let verdict = JsFuture::from(pss_verify(handle, signature, message))
            .await
            .map_err(|e| format!("WebCrypto: {}", js_error(&e)))?;
        Ok(verdict.as_bool() == Some(true))
    }
}
