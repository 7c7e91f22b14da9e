//! Internal header stripping across the JS boundary.
//!
//! Each `Headers` call from Wasm and each string copy costs more than a lookup, so the names
//! cross once, as one newline-joined string built on the JS side; the decision is made in Rust;
//! and only when something matched does a second call delete the matches. A request without
//! internal headers (nearly all of them) costs one crossing, and none when stripping is off.
//!
//! Measured in workerd (`scripts/bench-strip.sh`, 22 headers): enumerating the `Headers` and
//! crossing costs ~15 us, the glue and the Rust decision ~3.5 us, copying a `Headers` ~7 us. So
//! the request's headers are never copied by us (the runtime copies them into the outbound
//! request anyway), and matches are deleted from that copy.

use edgewise::{HeaderNames, HeaderSet};
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(inline_js = r#"
export function header_names(headers) {
  let names = "";
  for (const name of headers.keys()) names += name + "\n";
  return names;
}
export function delete_headers(headers, names) {
  for (const name of names.split("\n")) if (name) headers.delete(name);
}
export function strip_response(response, names) {
  // Headers of a fetched response are immutable: copy them into a new Response.
  const copy = new Response(response.body, response);
  delete_headers(copy.headers, names);
  return copy;
}
"#)]
extern "C" {
    /// All header names, newline-joined: the one crossing from JS.
    pub(crate) fn header_names(headers: &web_sys::Headers) -> String;
    fn delete_headers(headers: &web_sys::Headers, names: &str);
    fn strip_response(response: &web_sys::Response, names: &str) -> web_sys::Response;
}

/// Header names as they crossed from JS, and the names to delete on the way back.
struct Crossing {
    names: String,
    delete: String,
}

impl HeaderNames for Crossing {
    fn each_name(&self, f: &mut dyn FnMut(&[u8])) {
        self.names
            .split('\n')
            .filter(|n| !n.is_empty())
            .for_each(|n| f(n.as_bytes()));
    }

    fn remove_all(&mut self, name: &[u8]) {
        // Names are slices of a String cut at '\n', so always UTF-8.
        if let Ok(name) = std::str::from_utf8(name) {
            self.delete.push_str(name);
            self.delete.push('\n');
        }
    }
}

/// Names of internal headers found in a request or response, newline-joined.
#[derive(Debug)]
pub(crate) struct Matches(String);

/// The names among `headers` that `set` matches; `None` if there are none (or the set is
/// empty, which skips the crossing altogether).
pub(crate) fn matches(set: &HeaderSet, headers: &web_sys::Headers) -> Option<Matches> {
    if set.is_empty() {
        return None;
    }
    let mut crossing = Crossing {
        names: header_names(headers),
        delete: String::new(),
    };
    (set.strip(&mut crossing) > 0).then_some(Matches(crossing.delete))
}

impl Matches {
    /// Deletes the matched names from a mutable `Headers`.
    pub(crate) fn delete_from(&self, headers: &web_sys::Headers) {
        delete_headers(headers, &self.0);
    }
}

/// The origin's response without internal headers; the same response if it has none.
pub(crate) fn response(set: &HeaderSet, response: worker::Response) -> worker::Response {
    let inner = web_sys::Response::from(response);
    match matches(set, &inner.headers()) {
        Some(Matches(names)) => strip_response(&inner, &names).into(),
        None => inner.into(),
    }
}
