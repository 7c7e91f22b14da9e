//! Per-request scratch memory: the header names pulled across from JS, the names to delete, the
//! decoded Privacy Pass token and the daemon request built from it all live in a workspace that
//! is scrubbed when the request ends, on every path out of it (the scope resets on drop).
//!
//! An isolate serves concurrent requests, interleaved at every `await`, so one workspace per
//! isolate would be held by several requests at once: each request takes one from the isolate's
//! free list instead and puts it back, scrubbed, when it is done. The list grows to the isolate's
//! peak concurrency and never allocates again after that.

use std::{
    cell::RefCell,
    ops::{Deref, DerefMut},
};

use edgewise::{ScrubMode, Workspace, WorkspaceConfig};
use worker::console_error;

/// Enough for a request's header names, a token and a redemption, with room to spare.
pub(crate) const WORKSPACE_SIZE: usize = 64 * 1024;

thread_local! {
    static FREE: RefCell<Vec<Workspace>> = const { RefCell::new(Vec::new()) };
}

/// A workspace on loan to one request.
pub(crate) struct Scratch {
    workspace: Option<Workspace>,
}

/// A workspace for this request, scrubbing in `mode`.
pub(crate) fn take(mode: ScrubMode) -> Scratch {
    let reused = FREE.with(|free| free.borrow_mut().pop());
    let mut workspace = reused.unwrap_or_else(|| {
        Workspace::with_config(WorkspaceConfig::new(WORKSPACE_SIZE).with_mode(mode))
    });
    workspace.set_mode(mode);
    Scratch {
        workspace: Some(workspace),
    }
}

impl Deref for Scratch {
    type Target = Workspace;

    fn deref(&self) -> &Workspace {
        self.workspace
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut Workspace {
        self.workspace
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let Some(workspace) = self.workspace.take() else {
            return;
        };
        if let Some(failure) = workspace.last_report().failure {
            console_error!(
                "edgewise: workspace verification found byte {} written above the watermark {}; \
                 the whole workspace was zeroed (a tracking bug: report it)",
                failure.offset,
                failure.watermark
            );
        }
        FREE.with(|free| free.borrow_mut().push(workspace));
    }
}
