//! [`Resume`]: what an invocation that resumes a paused run carries.

use std::fmt;
use std::sync::Arc;

use super::Session;
use super::decision::Decisions;
use super::store::StoreError;
use crate::util::BoxFuture;

/// Writes the session as it is now where it is kept (a
/// [`SessionRunner`](crate::agent::SessionRunner) commits it to its store), so that a resume's
/// record of the calls it runs outlives the process.
#[doc(hidden)]
pub type Checkpoint =
    Arc<dyn Fn(Session) -> BoxFuture<'static, Result<(), StoreError>> + Send + Sync>;

/// Writes a run's journal (a `PausedRun` as JSON, see `JOURNAL_KEY`) where its session is
/// kept (a `SessionRunner` commits it to its store), before what it records goes on.
#[doc(hidden)]
pub type JournalWriter =
    Arc<dyn Fn(serde_json::Value) -> BoxFuture<'static, Result<(), StoreError>> + Send + Sync>;

/// What an invocation that resumes a paused run carries: the decisions about its waiting calls,
/// and where a resume records its progress (when a store keeps the session).
#[derive(Clone)]
#[doc(hidden)]
pub struct Resume {
    pub(crate) decisions: Decisions,
    pub(crate) checkpoint: Option<Checkpoint>,
}

impl fmt::Debug for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resume")
            .field("decisions", &self.decisions)
            .field("checkpoint", &self.checkpoint.is_some())
            .finish()
    }
}
