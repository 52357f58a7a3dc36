//! A run's journal: what the run did so far, from its events, in the form a paused run is
//! kept in ([`PausedRun`]), so that a run whose process died can be finished from it (see
//! [`SessionRunner`](super::SessionRunner) and [`JOURNAL_KEY`]).

use std::sync::{Arc, Mutex, PoisonError};

use super::Event;
use super::pause::{CallState, JOURNAL_KEY, PausedRun};
use crate::context::{JournalWriter, Session, StoreError};
use crate::error::ToolErrorKind;
use crate::message::{Message, Role};
use crate::model::Usage;

/// A run's journal as it goes.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    run: PausedRun,
}

/// What a journal says is left to do.
pub(crate) enum Left {
    /// The model has not answered the user's message yet: ask it.
    Ask(Message),
    /// The last step's calls are to finish (the journal as a paused run to resume).
    Calls(PausedRun),
    /// The model answered: the turn is to be stored as it is.
    Store(Vec<Message>),
}

/// A run's journal kept where its session is: each entry is written before the run goes on
/// (a call starts only once the journal says it starts). A write that fails is kept, for the
/// run to end with it.
#[derive(Clone)]
pub(crate) struct Recorder(Arc<Recording>);

struct Recording {
    journal: tokio::sync::Mutex<Journal>,
    write: JournalWriter,
    failed: Mutex<Option<StoreError>>,
}

impl Recorder {
    /// A recorder of `journal`, written through `write`.
    pub(crate) fn new(write: JournalWriter, journal: Journal) -> Self {
        Self(Arc::new(Recording {
            journal: tokio::sync::Mutex::new(journal),
            write,
            failed: Mutex::new(None),
        }))
    }

    /// Writes the journal as it is.
    pub(crate) async fn write(&self) -> Result<(), StoreError> {
        let journal = self.0.journal.lock().await;
        if self.write_locked(&journal).await {
            Ok(())
        } else {
            Err(self.take_failure().unwrap_or_else(lost))
        }
    }

    /// Takes in `event`, and writes the journal when the event changed it; whether the journal
    /// holds (a failed write is kept, see [`take_failure`](Self::take_failure)). Writes are
    /// made in the order of the events (calls running side by side wait for each other's).
    pub(crate) async fn record(&self, event: &Event) -> bool {
        let mut journal = self.0.journal.lock().await;
        if !journal.see(event) {
            return !self.failed();
        }
        self.write_locked(&journal).await
    }

    /// Writes `journal`, unless a write failed before; whether it is written.
    async fn write_locked(&self, journal: &Journal) -> bool {
        if self.failed() {
            return false;
        }
        match (self.0.write)(journal.to_value()).await {
            Ok(()) => true,
            Err(err) => {
                *self.0.failed.lock().unwrap_or_else(PoisonError::into_inner) = Some(err);
                false
            }
        }
    }

    fn failed(&self) -> bool {
        self.0
            .failed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }

    /// The write that failed, if one did (taken: reported once; later writes are not made).
    pub(crate) fn take_failure(&self) -> Option<StoreError> {
        let mut failed = self.0.failed.lock().unwrap_or_else(PoisonError::into_inner);
        match failed.as_ref() {
            Some(StoreError::Backend {
                store: "journal", ..
            })
            | None => None,
            Some(_) => failed.replace(lost()),
        }
    }
}

/// The error of a failed write already reported.
fn lost() -> StoreError {
    StoreError::backend("journal", "the run's journal could not be written")
}

impl Journal {
    /// The journal of `agent`'s run on the user's `message`.
    pub(crate) fn new(agent: &str, message: Message) -> Self {
        Self {
            run: PausedRun::new(agent, vec![message], Vec::new(), 0, Usage::default()),
        }
    }

    /// The journal of a run that goes on from `paused`.
    pub(crate) fn resuming(paused: PausedRun) -> Self {
        Self { run: paused }
    }

    /// The journal kept in `session`, if any; a value that does not read as one is reported
    /// as an error message.
    pub(crate) fn from_session(session: &Session) -> Option<Result<Self, String>> {
        let value = session.get(JOURNAL_KEY)?;
        Some(
            serde_json::from_value(value)
                .map(|run| Self { run })
                .map_err(|err| format!("the run's journal in the session is unreadable: {err}")),
        )
    }

    /// The journal as JSON, for the session's state.
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(&self.run).unwrap_or_default()
    }

    /// The agent whose run it is.
    pub(crate) fn agent(&self) -> &str {
        &self.run.agent
    }

    /// Takes in `event`; whether the journal changed in a way worth keeping (a model message,
    /// a call started or finished).
    pub(crate) fn see(&mut self, event: &Event) -> bool {
        match event {
            Event::Usage { step, usage, .. } => {
                self.run.steps = self.run.steps.max(*step);
                self.run.usage += *usage;
                false
            }
            Event::Message(message) if message.role == Role::Assistant => {
                self.close_step();
                self.run.turn.push(message.clone());
                self.run.calls = message
                    .tool_calls()
                    .map(|c| (c.id.clone(), CallState::Pending))
                    .collect();
                true
            }
            Event::ToolCallStarted { call } => self.set(&call.id, CallState::Running),
            Event::ToolCallFinished {
                result, error_kind, ..
            } => {
                let state = if *error_kind == Some(ToolErrorKind::Deferred) {
                    CallState::Waiting {
                        reason: result.content.clone(),
                    }
                } else {
                    CallState::Done {
                        result: result.clone(),
                    }
                };
                self.set(&result.call_id, state)
            }
            _ => false,
        }
    }

    /// What is left to do to finish the run.
    pub(crate) fn left(mut self) -> Left {
        match self.run.turn.last() {
            Some(last) if last.role == Role::Assistant && last.has_tool_calls() => {
                Left::Calls(self.run)
            }
            Some(last) if last.role == Role::Assistant => Left::Store(self.run.turn),
            _ => Left::Ask(
                self.run
                    .turn
                    .drain(..)
                    .next()
                    .unwrap_or_else(|| Message::user("")),
            ),
        }
    }

    /// Sets the state of call `id` of the last step; whether it is one of its calls.
    fn set(&mut self, id: &str, state: CallState) -> bool {
        match self.run.calls.iter_mut().find(|(c, _)| c == id) {
            Some(entry) => {
                entry.1 = state;
                true
            }
            None => false,
        }
    }

    /// Adds the results of the last step's calls after its message, before the next one.
    fn close_step(&mut self) {
        if self.run.calls.is_empty() {
            return;
        }
        let results = self.run.results();
        self.run.turn.push(Message::from_tool_results(results));
        self.run.calls.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::message::{Part, ToolCall, ToolResult};
    use crate::model::FinishReason;

    fn step(calls: &[(&str, &str)]) -> Message {
        Message::new(
            Role::Assistant,
            calls
                .iter()
                .map(|(id, name)| Part::ToolCall(ToolCall::new(*id, *name, "{}")))
                .collect(),
        )
    }

    fn finished(id: &str, name: &str, content: &str) -> Event {
        Event::ToolCallFinished {
            result: ToolResult::ok(id, name, content),
            duration: Duration::ZERO,
            error_kind: None,
        }
    }

    #[test]
    fn a_journal_follows_the_steps_and_calls_of_a_run() {
        let mut journal = Journal::new("a", Message::user("hi"));
        assert!(matches!(journal.clone().left(), Left::Ask(m) if m.text() == "hi"));
        assert!(!journal.see(&Event::Usage {
            step: 1,
            usage: Usage::new(10, 2),
            finish_reason: FinishReason::ToolCalls,
        }));
        assert!(journal.see(&Event::Message(step(&[("c1", "t"), ("c2", "t")]))));
        assert!(journal.see(&Event::ToolCallStarted {
            call: ToolCall::new("c1", "t", "{}"),
        }));
        assert!(journal.see(&finished("c1", "t", "one")));
        assert!(journal.see(&Event::ToolCallStarted {
            call: ToolCall::new("c2", "t", "{}"),
        }));
        // Not a call of the step: nothing to keep.
        assert!(!journal.see(&finished("c9", "t", "nine")));
        let Left::Calls(paused) = journal.clone().left() else {
            panic!("calls are left");
        };
        assert_eq!(paused.steps, 1);
        assert_eq!(paused.usage.input_tokens, Some(10));
        assert_eq!(paused.turn.len(), 2);
        assert!(matches!(paused.calls[0].1, CallState::Done { .. }));
        assert_eq!(paused.calls[1].1, CallState::Running);
        // The next step closes this one with its results; the answer ends the turn.
        assert!(journal.see(&finished("c2", "t", "two")));
        assert!(journal.see(&Event::Message(Message::assistant("done"))));
        let Left::Store(turn) = journal.clone().left() else {
            panic!("the turn is to be stored");
        };
        assert_eq!(turn.len(), 4);
        let results: Vec<_> = turn[2].tool_results().map(|r| r.content.clone()).collect();
        assert_eq!(results, ["one", "two"]);
        // It reads back from a session's state.
        let session = Session::new();
        session.set(JOURNAL_KEY, journal.to_value());
        let read = Journal::from_session(&session).unwrap().unwrap();
        assert_eq!(read.run, journal.run);
        session.set(JOURNAL_KEY, serde_json::json!({"turn": 3}));
        assert!(Journal::from_session(&session).unwrap().is_err());
    }
}
