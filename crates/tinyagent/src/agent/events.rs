//! [`Event`]: what an agent run reports as it goes.

use std::time::Duration;

use crate::error::ToolErrorKind;
use crate::message::{Message, ToolCall, ToolResult};
use crate::model::{FinishReason, Usage};

/// One thing that happened in an agent run, in the order it happened.
///
/// A run with tool calls reports, per step: [`TextDelta`](Self::TextDelta)s while the model
/// writes, [`Usage`](Self::Usage) and [`Message`](Self::Message) when its reply is complete,
/// then for each tool call a [`ToolCallStarted`](Self::ToolCallStarted) and a
/// [`ToolCallFinished`](Self::ToolCallFinished) (calls running at once interleave; each
/// finishes in its own time). The last event of a successful run is
/// [`Finished`](Self::Finished).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A piece of the model's text, as it streams.
    TextDelta(String),
    /// The model's reply of the current step restarts: the provider lost the stream after
    /// some of it had been shown and asks again. The [`TextDelta`](Self::TextDelta)s of this
    /// step shown so far are void; the new reply follows.
    ReplyRestarted {
        /// Why, for people.
        reason: String,
    },
    /// Tokens used by one model step.
    Usage {
        /// The step, counted from 1.
        step: usize,
        /// Tokens used by this step.
        usage: Usage,
        /// Why the model stopped.
        finish_reason: FinishReason,
    },
    /// The model's complete reply of one step (its text and tool calls).
    Message(Message),
    /// A tool call is about to run (or to be refused: its result will say).
    ToolCallStarted {
        /// The call, as the model made it.
        call: ToolCall,
    },
    /// A tool call is over.
    ToolCallFinished {
        /// The result the model will read; `result.is_error` says whether the call failed.
        result: ToolResult,
        /// How long the call took.
        duration: Duration,
        /// The kind of failure, when it failed.
        error_kind: Option<ToolErrorKind>,
    },
    /// The run is over: the model answered without asking for tools.
    Finished {
        /// The text of the model's last reply.
        answer: String,
        /// Tokens used by the whole run.
        usage: Usage,
        /// How many model steps the run took.
        steps: usize,
    },
}
