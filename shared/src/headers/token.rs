//! RFC 9110 `token` syntax, the grammar of field names.

/// `tchar` = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|"
/// / "~" / DIGIT / ALPHA.
const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

/// Whether `b` may appear in a header name.
pub(crate) fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}
