//! Why a poll of a source failed: the reason is a metric label and decides whether the poll
//! is retried; the message is logged and shown on `/readyz`.

use std::time::Duration;

/// Why a poll failed; the label of `edgewise_features_source_errors_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reason {
    /// No answer in time, a refused connection, a server error.
    Unreachable,
    /// The store refused the credentials.
    Denied,
    /// The manifest or the object it names is not there.
    Missing,
    /// The download ended before the manifest's size.
    Truncated,
    /// The manifest or the snapshot is wrong in itself; not retried until the manifest changes.
    Refused,
    /// The local store failed to publish.
    Publish,
}

pub(super) const REASONS: [Reason; 6] = [
    Reason::Unreachable,
    Reason::Denied,
    Reason::Missing,
    Reason::Truncated,
    Reason::Refused,
    Reason::Publish,
];

impl Reason {
    pub(super) fn label(self) -> &'static str {
        match self {
            Reason::Unreachable => "unreachable",
            Reason::Denied => "denied",
            Reason::Missing => "missing",
            Reason::Truncated => "truncated",
            Reason::Refused => "refused",
            Reason::Publish => "publish",
        }
    }

    fn of(error: &object_store::Error) -> Reason {
        match error {
            object_store::Error::NotFound { .. } => Reason::Missing,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => Reason::Denied,
            _ => Reason::Unreachable,
        }
    }
}

/// A failed poll: why, and what to log.
#[derive(Debug)]
pub(super) struct Failure {
    pub(super) reason: Reason,
    pub(super) message: String,
}

impl Failure {
    pub(super) fn new(reason: Reason, message: impl std::fmt::Display) -> Failure {
        Failure {
            reason,
            message: message.to_string(),
        }
    }

    pub(super) fn store(what: &str, error: &object_store::Error) -> Failure {
        Failure::new(Reason::of(error), format!("{what}: {error}"))
    }

    pub(super) fn timeout(what: &str, limit: Duration) -> Failure {
        Failure::new(
            Reason::Unreachable,
            format!("{what}: no answer within {limit:?}"),
        )
    }
}
