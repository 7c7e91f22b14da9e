//! Secrets held in memory. Their `Debug` output never shows them, so a struct holding one can
//! derive `Debug` and still be logged, or printed by a panic, without leaking it.

use core::fmt;

/// A secret value; `{:?}` prints `<redacted>`. [`Secret::expose`] reads it where it is used.
#[derive(Clone)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Secret<T> {
        Secret(value)
    }

    /// The secret itself: call it where the value is sent or compared, nowhere else.
    pub fn expose(&self) -> &T {
        &self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::{format, string::String};

    #[test]
    fn debug_output_never_shows_the_value() {
        #[derive(Debug)]
        #[allow(dead_code)]
        struct Client {
            url: &'static str,
            authorization: Secret<String>,
        }
        let client = Client {
            url: "https://daemon.example",
            authorization: Secret::new("Bearer hunter2-hunter2-hunter2".into()),
        };
        for shown in [format!("{client:?}"), format!("{client:#?}")] {
            assert!(!shown.contains("hunter2"), "{shown}");
            assert!(shown.contains("<redacted>") && shown.contains("daemon.example"));
        }
        assert_eq!(
            client.authorization.expose(),
            "Bearer hunter2-hunter2-hunter2"
        );
    }
}
