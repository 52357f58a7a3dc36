//! Decisions about tool calls: [`Approval`] (one call's) and [`Decisions`] (a paused run's, by
//! call id). They sit beside the context, below the tools and the agent: an approval hook
//! gives one, a resumed invocation carries them, and a resumed call's [`ToolContext`] holds its
//! own (see [`ToolContext::decision`]).
//!
//! [`ToolContext`]: super::ToolContext
//! [`ToolContext::decision`]: super::ToolContext::decision

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What an `ApprovalHook` decides about one call, and
/// what a person decides about a paused one ([`Decisions`]).
///
/// In JSON (the server's resume API): `"approve"`, `{"deny": "reason"}`,
/// `{"rewrite": "{\"city\":\"Beijing\"}"}`, `{"defer": "reason"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Run the call as the model asked.
    Approve,
    /// Refuse the call. The model gets a [`Denied`](crate::ToolErrorKind::Denied) error that
    /// reads `the call to {tool} was denied: {reason}`, so it can explain or try another way.
    Deny(String),
    /// Run the call with these arguments instead (a JSON text), e.g. with a path confined to a
    /// sandbox or a limit lowered.
    Rewrite(String),
    /// Decide later: the call fails with a [`Deferred`](crate::ToolErrorKind::Deferred) error
    /// carrying the reason, so an agent's run pauses with the call
    /// pending, to be resumed with a decision in this process or another (see
    /// `SessionRunner::resume`). When the run resumes,
    /// the hook is asked again (about the rewritten arguments, if the decision rewrote them);
    /// where it defers again, the decision given applies, so other hooks' rules still hold.
    Defer(String),
}

impl Approval {
    /// Refuses the call for the given reason, written for the model.
    pub fn deny(reason: impl Into<String>) -> Self {
        Self::Deny(reason.into())
    }

    /// Runs the call with other arguments.
    pub fn rewrite(arguments: impl Into<String>) -> Self {
        Self::Rewrite(arguments.into())
    }

    /// Leaves the decision to someone outside the run, saying what is to be decided.
    pub fn defer(reason: impl Into<String>) -> Self {
        Self::Defer(reason.into())
    }
}

/// Decisions about the calls of a paused run, by call id: what
/// `SessionRunner::resume` applies.
///
/// [`Approval::Approve`] runs the call, [`Approval::Rewrite`] runs it with other arguments,
/// [`Approval::Deny`] gives the model a denial, [`Approval::Defer`] keeps it waiting. In JSON,
/// an object from call id to decision: `{"call_1": "approve", "call_2": {"deny": "too
/// expensive"}}`.
///
/// ```
/// use tinyagent::agent::Decisions;
///
/// let decisions = Decisions::new().approve("call_1").deny("call_2", "not today");
/// let json = serde_json::to_string(&decisions).unwrap();
/// assert_eq!(json, r#"{"call_1":"approve","call_2":{"deny":"not today"}}"#);
/// assert_eq!(serde_json::from_str::<Decisions>(&json).unwrap(), decisions);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Decisions(BTreeMap<String, Approval>);

impl Decisions {
    /// No decisions yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decides about call `call_id`, replacing an earlier decision about it.
    #[must_use]
    pub fn decide(mut self, call_id: impl Into<String>, decision: Approval) -> Self {
        self.0.insert(call_id.into(), decision);
        self
    }

    /// Approves call `call_id`.
    #[must_use]
    pub fn approve(self, call_id: impl Into<String>) -> Self {
        self.decide(call_id, Approval::Approve)
    }

    /// Denies call `call_id`, with a reason the model reads.
    #[must_use]
    pub fn deny(self, call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        self.decide(call_id, Approval::deny(reason))
    }

    /// The decision about call `call_id`, if any.
    pub fn get(&self, call_id: &str) -> Option<&Approval> {
        self.0.get(call_id)
    }

    /// The decisions, by call id.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Approval)> {
        self.0.iter().map(|(id, d)| (id.as_str(), d))
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<S: Into<String>> FromIterator<(S, Approval)> for Decisions {
    fn from_iter<I: IntoIterator<Item = (S, Approval)>>(iter: I) -> Self {
        Self(iter.into_iter().map(|(id, d)| (id.into(), d)).collect())
    }
}
