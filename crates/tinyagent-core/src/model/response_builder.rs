//! [`ModelResponseBuilder`]: a [`ModelResponse`] assembled from a stream's events.

use super::{FinishReason, ModelEvent, ModelResponse, Usage};
use crate::message::{Message, Part};

/// Assembles a [`ModelResponse`] from streamed pieces: what a streaming provider uses to build
/// the [`ModelEvent::Done`] that ends its stream.
///
/// Text deltas are concatenated; tool calls keep the order in which they started, and each
/// call's argument fragments are concatenated in arrival order. Without an explicit finish
/// reason, the response's is [`FinishReason::ToolCalls`] when there are tool calls and
/// [`FinishReason::Stop`] otherwise.
///
/// ```
/// use tinyagent::{Usage, model::{FinishReason, ModelEvent, ModelResponseBuilder}};
///
/// let mut b = ModelResponseBuilder::new();
/// for event in [
///     ModelEvent::TextDelta("Let me ".into()),
///     ModelEvent::TextDelta("check.".into()),
///     ModelEvent::ToolCallStart { id: "c1".into(), name: "get_weather".into() },
///     ModelEvent::ToolCallDelta { id: "c1".into(), arguments_fragment: r#"{"city":"#.into() },
///     ModelEvent::ToolCallDelta { id: "c1".into(), arguments_fragment: r#""Beijing"}"#.into() },
/// ] {
///     b.push(&event);
/// }
/// b.set_usage(Usage::new(120, 15));
/// let resp = b.build();
/// assert_eq!(resp.message.text(), "Let me check.");
/// let call = resp.message.tool_calls().next().unwrap();
/// assert_eq!(call.arguments, r#"{"city":"Beijing"}"#);
/// assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ModelResponseBuilder {
    text: String,
    calls: Vec<crate::message::ToolCall>,
    usage: Usage,
    finish_reason: Option<FinishReason>,
}

impl ModelResponseBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one streamed event; a [`ModelEvent::Done`] is ignored, a
    /// [`ModelEvent::Restart`] discards the text and tool calls taken in so far.
    pub fn push(&mut self, event: &ModelEvent) {
        match event {
            ModelEvent::Restart { .. } => {
                self.text.clear();
                self.calls.clear();
            }
            ModelEvent::TextDelta(text) => self.push_text(text),
            ModelEvent::ToolCallStart { id, name } => self.start_tool_call(id, name),
            ModelEvent::ToolCallDelta {
                id,
                arguments_fragment,
            } => self.push_arguments(id, arguments_fragment),
            ModelEvent::Done(_) => {}
        }
    }

    /// Appends text.
    pub fn push_text(&mut self, text: &str) {
        self.text.push_str(text);
    }

    /// Starts a tool call. A second start of the same id is ignored; a start without an id
    /// (some compatible servers send none) always starts a new call.
    pub fn start_tool_call(&mut self, id: &str, name: &str) {
        if id.is_empty() || !self.calls.iter().any(|c| c.id == id) {
            self.calls
                .push(crate::message::ToolCall::new(id, name, String::new()));
        }
    }

    /// Appends a fragment to a call's arguments. A fragment without an id belongs to the
    /// latest call; a fragment for a call that has not started starts one without a name.
    pub fn push_arguments(&mut self, id: &str, fragment: &str) {
        let call = if id.is_empty() {
            self.calls.last_mut()
        } else {
            self.calls.iter_mut().rev().find(|c| c.id == id)
        };
        match call {
            Some(call) => call.arguments.push_str(fragment),
            None => self
                .calls
                .push(crate::message::ToolCall::new(id, "", fragment)),
        }
    }

    /// Sets the usage.
    pub fn set_usage(&mut self, usage: Usage) {
        self.usage = usage;
    }

    /// Sets the finish reason.
    pub fn set_finish_reason(&mut self, finish_reason: FinishReason) {
        self.finish_reason = Some(finish_reason);
    }

    /// The response: an assistant message of the text (if any) followed by the tool calls.
    pub fn build(self) -> ModelResponse {
        let mut parts = Vec::with_capacity(1 + self.calls.len());
        if !self.text.is_empty() {
            parts.push(Part::text(self.text));
        }
        let has_calls = !self.calls.is_empty();
        parts.extend(self.calls.into_iter().map(Part::ToolCall));
        let finish_reason = self.finish_reason.unwrap_or(if has_calls {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        });
        ModelResponse::new(
            Message::new(crate::message::Role::Assistant, parts),
            self.usage,
            finish_reason,
        )
    }
}
