//! The `PrivateToken` HTTP authentication scheme (RFC 9577 section 2, RFC 9110 section 11).
//!
//! Lenient where RFC 9110 lets senders vary: scheme and parameter names in any case, parameters
//! in any order, quoted or bare values (bare ones may end in `=` padding, as token68 does),
//! optional whitespace around `=` and commas, empty list elements, other schemes and unknown
//! parameters beside ours. Strict where a lax reading could let two parties see different
//! tokens in one header: two `PrivateToken` credentials, a repeated `token` parameter, escapes
//! inside the token, or any syntax error anywhere in the value are refused.

use alloc::string::String;

use super::{IssuerKey, TokenChallenge, TokenError, b64};

const SCHEME: &[u8] = b"PrivateToken";

/// The `token` parameter of the single `PrivateToken` credential in an `Authorization` or
/// `Proxy-Authorization` value, still base64url-encoded.
pub(crate) fn token_param(value: &[u8]) -> Result<&[u8], TokenError> {
    let mut found = Found::default();
    walk(value, |item| found.take(item))?;
    match found {
        Found { schemes: 0, .. } => Err(TokenError::MissingCredential),
        Found { ours: false, .. } => Err(TokenError::NotPrivateToken),
        Found { token: None, .. } => {
            Err(malformed("PrivateToken credentials lack a token parameter"))
        }
        Found { token: Some(t), .. } => Ok(t),
    }
}

/// A `WWW-Authenticate` (or `Proxy-Authenticate`) challenge asking for a token bound to
/// `challenge`, from the issuer of `token_key` (omit it when clients know the key out of band),
/// acceptable for `max_age` seconds. Values are padded base64url, as RFC 9577 requires.
pub fn www_authenticate(
    challenge: &TokenChallenge<'_>,
    token_key: Option<&IssuerKey>,
    max_age: Option<u32>,
) -> String {
    let mut out = String::with_capacity(600);
    out.push_str("PrivateToken challenge=\"");
    b64::encode_into(&challenge.encode(), &mut out);
    out.push('"');
    if let Some(key) = token_key {
        out.push_str(", token-key=\"");
        b64::encode_into(key.spki(), &mut out);
        out.push('"');
    }
    if let Some(age) = max_age {
        use core::fmt::Write as _;
        // Writing to a String cannot fail.
        let _ = write!(out, ", max-age={age}");
    }
    out
}

/// What [`token_param`] has seen so far.
#[derive(Default)]
struct Found<'a> {
    schemes: usize,
    ours: bool,
    /// Whether the parameters being read belong to a `PrivateToken` credential.
    inside: bool,
    token: Option<&'a [u8]>,
}

impl<'a> Found<'a> {
    fn take(&mut self, item: Item<'a>) -> Result<(), TokenError> {
        match item {
            Item::Scheme(name) => {
                self.schemes += 1;
                self.inside = name.eq_ignore_ascii_case(SCHEME);
                if self.inside && core::mem::replace(&mut self.ours, true) {
                    return Err(malformed("more than one PrivateToken credential"));
                }
            }
            Item::Param(name, value) if self.inside && name.eq_ignore_ascii_case(b"token") => {
                if value.escaped {
                    return Err(malformed("escaped character in the token parameter"));
                }
                if self.token.replace(value.text).is_some() {
                    return Err(malformed("token parameter given twice"));
                }
            }
            Item::Token68(_) if self.inside => {
                return Err(malformed(
                    "PrivateToken takes token=\"...\", not a bare value",
                ));
            }
            Item::Param(..) | Item::Token68(_) => {}
        }
        Ok(())
    }
}

fn malformed(reason: &'static str) -> TokenError {
    TokenError::MalformedHeader(reason)
}

/// One syntactic piece of a credentials or challenge list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// An auth-scheme, starting a new credential or challenge.
    Scheme(&'a [u8]),
    /// An auth-param of the latest scheme.
    Param(&'a [u8], Value<'a>),
    /// A token68 right after a scheme (as in `Basic dXNlcg==`).
    Token68(&'a [u8]),
}

/// A parameter value: the text between the quotes of a quoted-string (escapes left in), or a
/// bare value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Value<'a> {
    pub(crate) text: &'a [u8],
    /// A quoted-string with at least one `\` escape.
    pub(crate) escaped: bool,
}

/// Walks a `#credentials` / `#challenge` list (RFC 9110 section 11.6), calling `f` on each
/// scheme, parameter and token68 in order.
pub(crate) fn walk<'a>(
    value: &'a [u8],
    mut f: impl FnMut(Item<'a>) -> Result<(), TokenError>,
) -> Result<(), TokenError> {
    let mut c = Cursor { s: value, at: 0 };
    let mut after_scheme = false;
    loop {
        c.skip_list_separators();
        if c.done() {
            return Ok(());
        }
        let name = c.word();
        if name.is_empty() {
            return Err(malformed("unexpected character"));
        }
        let spaced = c.skip_ws();
        if c.peek() == Some(b'=') {
            if !after_scheme {
                return Err(malformed("parameter before any authentication scheme"));
            }
            f(c.param(name)?)?;
        } else {
            if !all_in(name, TCHAR) {
                return Err(malformed("invalid authentication scheme name"));
            }
            f(Item::Scheme(name))?;
            after_scheme = true;
            if spaced && !c.at_separator() {
                f(c.first_after_scheme()?)?;
            }
        }
        c.end_element()?;
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.at).copied()
    }

    fn done(&self) -> bool {
        self.at >= self.s.len()
    }

    fn at_separator(&self) -> bool {
        matches!(self.peek(), None | Some(b','))
    }

    fn rest(&self) -> &'a [u8] {
        self.s.get(self.at..).unwrap_or_default()
    }

    /// Consumes the bytes of any of the `classes` and returns them: one pass over a slice,
    /// which matters for the ~470-byte token value.
    fn skip_class(&mut self, classes: u8) -> &'a [u8] {
        let rest = self.rest();
        let len = rest
            .iter()
            .position(|&b| class(b) & classes == 0)
            .unwrap_or(rest.len());
        self.at += len;
        rest.get(..len).unwrap_or_default()
    }

    fn skip_ws(&mut self) -> bool {
        !self.skip_class(WS).is_empty()
    }

    fn skip_list_separators(&mut self) {
        self.skip_class(WS | COMMA);
    }

    /// A token or the body of a token68: which one is decided by what follows.
    fn word(&mut self) -> &'a [u8] {
        self.skip_class(TCHAR | SLASH)
    }

    /// After a list element: optional whitespace, then a comma or the end.
    fn end_element(&mut self) -> Result<(), TokenError> {
        self.skip_ws();
        if self.at_separator() {
            Ok(())
        } else {
            Err(malformed("unexpected character after a list element"))
        }
    }

    /// `name BWS "=" BWS ( token / quoted-string )`, at the `=`.
    fn param(&mut self, name: &'a [u8]) -> Result<Item<'a>, TokenError> {
        if !all_in(name, TCHAR) {
            return Err(malformed("invalid parameter name"));
        }
        self.at += 1;
        self.skip_ws();
        Ok(Item::Param(name, self.value()?))
    }

    fn value(&mut self) -> Result<Value<'a>, TokenError> {
        if self.peek() == Some(b'"') {
            return self.quoted();
        }
        let text = self.skip_class(TCHAR | SLASH | EQUALS);
        if text.is_empty() {
            return Err(malformed("parameter without a value"));
        }
        Ok(Value {
            text,
            escaped: false,
        })
    }

    /// A quoted-string, at its opening quote.
    fn quoted(&mut self) -> Result<Value<'a>, TokenError> {
        self.at += 1;
        let start = self.at;
        let mut escaped = false;
        loop {
            self.skip_class(QDTEXT);
            match self.peek() {
                None => return Err(malformed("unterminated quoted string")),
                Some(b'"') => break,
                Some(b'\\') => {
                    escaped = true;
                    self.at += 1;
                    if self
                        .peek()
                        .is_none_or(|b| class(b) & (QDTEXT | QUOTABLE) == 0)
                    {
                        return Err(malformed("invalid escape in a quoted string"));
                    }
                    self.at += 1;
                }
                Some(_) => return Err(malformed("control character in a quoted string")),
            }
        }
        let text = self.s.get(start..self.at).unwrap_or_default();
        self.at += 1;
        Ok(Value { text, escaped })
    }

    /// What follows `scheme 1*SP`: a token68 (a word with optional `=` padding, then the end
    /// of the element) or the first auth-param.
    fn first_after_scheme(&mut self) -> Result<Item<'a>, TokenError> {
        let start = self.at;
        let word = self.word();
        let padded_end = {
            let mut probe = Cursor {
                s: self.s,
                at: self.at,
            };
            probe.skip_class(EQUALS);
            probe.skip_ws();
            probe.at_separator().then_some(probe.at)
        };
        if let Some(end) = padded_end {
            let token68 = self.s.get(start..end).unwrap_or_default().trim_ascii_end();
            self.at = end;
            if word.is_empty() || !all_in(word, TOKEN68) {
                return Err(malformed("invalid token68"));
            }
            return Ok(Item::Token68(token68));
        }
        self.skip_ws();
        if word.is_empty() || self.peek() != Some(b'=') {
            return Err(malformed(
                "unexpected character after an authentication scheme",
            ));
        }
        self.param(word)
    }
}

const TCHAR: u8 = 1;
/// RFC 9110 `token68` characters before the padding.
const TOKEN68: u8 = 2;
/// `qdtext`: what a quoted-string holds unescaped (HTAB, SP, VCHAR but `"` and `\`,
/// obs-text).
const QDTEXT: u8 = 4;
/// `"` and `\`, which a quoted-pair may escape beside `qdtext`.
const QUOTABLE: u8 = 8;
const WS: u8 = 16;
const COMMA: u8 = 32;
const SLASH: u8 = 64;
const EQUALS: u8 = 128;

/// Character classes of RFC 9110's authentication grammar, one bit each, so that every scan
/// is a table load per byte.
const CLASSES: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        let alnum = b.is_ascii_alphanumeric();
        let mut c = 0;
        if alnum
            || matches!(
                b,
                b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-'
            )
            || matches!(b, b'.' | b'^' | b'_' | b'`' | b'|' | b'~')
        {
            c |= TCHAR;
        }
        if alnum || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/') {
            c |= TOKEN68;
        }
        if matches!(b, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff) {
            c |= QDTEXT;
        }
        if matches!(b, b'"' | b'\\') {
            c |= QUOTABLE;
        }
        if matches!(b, b' ' | b'\t') {
            c |= WS;
        }
        if b == b',' {
            c |= COMMA;
        }
        if b == b'/' {
            c |= SLASH;
        }
        if b == b'=' {
            c |= EQUALS;
        }
        table[i] = c;
        i += 1;
    }
    table
};

#[inline(always)]
fn class(b: u8) -> u8 {
    CLASSES[usize::from(b)]
}

fn all_in(bytes: &[u8], classes: u8) -> bool {
    bytes.iter().all(|&b| class(b) & classes != 0)
}
