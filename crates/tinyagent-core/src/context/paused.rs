//! Runs that pause for a decision and resume later, in any process: [`PausedRun`] (what a
//! paused run keeps in its session), [`PendingCall`] and [`Decisions`].
//!
//! A tool call that fails with a [`Deferred`](crate::ToolErrorKind::Deferred) error (an
//! `ApprovalLayer` whose hook answers
//! `Approval::Defer`, or a tool that defers itself) does not go back to the model: the
//! step's other calls finish, the run writes a [`PausedRun`] into its session's state under
//! [`PAUSED_KEY`] and ends with `Event::Paused`. Resuming it with
//! [`Decisions`] (by call id) runs each waiting call as decided, recording in the session
//! before and after each one, so that a resume that is retried never runs a call twice; then
//! the loop goes on where it stopped.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::context::{Decisions, Invocation, Resume, Session};
use crate::error::ToolErrorKind;
use crate::message::{Message, ToolCall, ToolResult};
use crate::model::Usage;

/// The session state key under which a paused run is kept (a [`PausedRun`] as JSON).
pub const PAUSED_KEY: &str = "tinyagent.paused";

/// The session state key under which a run in flight keeps its journal (a [`PausedRun`] as
/// JSON, its calls [`Pending`](CallState::Pending), [`Running`](CallState::Running) or
/// [`Done`](CallState::Done)), so that the turn can be finished after its process died:
/// model answers already recorded are not asked again, finished calls not run again.
pub const JOURNAL_KEY: &str = "tinyagent.journal";

/// A tool call that waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingCall {
    /// The call, as the model made it (its id is what a decision names); in JSON, its fields
    /// `id`, `name`, `arguments` beside `reason`.
    #[serde(flatten)]
    pub call: ToolCall,
    /// What it waits for, for whoever decides (the [`Deferred`](crate::ToolErrorKind::Deferred)
    /// error's message).
    pub reason: String,
}

impl fmt::Display for PendingCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({}): {}",
            self.call.name, self.call.arguments, self.call.id, self.reason
        )
    }
}

/// Where one call of the paused step stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallState {
    /// It waits for a decision.
    Waiting {
        /// What it waits for.
        reason: String,
    },
    /// It was started and its result was not recorded: it may have run, so it is started
    /// again only when its tool is read-only or idempotent; otherwise its result says it may
    /// have run.
    Running,
    /// It was not started yet: it runs as any call does (its tool's middleware, approval
    /// included, decides).
    Pending,
    /// It ran (or was refused); the model will read this result.
    Done {
        /// The result.
        result: ToolResult,
    },
}

/// What a paused run keeps in its session's state, under [`PAUSED_KEY`]: the turn so far
/// (not yet in the session's messages, which keep only finished turns), where each call of
/// the paused step stands, and what the run had spent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PausedRun {
    /// The agent that paused.
    pub agent: String,
    /// The turn so far: the user's message, the steps before, and last the model's message
    /// whose calls are in [`calls`](Self::calls).
    pub turn: Vec<Message>,
    /// The calls of the last message, in its order, by id.
    pub calls: Vec<(String, CallState)>,
    /// Model steps taken.
    pub steps: usize,
    /// Tokens (and cost) used so far.
    pub usage: Usage,
}

impl PausedRun {
    /// The paused run kept in `session`, if any. A value that does not read as one is
    /// reported as an error message.
    pub fn from_session(session: &Session) -> Option<Result<Self, String>> {
        let value = session.get(PAUSED_KEY)?;
        Some(
            serde_json::from_value(value)
                .map_err(|err| format!("the paused run in the session is unreadable: {err}")),
        )
    }

    /// The model's message whose calls wait.
    pub fn message(&self) -> Option<&Message> {
        self.turn.last()
    }

    /// The calls that wait for a decision, in the model's order.
    pub fn pending(&self) -> Vec<PendingCall> {
        let Some(message) = self.message() else {
            return Vec::new();
        };
        self.calls
            .iter()
            .filter_map(|(id, state)| match state {
                CallState::Waiting { reason } => Some(PendingCall {
                    call: message.tool_calls().find(|c| &c.id == id)?.clone(),
                    reason: reason.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// A run paused at `step` after `usage`, its turn ending with the model's message whose
    /// calls gave `outcomes` (the deferred ones wait, with their message as the reason).
    #[doc(hidden)]
    pub fn new(
        agent: &str,
        turn: Vec<Message>,
        outcomes: Vec<(ToolResult, Option<ToolErrorKind>)>,
        steps: usize,
        usage: Usage,
    ) -> Self {
        let calls = outcomes
            .into_iter()
            .map(|(result, kind)| {
                let id = result.call_id.clone();
                let state = if kind == Some(ToolErrorKind::Deferred) {
                    CallState::Waiting {
                        reason: result.content,
                    }
                } else {
                    CallState::Done { result }
                };
                (id, state)
            })
            .collect();
        Self {
            agent: agent.to_owned(),
            turn,
            calls,
            steps,
            usage,
        }
    }

    /// Why `decisions` cannot resume this run (a waiting call without a decision, a decision
    /// about no call of the paused step), if they cannot. Decisions about calls that a
    /// resume already started or finished are ignored, so a retried resume may repeat them.
    #[doc(hidden)]
    pub fn check(&self, decisions: &Decisions) -> Result<(), String> {
        let ids: Vec<&str> = self.calls.iter().map(|(id, _)| id.as_str()).collect();
        if let Some((id, _)) = decisions.iter().find(|(id, _)| !ids.contains(id)) {
            return Err(format!(
                "the paused step has no call {id:?}; its calls are: {}",
                ids.join(", ")
            ));
        }
        let undecided: Vec<&str> = self
            .calls
            .iter()
            .filter(|(id, s)| matches!(s, CallState::Waiting { .. }) && decisions.get(id).is_none())
            .map(|(id, _)| id.as_str())
            .collect();
        if !undecided.is_empty() {
            return Err(format!(
                "every waiting call needs a decision; none was given for {}",
                undecided.join(", ")
            ));
        }
        Ok(())
    }

    /// Whether a call still waits.
    #[doc(hidden)]
    pub fn waits(&self) -> bool {
        self.calls
            .iter()
            .any(|(_, s)| matches!(s, CallState::Waiting { .. }))
    }

    /// Writes the run into `session`'s state.
    #[doc(hidden)]
    pub fn store_in(&self, session: &Session) {
        session.set(
            PAUSED_KEY,
            serde_json::to_value(self).expect("a paused run serializes"),
        );
    }

    /// The results of the paused step, in the model's order, once none waits; a call that was
    /// started and never recorded gets an error result saying it may have run.
    #[doc(hidden)]
    pub fn results(&self) -> Vec<ToolResult> {
        let names = |id: &str| {
            self.message()
                .and_then(|m| m.tool_calls().find(|c| c.id == id))
                .map_or_else(String::new, |c| c.name.clone())
        };
        self.calls
            .iter()
            .map(|(id, state)| match state {
                CallState::Done { result } => result.clone(),
                _ => interrupted(id, &names(id)),
            })
            .collect()
    }
}

/// The run `agent` paused in `session`, checked against `decisions`; why it cannot be
/// resumed otherwise.
#[doc(hidden)]
pub fn open(session: &Session, decisions: &Decisions, agent: &str) -> Result<PausedRun, String> {
    let paused = PausedRun::from_session(session)
        .ok_or("the session has no paused run (it finished, or never paused)")??;
    if paused.agent != agent {
        return Err(format!(
            "the session's run was paused by agent {:?}; resume it with that agent",
            paused.agent
        ));
    }
    if paused.message().is_none_or(|m| !m.has_tool_calls()) {
        return Err("the paused run in the session has no tool calls to resume".to_owned());
    }
    paused.check(decisions)?;
    Ok(paused)
}

/// The result of a call an earlier attempt at the run started but never recorded: it is not
/// run again.
#[doc(hidden)]
pub fn interrupted(call_id: &str, name: &str) -> ToolResult {
    ToolResult::error(
        call_id,
        name,
        "interrupted: this call was started by an earlier attempt at this run, which ended \
         before recording its result; it may have run, so it is not run again",
    )
}

impl Invocation {
    /// An invocation that resumes the run paused in `session` (see [`PausedRun`]) with
    /// `decisions` about its waiting calls; its message is the paused turn's user message.
    /// Running it on the agent that paused runs the decided calls and goes on where the run
    /// stopped. A session with no paused run, or decisions that do not match its waiting
    /// calls, make the run fail with `AgentError::Resume`.
    ///
    /// With a store, use `SessionRunner::resume`: it also
    /// records each call before and after it runs, so a retried resume never runs a call
    /// twice.
    pub fn resume(session: Session, decisions: Decisions) -> Self {
        let message = PausedRun::from_session(&session)
            .and_then(Result::ok)
            .and_then(|paused| paused.turn.into_iter().next())
            .unwrap_or_else(|| Message::user(""));
        Self::new(session, message).with_resume(Resume {
            decisions,
            checkpoint: None,
        })
    }
}
