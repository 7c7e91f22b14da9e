//! Internal header stripping across the JS boundary.
//!
//! Each `Headers` call from Wasm and each string copy costs more than a lookup, so the names
//! cross once, as one newline-joined string built on the JS side; the decision is made in Rust;
//! and only when something matched does a second call delete the matches. A request without
//! internal headers (nearly all of them) costs one crossing, and none when stripping is off.

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
    fn header_names(headers: &web_sys::Headers) -> String;
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

/// The names among `headers` that `set` matches, newline-joined; `None` if there are none.
fn matches(set: &HeaderSet, headers: &web_sys::Headers) -> Option<String> {
    if set.is_empty() {
        return None;
    }
    let mut crossing = Crossing {
        names: header_names(headers),
        delete: String::new(),
    };
    (set.strip(&mut crossing) > 0).then_some(crossing.delete)
}

/// Deletes internal headers from a mutable `Headers` (the copy made for the upstream request).
pub(crate) fn request(set: &HeaderSet, headers: &web_sys::Headers) {
    if let Some(names) = matches(set, headers) {
        delete_headers(headers, &names);
    }
}

/// The origin's response without internal headers; the same response if it has none.
pub(crate) fn response(set: &HeaderSet, response: worker::Response) -> worker::Response {
    let inner = web_sys::Response::from(response);
    match matches(set, &inner.headers()) {
        Some(names) => strip_response(&inner, &names).into(),
        None => inner.into(),
    }
}
