//! The conversation: [`Role`], [`Message`] and its [`Part`]s ([`ToolCall`], [`ToolResult`]).
//! (`ToolResult::from_output`, which takes a tool's output, is in `tools/output.rs`, with the
//! output.)

use std::collections::hash_map::RandomState;
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::content::ContentPart;

/// Makes a fresh identifier such as `msg_3f9a0c1d2b4e5f60`: the prefix, an underscore and 16
/// hex digits that are unique within the process and unpredictable across processes.
///
/// ```
/// let a = tinyagent::store::new_id("msg");
/// let b = tinyagent::store::new_id("msg");
/// assert!(a.starts_with("msg_") && a.len() == 20);
/// assert_ne!(a, b);
/// ```
pub fn new_id(prefix: &str) -> String {
    static SEED: OnceLock<RandomState> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // A keyed hash of a counter: distinct counters give distinct-looking, process-random ids.
    let value = SEED.get_or_init(RandomState::new).hash_one(n);
    // One allocation of the exact size (`format!` grows its string as it goes).
    let mut id = String::with_capacity(prefix.len() + 17);
    id.push_str(prefix);
    id.push('_');
    let _ = write!(id, "{value:016x}");
    id
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model (the agent's instruction travels separately, in
    /// [`ModelRequest::instruction`](crate::ModelRequest::instruction)).
    System,
    /// The person (or program) talking to the agent.
    User,
    /// The model.
    Assistant,
    /// Results of tool calls, fed back to the model.
    Tool,
}

impl Role {
    /// The role's lower-case name: `system`, `user`, `assistant` or `tool`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::System => "system",
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
        }
    }
}

/// A model's request to call a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCall {
    /// The id the model gave the call; its result carries the same id.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments, as the raw JSON text the model produced (not necessarily valid JSON).
    pub arguments: String,
}

impl ToolCall {
    /// A tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// The outcome of a tool call, as the model reads it.
///
/// A failed call is a result too: `is_error` is set and `content` explains what went wrong
/// (written for the model, so it can correct itself). A provider whose API has no error flag
/// should make the failure visible in the text it sends, for example by prefixing `Error: `.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The name of the tool that was called.
    pub name: String,
    /// The tool's output, or the error message.
    pub content: String,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// The result's content parts (text, images, audio, resources), when the tool returned
    /// more than text; then `content` is their text rendering
    /// ([`content_text`](crate::content::content_text)), which providers that take only text
    /// send.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<ContentPart>,
    /// The result's structured content (a JSON value matching the tool's output schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(
        call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            name: name.into(),
            content: content.into(),
            is_error: false,
            parts: Vec::new(),
            structured: None,
        }
    }

    /// A failed result; `message` tells the model what went wrong.
    pub fn error(
        call_id: impl Into<String>,
        name: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            is_error: true,
            ..Self::ok(call_id, name, message)
        }
    }

    /// Returns the result with these content parts; `content` stays as it is (set it to
    /// [`content_text`](crate::content::content_text) of the parts, as the agent does).
    #[must_use]
    pub fn parts(mut self, parts: Vec<ContentPart>) -> Self {
        self.parts = parts;
        self
    }

    /// Returns the result with this structured content.
    #[must_use]
    pub fn structured(mut self, structured: serde_json::Value) -> Self {
        self.structured = Some(structured);
        self
    }

    /// Whether the result holds media or resources besides text.
    pub fn has_media(&self) -> bool {
        self.parts.iter().any(|p| !p.is_text())
    }
}

/// One piece of a message.
///
/// Serialized with a `type` tag: `{"type":"text","text":"…"}`,
/// `{"type":"tool_call","id":"…","name":"…","arguments":"…"}`,
/// `{"type":"tool_result","call_id":"…","name":"…","content":"…","is_error":false}`.
/// More kinds of parts (images, reasoning) may come, so match with a wildcard arm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Part {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call (in an assistant message).
    ToolCall(ToolCall),
    /// A tool result (in a tool message).
    ToolResult(ToolResult),
    /// The model's reasoning before its answer (extended thinking), in an assistant message.
    ///
    /// Kept in the history so that a provider whose API wants it sent back unchanged
    /// (Anthropic's thinking blocks, with their signature) can; providers without a use for
    /// it leave it out of their requests. [`Message::text`] does not include it.
    Reasoning {
        /// The reasoning text (for a redacted block, the provider's opaque data).
        text: String,
        /// The provider's signature over the text, which it checks when the block comes
        /// back (for OpenAI's Responses API: the reasoning item's id and encrypted content).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Whether the provider redacted the reasoning: `text` is then opaque data to send
        /// back, not words to show.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
    },
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A reasoning part, with the provider's signature if it gave one.
    pub fn reasoning(text: impl Into<String>, signature: Option<String>) -> Self {
        Self::Reasoning {
            text: text.into(),
            signature,
            redacted: false,
        }
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

impl From<ToolCall> for Part {
    fn from(call: ToolCall) -> Self {
        Self::ToolCall(call)
    }
}

impl From<ToolResult> for Part {
    fn from(result: ToolResult) -> Self {
        Self::ToolResult(result)
    }
}

/// A message of the conversation: an id, a role and parts.
///
/// An assistant message holds text and/or tool calls; the agent answers them with one tool
/// message holding a [`ToolResult`] per call, in the order of the calls. (Providers whose API
/// wants one message per result split it.)
///
/// ```
/// use tinyagent::{Message, Part, Role, ToolCall};
///
/// let m = Message::new(Role::Assistant, vec![
///     Part::text("Let me check."),
///     ToolCall::new("call_1", "get_weather", r#"{"city":"Beijing"}"#).into(),
/// ]);
/// assert_eq!(m.text(), "Let me check.");
/// assert_eq!(m.tool_calls().next().unwrap().name, "get_weather");
/// assert_eq!(Message::user("Hello").role, Role::User);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Message {
    /// A unique id (made with [`new_id`] when not given).
    pub id: String,
    /// Who wrote it.
    pub role: Role,
    /// What it says.
    #[serde(default)]
    pub parts: Vec<Part>,
}

impl Message {
    /// A message with a fresh id.
    pub fn new(role: Role, parts: Vec<Part>) -> Self {
        Self {
            id: new_id("msg"),
            role,
            parts,
        }
    }

    /// A message of one text part.
    pub fn from_text(role: Role, text: impl Into<String>) -> Self {
        Self::new(role, vec![Part::text(text)])
    }

    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::from_text(Role::User, text)
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::from_text(Role::Assistant, text)
    }

    /// A system message of text.
    pub fn system(text: impl Into<String>) -> Self {
        Self::from_text(Role::System, text)
    }

    /// A tool message holding these results.
    pub fn from_tool_results(results: impl IntoIterator<Item = ToolResult>) -> Self {
        Self::new(
            Role::Tool,
            results.into_iter().map(Part::ToolResult).collect(),
        )
    }

    /// Returns the message with the id replaced.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The text parts joined together (without separators); empty when there are none.
    pub fn text(&self) -> String {
        let mut parts = self.parts.iter().filter_map(Part::as_text);
        match (parts.next(), parts.next()) {
            (None, _) => String::new(),
            (Some(only), None) => only.to_owned(),
            (Some(first), Some(second)) => {
                let mut out = String::from(first);
                out.push_str(second);
                parts.for_each(|p| out.push_str(p));
                out
            }
        }
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolCall(call) => Some(call),
            _ => None,
        })
    }

    /// The tool results, in order.
    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.parts.iter().filter_map(|p| match p {
            Part::ToolResult(result) => Some(result),
            _ => None,
        })
    }

    /// Whether the message asks for any tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::ToolCall(_)))
    }
}

/// Text becomes a user message.
impl From<&str> for Message {
    fn from(text: &str) -> Self {
        Message::user(text)
    }
}

/// Text becomes a user message.
impl From<String> for Message {
    fn from(text: String) -> Self {
        Message::user(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_joins_text_parts_only() {
        let m = Message::new(
            Role::Assistant,
            vec![
                Part::text("a"),
                ToolCall::new("1", "t", "{}").into(),
                Part::text("b"),
                Part::text("c"),
            ],
        );
        assert_eq!(m.text(), "abc");
        assert_eq!(Message::new(Role::User, vec![]).text(), "");
        assert!(m.has_tool_calls());
    }

    #[test]
    fn serde_shape_is_tagged_and_round_trips() {
        let m = Message::new(
            Role::Tool,
            vec![ToolResult::error("c1", "calc", "除数不能为零").into()],
        )
        .id("m1");
        let v = serde_json::to_value(&m).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"id": "m1", "role": "tool", "parts": [
                {"type": "tool_result", "call_id": "c1", "name": "calc",
                 "content": "除数不能为零", "is_error": true}
            ]})
        );
        let back: Message = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);
        let thought = Part::reasoning("先查天气。", Some("sig".into()));
        let v = serde_json::to_value(&thought).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "reasoning", "text": "先查天气。", "signature": "sig"})
        );
        assert_eq!(serde_json::from_value::<Part>(v).unwrap(), thought);
        let m = Message::new(Role::Assistant, vec![thought, Part::text("晴")]);
        assert_eq!(m.text(), "晴");
        let call: Part =
            serde_json::from_str(r#"{"type":"tool_call","id":"c","name":"n","arguments":"{}"}"#)
                .unwrap();
        assert_eq!(call, Part::ToolCall(ToolCall::new("c", "n", "{}")));
    }
}
