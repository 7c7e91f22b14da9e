//! Internal header stripping across the JS boundary.
//!
//! Each `Headers` call from Wasm and each string copy costs more than a lookup, so the names
//! cross once, as one newline-joined string built on the JS side; the decision is made in Rust;
//! and only when something matched does a second call delete the matches. A request without
//! internal headers (nearly all of them) costs one crossing, and none when stripping is off.
//!
//! Measured in workerd (`scripts/bench-strip.sh`, 22 headers, 2026-11-25): enumerating the
//! `Headers` and crossing costs ~8 us, the glue and the Rust decision ~1 us, copying a `Headers`
//! ~4.5 us. So the request's headers are never copied by us (the runtime copies them into the
//! outbound request anyway), and matches are deleted from that copy.

use edgewise::{Arena, ArenaWriter, HeaderNames, HeaderSet};
use wasm_bindgen::prelude::wasm_bindgen;

use crate::crossing;

#[wasm_bindgen(inline_js = r#"
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
    fn delete_headers(headers: &web_sys::Headers, names: &str);
    fn strip_response(response: &web_sys::Response, names: &str) -> web_sys::Response;
}

/// Header names as they crossed from JS, and the names to delete on the way back.
struct Crossing<'a, 'w> {
    names: &'w str,
    delete: ArenaWriter<'a, 'w>,
}

impl HeaderNames for Crossing<'_, '_> {
    fn each_name(&self, f: &mut dyn FnMut(&[u8])) {
        self.names
            .split('\n')
            .filter(|n| !n.is_empty())
            .for_each(|n| f(n.as_bytes()));
    }

    fn remove_all(&mut self, name: &[u8]) {
        // A name that does not fit poisons the writer; `commit` then reports it.
        let _ = self.delete.push(name);
        let _ = self.delete.push_byte(b'\n');
    }
}

/// Names of internal headers found in a request or response, newline-joined, in the request's
/// workspace.
#[derive(Debug)]
pub(crate) struct Matches<'w>(&'w str);

/// The names among `headers` that `set` matches; `None` if there are none (or the set is
/// empty, which skips the crossing altogether). `Err` if the workspace is exhausted.
pub(crate) fn matches<'w>(
    set: &HeaderSet,
    headers: &web_sys::Headers,
    arena: &mut Arena<'w>,
) -> Result<Option<Matches<'w>>, &'static str> {
    if set.is_empty() {
        return Ok(None);
    }
    let names = crossing::header_names_in(headers, arena)?;
    let mut crossing = Crossing {
        names,
        delete: arena.writer(),
    };
    if set.strip(&mut crossing) == 0 {
        return Ok(None);
    }
    let delete = crossing.delete.commit().ok_or("workspace full")?;
    // Built from slices of `names` and newlines: UTF-8.
    let delete = std::str::from_utf8(delete).map_err(|_| "header names not UTF-8")?;
    Ok(Some(Matches(delete)))
}

impl Matches<'_> {
    /// Deletes the matched names from a mutable `Headers`.
    pub(crate) fn delete_from(&self, headers: &web_sys::Headers) {
        delete_headers(headers, self.0);
    }
}

/// The origin's response without internal headers; the same response if it has none.
pub(crate) fn response(
    set: &HeaderSet,
    response: web_sys::Response,
    arena: &mut Arena<'_>,
) -> Result<web_sys::Response, &'static str> {
    Ok(match matches(set, &response.headers(), arena)? {
        Some(Matches(names)) => strip_response(&response, names),
        None => response,
    })
}
