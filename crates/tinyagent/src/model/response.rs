//! What a model answers: [`ModelResponse`], its [`Usage`] and [`FinishReason`], and the
//! [`ModelResponseBuilder`] that assembles one from streamed pieces.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use super::ModelEvent;
use crate::message::{Message, Part};

/// Tokens used, as the provider reports them (zero when it does not).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the prompt (instruction, history, tool definitions).
    pub input_tokens: u64,
    /// Tokens the model produced.
    pub output_tokens: u64,
}

impl Usage {
    /// A usage.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
        }
    }

    /// Input plus output tokens.
    pub const fn total_tokens(&self) -> u64 {
        self.input_tokens.saturating_add(self.output_tokens)
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens.saturating_add(rhs.input_tokens),
            output_tokens: self.output_tokens.saturating_add(rhs.output_tokens),
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// Why the model stopped producing output in a step.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// It finished its answer.
    Stop,
    /// It asked for tool calls.
    ToolCalls,
    /// It hit the token limit.
    Length,
    /// A content filter stopped it.
    ContentFilter,
    /// Something else, as the provider named it.
    Other(String),
}

/// A model's answer to one request: the assistant message (text and/or tool calls), token
/// usage and why it stopped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelResponse {
    /// The assistant message; its tool calls, if any, are what the agent runs next.
    pub message: Message,
    /// Tokens used by this step.
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
}

impl ModelResponse {
    /// A response.
    pub fn new(message: Message, usage: Usage, finish_reason: FinishReason) -> Self {
        Self {
            message,
            usage,
            finish_reason,
        }
    }

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

/// Assembles a [`ModelResponse`] from streamed pieces: what a streaming provider uses to build
/// the [`ModelEvent::Done`] that ends its stream.
///
/// Text deltas are concatenated; tool calls keep the order in which they started, and each
/// call's argument fragments are concatenated in arrival order. Without an explicit finish
/// reason, the response's is [`FinishReason::ToolCalls`] when there are tool calls and
/// [`FinishReason::Stop`] otherwise.
///
/// ```
/// use tinyagent::{FinishReason, ModelEvent, ModelResponseBuilder, Usage};
///
/// let mut b = ModelResponseBuilder::new();
/// for event in [
///     ModelEvent::TextDelta("让我".into()),
///     ModelEvent::TextDelta("查一下。".into()),
///     ModelEvent::ToolCallStart { id: "c1".into(), name: "get_weather".into() },
///     ModelEvent::ToolCallDelta { id: "c1".into(), arguments_fragment: r#"{"city":"#.into() },
///     ModelEvent::ToolCallDelta { id: "c1".into(), arguments_fragment: r#""北京"}"#.into() },
/// ] {
///     b.push(&event);
/// }
/// b.set_usage(Usage::new(120, 15));
/// let resp = b.build();
/// assert_eq!(resp.message.text(), "让我查一下。");
/// let call = resp.message.tool_calls().next().unwrap();
/// assert_eq!(call.arguments, r#"{"city":"北京"}"#);
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

    /// Takes in one streamed event; a [`ModelEvent::Done`] is ignored.
    pub fn push(&mut self, event: &ModelEvent) {
        match event {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_serializes() {
        let mut total = Usage::new(1, 2);
        total += Usage::new(10, 20);
        assert_eq!(total.total_tokens(), 33);
        assert_eq!(
            serde_json::to_value(total).unwrap(),
            serde_json::json!({"input_tokens": 11, "output_tokens": 22})
        );
        assert_eq!(
            serde_json::to_value(FinishReason::ToolCalls).unwrap(),
            serde_json::json!("tool_calls")
        );
    }
}
