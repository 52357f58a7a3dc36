//! What a streaming model yields: [`ModelEvent`].

use super::ModelResponse;
use crate::message::Part;

/// What a streaming model yields, shaped after server-sent-event deltas.
///
/// A stream yields any number of [`TextDelta`](Self::TextDelta)s, and for each tool call a
/// [`ToolCallStart`](Self::ToolCallStart) followed by [`ToolCallDelta`](Self::ToolCallDelta)s
/// carrying fragments of its JSON arguments (deltas of different calls may interleave; `id`
/// says which call a fragment belongs to). It **must end with exactly one**
/// [`Done`](Self::Done) carrying the complete, assembled response: the agent acts on `Done`
/// alone and treats the other events as progress to show. A stream that ends without `Done`
/// is an [`ModelErrorKind::InvalidResponse`](super::ModelErrorKind::InvalidResponse) error.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ModelEvent {
    /// A piece of the assistant's text.
    TextDelta(String),
    /// A tool call begins.
    ToolCallStart {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A piece of a tool call's JSON arguments.
    ToolCallDelta {
        /// The call's id, as given in its [`ToolCallStart`](Self::ToolCallStart).
        id: String,
        /// The next fragment of the arguments text.
        arguments_fragment: String,
    },
    /// The reply streamed so far is void and starts again: the provider lost it (a stream
    /// cut by the network, an error event from the server) and is retrying the request.
    /// Consumers discard the text and tool-call pieces received before this event; the
    /// events that follow are the new reply, ending with [`Done`](Self::Done) as usual.
    Restart {
        /// Why the reply restarts, for people (`"the stream was cut after 12 chunks"`).
        reason: String,
    },
    /// The step is over; the complete response.
    Done(ModelResponse),
}

impl ModelResponse {
    /// The events a streaming provider would have sent for this response: the text as one
    /// [`ModelEvent::TextDelta`], each tool call as a [`ModelEvent::ToolCallStart`] and one
    /// [`ModelEvent::ToolCallDelta`] with all its arguments, then [`ModelEvent::Done`].
    pub fn into_events(self) -> Vec<ModelEvent> {
        let mut events = Vec::with_capacity(2 + 2 * self.message.parts.len());
        let text = self.message.text();
        if !text.is_empty() {
            events.push(ModelEvent::TextDelta(text));
        }
        for part in &self.message.parts {
            if let Part::ToolCall(call) = part {
                events.push(ModelEvent::ToolCallStart {
                    id: call.id.clone(),
                    name: call.name.clone(),
                });
                events.push(ModelEvent::ToolCallDelta {
                    id: call.id.clone(),
                    arguments_fragment: call.arguments.clone(),
                });
            }
        }
        events.push(ModelEvent::Done(self));
        events
    }
}
