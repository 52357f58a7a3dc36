//! The bottom layer: what every call may read. [`ToolContext`] is handed to every tool call;
//! [`Invocation`] is one run of an agent; [`Session`] is the conversation and its state.
//!
//! This module knows nothing of tools or agents; they all read it. What a run carries in its
//! invocation is typed here or below: the [`Budget`](crate::Budget) it draws from, its
//! `RunOptions`, the `Decisions` a
//! resumed run applies; a resumed call's `Approval` rides
//! in its [`ToolContext`]. Extensions are for the application's own values.

mod changes;
#[doc(hidden)]
pub mod decision;
mod host;
mod host_calls;
mod invocation;
mod memory_store;
#[doc(hidden)]
pub mod paused;
mod resume;
mod session;
mod store;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

pub use changes::Changes;
#[doc(hidden)]
pub use decision::{Approval, Decisions};
#[doc(hidden)]
pub use host::unsupported as unsupported_request;
pub use host::{
    Elicitation, ElicitationRequest, LogLevel, SamplingMessage, SamplingReply, SamplingRequest,
    ToolHost,
};
pub use invocation::Invocation;
pub use memory_store::{Cursor, MemoryStore, SessionLocks, from_micros, micros};
pub use paused::{CallState, JOURNAL_KEY, PAUSED_KEY, PausedRun, PendingCall};
#[doc(hidden)]
pub use resume::{Checkpoint, JournalWriter, Resume};
pub use session::{Session, State};
pub use store::{
    DEFAULT_LIST_LIMIT, ListOptions, MAX_SESSION_ID_LEN, SessionInfo, SessionLock, SessionPage,
    SessionStore, StoreError, StoredSession, check_session_id,
};

/// Per-call context handed to every tool: the call id, the invocation it runs in (and its
/// session), the host it runs under, the decision a resumed call carries, and typed extensions
/// for anything of the application's.
///
/// Cheap to clone: everything inside is reference counted.
///
/// ```
/// use tinyagent::ToolContext;
///
/// #[derive(Debug, PartialEq)]
/// struct UserId(u64);
///
/// let ctx = ToolContext::default().with_call_id("call_1").with_extension(UserId(7));
/// assert_eq!(ctx.call_id(), Some("call_1"));
/// assert_eq!(ctx.extension::<UserId>(), Some(&UserId(7)));
/// ```
#[derive(Clone, Default)]
pub struct ToolContext {
    call_id: Option<Arc<str>>,
    invocation: Option<Arc<Invocation>>,
    host: Option<host::Host>,
    /// The decision taken outside the run about this call (see [`ToolContext::decision`]).
    decision: Option<Arc<Approval>>,
    /// The application's values, by type.
    extensions: Option<Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
    /// The caller already runs this call inside its `execute_tool` span.
    in_tool_span: bool,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("invocation", &self.invocation.as_ref().map(|i| i.id()))
            .field("host", &self.host.is_some())
            .field("decision", &self.decision)
            .field(
                "extensions",
                &self.extensions.as_ref().map_or(0, |e| e.len()),
            )
            .finish()
    }
}

impl ToolContext {
    /// An empty context (the same as `Default`).
    pub fn new() -> Self {
        Self::default()
    }

    /// The id the model gave this call, when the call came from a model.
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// Returns the context with the call id set.
    #[must_use]
    pub fn with_call_id(mut self, call_id: impl Into<Arc<str>>) -> Self {
        self.call_id = Some(call_id.into());
        self
    }

    /// Marks the call as running inside an `execute_tool` span that the caller opened (agents
    /// do), so that logging middleware records into that span instead of nesting another.
    #[doc(hidden)]
    pub fn in_tool_span(mut self) -> Self {
        self.in_tool_span = true;
        self
    }

    /// Whether the caller opened the call's `execute_tool` span.
    #[doc(hidden)]
    pub fn is_in_tool_span(&self) -> bool {
        self.in_tool_span
    }

    /// Returns the context with a typed value attached, replacing any value of the same type.
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        let mut map = self
            .extensions
            .take()
            .map(Arc::unwrap_or_clone)
            .unwrap_or_default();
        map.insert(TypeId::of::<T>(), Arc::new(value));
        self.extensions = Some(Arc::new(map));
        self
    }

    /// The attached value of type `T`, if any.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions
            .as_ref()?
            .get(&TypeId::of::<T>())?
            .downcast_ref::<T>()
    }

    /// Returns the context with the invocation attached (agents do this for every call).
    #[must_use]
    pub fn with_invocation(mut self, invocation: Invocation) -> Self {
        self.invocation = Some(Arc::new(invocation));
        self
    }

    /// The agent invocation this call runs in, when an agent made the call.
    ///
    /// ```
    /// use tinyagent::{Invocation, Session, ToolContext};
    ///
    /// let session = Session::new();
    /// session.set("role", "admin");
    /// let ctx = ToolContext::new().with_invocation(Invocation::new(session, "hi"));
    /// assert_eq!(ctx.invocation().unwrap().message().text(), "hi");
    /// assert_eq!(ctx.session().unwrap().get_str("role").as_deref(), Some("admin"));
    /// assert!(ToolContext::new().session().is_none());
    /// ```
    pub fn invocation(&self) -> Option<&Invocation> {
        self.invocation.as_deref()
    }

    /// The session of the invocation this call runs in: its state map is where tools keep
    /// what outlives one call.
    pub fn session(&self) -> Option<&Session> {
        self.invocation().map(Invocation::session)
    }

    /// Returns the context carrying the decision taken outside the run about this call (a
    /// resumed run does this for each call it runs as decided).
    #[must_use]
    #[doc(hidden)]
    pub fn with_decision(mut self, decision: Approval) -> Self {
        self.decision = Some(Arc::new(decision));
        self
    }

    /// The decision taken outside the run about this call, when it is the resumption of a
    /// call that was [deferred](crate::ToolErrorKind::Deferred): a tool that deferred itself
    /// reads it here; an `ApprovalLayer` whose hook
    /// defers again applies it.
    pub fn decision(&self) -> Option<&Approval> {
        self.decision.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_are_typed_and_replaceable() {
        let ctx = ToolContext::new().with_extension(1u32).with_extension("a");
        assert_eq!(ctx.extension::<u32>(), Some(&1));
        assert_eq!(ctx.extension::<&str>(), Some(&"a"));
        let ctx2 = ctx.clone().with_extension(2u32);
        assert_eq!(ctx2.extension::<u32>(), Some(&2));
        assert_eq!(ctx.extension::<u32>(), Some(&1), "clones are independent");
        assert_eq!(ctx.extension::<i64>(), None);
    }

    #[test]
    fn the_runs_values_are_fields_not_extensions() {
        let ctx = ToolContext::new()
            .with_invocation(Invocation::new(Session::new(), "hi"))
            .with_decision(Approval::deny("no"));
        assert_eq!(
            ctx.invocation().map(|i| i.message().text()).as_deref(),
            Some("hi")
        );
        assert_eq!(ctx.decision(), Some(&Approval::deny("no")));
        // The extensions are the application's alone: what the agent attaches is not there.
        assert!(ctx.extension::<Invocation>().is_none());
        assert!(ctx.extension::<Approval>().is_none());
        let ctx = ctx.with_extension(Approval::Approve);
        assert_eq!(ctx.extension::<Approval>(), Some(&Approval::Approve));
        assert_eq!(ctx.decision(), Some(&Approval::deny("no")));
    }
}
