//! Strings from JS written straight into the request's workspace.
//!
//! A `String` that wasm-bindgen makes of a JS string lives on the Wasm heap and is freed, not
//! wiped: the next allocation in the isolate, another client's request, may hold its bytes.
//! Written by `TextEncoder.encodeInto` into workspace memory instead, a string is scrubbed with
//! the workspace when the request ends, and costs no allocation.

use edgewise::Arena;
use wasm_bindgen::prelude::wasm_bindgen;

#[wasm_bindgen(inline_js = r#"
const encoder = new TextEncoder();
function into(text, buf) {
  if (text.length > buf.length) return -text.length;
  const { read, written } = encoder.encodeInto(text, buf);
  // A UTF-16 code unit takes at most three bytes of UTF-8.
  return read === text.length ? written : -text.length * 3;
}
export function header_names(headers) {
  let names = "";
  for (const name of headers.keys()) names += name + "\n";
  return names;
}
export function header_names_into(headers, buf) {
  return into(header_names(headers), buf);
}
export function header_value_into(headers, name, buf) {
  const value = headers.get(name);
  return value === null ? undefined : into(value, buf);
}
"#)]
extern "C" {
    /// All header names, newline-joined: one crossing for all of them.
    pub(crate) fn header_names(headers: &web_sys::Headers) -> String;
    /// The same, written into `buf` (a view of Wasm memory): the length, or minus the room
    /// needed if `buf` is too small.
    fn header_names_into(headers: &web_sys::Headers, buf: &mut [u8]) -> i32;
    /// Header `name`'s value (several joined by `, `, as `Headers.get` joins them) written as
    /// [`header_names_into`] writes the names; `None` if the header is absent.
    fn header_value_into(headers: &web_sys::Headers, name: &str, buf: &mut [u8]) -> Option<i32>;
}

/// Room first offered: typical requests' header names, or an `Authorization` value with a
/// Privacy Pass token, need a few hundred bytes.
const ROOM: usize = 1024;

/// All header names of `headers`, newline-joined, in the workspace.
pub(crate) fn header_names_in<'w>(
    headers: &web_sys::Headers,
    arena: &mut Arena<'w>,
) -> Result<&'w str, &'static str> {
    into_arena(arena, &NAMES, |buf| header_names_into(headers, buf))
}

/// Header `name`'s value in the workspace, `Ok(None)` if the header is absent.
pub(crate) fn header_value_in<'w>(
    headers: &web_sys::Headers,
    name: &str,
    arena: &mut Arena<'w>,
) -> Result<Option<&'w str>, &'static str> {
    let mut present = true;
    let value = into_arena(arena, &VALUE, |buf| {
        header_value_into(headers, name, buf).unwrap_or_else(|| {
            present = false;
            0
        })
    })?;
    Ok(present.then_some(value))
}

/// Why a string is not in the workspace, named for the log: the callers' errors say which
/// request or response the string came from, not which string it was.
struct Refusals {
    too_large: &'static str,
    not_utf8: &'static str,
}

const NAMES: Refusals = Refusals {
    too_large: "header names larger than the workspace",
    not_utf8: "header names not UTF-8",
};

/// The token's caller reports these as a malformed `Authorization` header.
const VALUE: Refusals = Refusals {
    too_large: "larger than the workspace",
    not_utf8: "not UTF-8",
};

/// What `write` writes into workspace memory: it returns the bytes written, or minus the room
/// it needs, and is offered that room once more (if the workspace has it).
fn into_arena<'w>(
    arena: &mut Arena<'w>,
    refusals: &Refusals,
    mut write: impl FnMut(&mut [u8]) -> i32,
) -> Result<&'w str, &'static str> {
    let mut room = ROOM;
    loop {
        let mut writer = arena.writer();
        let written = write(writer.spare(room));
        if let Ok(len) = usize::try_from(written) {
            writer.advance(len).map_err(|_| "workspace full")?;
            let text = writer.commit().ok_or("workspace full")?;
            return std::str::from_utf8(text).map_err(|_| refusals.not_utf8);
        }
        let needed = written.unsigned_abs() as usize;
        if needed <= room || needed > writer.remaining() {
            return Err(refusals.too_large);
        }
        room = needed;
    }
}
