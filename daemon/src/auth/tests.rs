use super::*;

const SECRET: &str = "0123456789abcdef-secret";

#[test]
fn only_the_exact_bearer_secret_passes() {
    let auth = Auth::new(Some(SECRET)).unwrap();
    assert!(auth.allows(Some(format!("Bearer {SECRET}").as_bytes())));
    assert!(auth.allows(Some(format!("bearer  {SECRET} ").as_bytes())));
    for bad in [
        String::new(),
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        format!("Basic {SECRET}"),
        format!("Bearer {SECRET}x"),
        format!("Bearer {}", &SECRET[..SECRET.len() - 1]),
        format!("Bearer {}", SECRET.to_uppercase()),
    ] {
        assert!(!auth.allows(Some(bad.as_bytes())), "{bad:?}");
    }
    assert!(!auth.allows(None));
}

#[test]
fn without_a_secret_nothing_passes() {
    let auth = Auth::new(None).unwrap();
    assert!(!auth.allows(Some(b"Bearer anything-at-all-here")));
}

#[test]
fn short_secrets_are_rejected() {
    assert!(Auth::new(Some("short")).is_err());
    assert!(Auth::new(Some("   padded-short  ")).is_err());
}

#[test]
fn comparison_handles_every_length() {
    assert!(constant_time_eq(b"", b""));
    assert!(!constant_time_eq(b"a", b""));
    assert!(!constant_time_eq(b"", b"a"));
    assert!(!constant_time_eq(b"\xff", b"\x00"));
    assert!(constant_time_eq(b"abc", b"abc"));
}

#[test]
fn debug_output_never_shows_the_secret() {
    let auth = Auth::new(Some(SECRET)).unwrap();
    let shown = format!("{auth:?}");
    assert!(
        !shown.contains(SECRET) && shown.contains("redacted"),
        "{shown}"
    );
}
