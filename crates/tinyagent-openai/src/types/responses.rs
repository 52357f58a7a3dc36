//! The Responses API, both ways: this provider reads response objects, their output items and
//! usage with these types, and `tinyagent-server` writes its responses and stream events with
//! them. Reading is lenient as for Chat Completions; items and content parts of kinds these
//! types do not name are kept as JSON ([`OutputItem::Other`], [`OutputContent::Other`]).
//!
//! ```
//! use tinyagent_openai::types::{OutputItem, ResponseObject};
//!
//! let response: ResponseObject = serde_json::from_str(
//!     r#"{"id":"resp_1","status":"completed","output":[
//!         {"type":"web_search_call","id":"ws_1"},
//!         {"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{}"}
//!     ]}"#,
//! )?;
//! let output = response.output.unwrap_or_default();
//! assert!(matches!(&output[0], OutputItem::Other(_)));
//! assert!(matches!(&output[1], OutputItem::FunctionCall(call) if call.name.as_deref() == Some("get_weather")));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::lenient::{arguments_text, lenient_text, null_as_default};

/// `object` of a response.
pub const RESPONSE: &str = "response";

/// A response object: a whole answer, or the state of a streamed one in its events.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseObject {
    /// The response's id.
    #[serde(default, deserialize_with = "lenient_text")]
    pub id: Option<String>,
    /// [`RESPONSE`].
    #[serde(default)]
    pub object: String,
    /// When it was made, in seconds since 1970.
    #[serde(default, deserialize_with = "null_as_default")]
    pub created_at: u64,
    /// `in_progress`, `completed`, `incomplete` or `failed`.
    #[serde(default)]
    pub status: Option<String>,
    /// The model that answers.
    #[serde(default, deserialize_with = "lenient_text")]
    pub model: Option<String>,
    /// The items of the answer; read, `None` when a server left the field out.
    #[serde(default)]
    pub output: Option<Vec<OutputItem>>,
    /// Why it failed (`null` unless it did).
    #[serde(default)]
    pub error: Option<Value>,
    /// Why it is incomplete (`null` unless it is).
    #[serde(default)]
    pub incomplete_details: Option<IncompleteDetails>,
    /// The instructions it followed (`null` for none).
    #[serde(default)]
    pub instructions: Option<Value>,
    /// The request's metadata.
    #[serde(default, deserialize_with = "null_as_default")]
    pub metadata: Map<String, Value>,
    /// Whether calls may run in parallel.
    #[serde(default, deserialize_with = "null_as_default")]
    pub parallel_tool_calls: bool,
    /// The sampling temperature (`null`: the model's default).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Nucleus sampling (`null`: the model's default).
    #[serde(default)]
    pub top_p: Option<f64>,
    /// How tools were to be chosen.
    #[serde(default)]
    pub tool_choice: Value,
    /// The tools offered.
    #[serde(default, deserialize_with = "null_as_default")]
    pub tools: Vec<Value>,
    /// Whether the response is stored for later reference.
    #[serde(default, deserialize_with = "null_as_default")]
    pub store: bool,
    /// The text's format.
    #[serde(default)]
    pub text: Value,
    /// What it used (left out while in progress).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ResponseUsage>,
}

impl ResponseObject {
    /// A response `id` by `model`, made at `created_at`, with this status and output, its
    /// other fields those of an answer with the model's defaults and no tools of the client's.
    pub fn new(
        id: impl Into<String>,
        created_at: u64,
        model: impl Into<String>,
        status: &str,
        output: Vec<OutputItem>,
    ) -> Self {
        Self {
            id: Some(id.into()),
            object: RESPONSE.into(),
            created_at,
            status: Some(status.into()),
            model: Some(model.into()),
            output: Some(output),
            parallel_tool_calls: true,
            tool_choice: Value::String("auto".into()),
            text: serde_json::json!({"format": {"type": "text"}}),
            ..Self::default()
        }
    }

    /// Returns the response with the instructions it followed.
    #[must_use]
    pub fn instructions(mut self, instructions: Option<String>) -> Self {
        self.instructions = instructions.map(Value::String);
        self
    }

    /// Returns the response with its usage.
    #[must_use]
    pub fn usage(mut self, usage: ResponseUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// `incomplete_details` of a response.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct IncompleteDetails {
    /// `max_output_tokens`, `content_filter`, or another reason.
    #[serde(default)]
    pub reason: Option<String>,
}

/// One item of a response's output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputItem {
    /// The assistant's message.
    Message(MessageItem),
    /// A call of a function tool.
    FunctionCall(FunctionCallItem),
    /// The model's reasoning.
    Reasoning(ReasoningItem),
    /// An item of another kind (a built-in tool's call, say), or one that does not read as
    /// its kind should, as JSON.
    #[serde(untagged)]
    Other(Value),
}

/// An output message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct MessageItem {
    /// The item's id.
    #[serde(default, deserialize_with = "lenient_text")]
    pub id: Option<String>,
    /// `in_progress` or `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `assistant`.
    #[serde(default)]
    pub role: String,
    /// Its parts.
    #[serde(default, deserialize_with = "null_as_default")]
    pub content: Vec<OutputContent>,
}

impl MessageItem {
    /// The assistant's message `id` with this status and content.
    pub fn new(id: impl Into<String>, status: &str, content: Vec<OutputContent>) -> Self {
        Self {
            id: Some(id.into()),
            status: Some(status.into()),
            role: "assistant".into(),
            content,
        }
    }

    /// Its text: the output text and refusals of its parts.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|part| match part {
                OutputContent::OutputText { text, .. } => Some(text.as_str()),
                OutputContent::Refusal { refusal } => Some(refusal.as_str()),
                OutputContent::Other(_) => None,
            })
            .collect()
    }
}

/// One part of an output message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputContent {
    /// Text.
    OutputText {
        /// The text.
        #[serde(default)]
        text: String,
        /// Citations and the like (none here).
        #[serde(default, deserialize_with = "null_as_default")]
        annotations: Vec<Value>,
        /// Log probabilities (none here).
        #[serde(default, deserialize_with = "null_as_default")]
        logprobs: Vec<Value>,
    },
    /// A refusal.
    Refusal {
        /// What the model said.
        #[serde(default)]
        refusal: String,
    },
    /// A part of another kind, as JSON.
    #[serde(untagged)]
    Other(Value),
}

impl OutputContent {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::OutputText {
            text: text.into(),
            annotations: Vec::new(),
            logprobs: Vec::new(),
        }
    }
}

/// A call of a function tool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionCallItem {
    /// The item's id.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// The call's id, which its output names.
    #[serde(default, deserialize_with = "lenient_text")]
    pub call_id: Option<String>,
    /// The function's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Its arguments: JSON text by the spec; some servers send the object itself.
    #[serde(default)]
    pub arguments: Option<Value>,
    /// `in_progress` or `completed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl FunctionCallItem {
    /// The arguments as JSON text: a string as it is, anything else serialized, nothing as
    /// empty.
    pub fn arguments_text(&self) -> String {
        arguments_text(self.arguments.as_ref())
    }
}

/// The model's reasoning: a summary, and its encrypted content when asked for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ReasoningItem {
    /// The item's id.
    #[serde(default, deserialize_with = "lenient_text")]
    pub id: Option<String>,
    /// The summary's parts (`{"type": "summary_text", "text": …}`).
    #[serde(default, deserialize_with = "null_as_default")]
    pub summary: Vec<Value>,
    /// The reasoning, encrypted, for a later request to continue from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_content: Option<String>,
}

impl ReasoningItem {
    /// The summary's text, its parts separated by blank lines.
    pub fn summary_text(&self) -> String {
        let parts: Vec<&str> = self
            .summary
            .iter()
            .filter_map(|s| s.get("text").and_then(Value::as_str))
            .collect();
        parts.join("\n\n")
    }
}

/// What a response used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseUsage {
    /// Tokens read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The cached part of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens_details: Option<InputTokensDetails>,
    /// Tokens written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The reasoning part of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_details: Option<OutputTokensDetails>,
    /// Both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// What the answer cost, in US dollars (tinyagent-server's field, as in Chat Completions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl ResponseUsage {
    /// `input` tokens read (`cached` of them from a cache) and `output` written (`reasoning`
    /// of them reasoning), every field given.
    pub fn new(input: u64, cached: u64, output: u64, reasoning: u64) -> Self {
        Self {
            input_tokens: Some(input),
            input_tokens_details: Some(InputTokensDetails {
                cached_tokens: Some(cached),
            }),
            output_tokens: Some(output),
            output_tokens_details: Some(OutputTokensDetails {
                reasoning_tokens: Some(reasoning),
            }),
            total_tokens: Some(input + output),
            cost: None,
        }
    }

    /// Returns the usage with its cost in US dollars.
    #[must_use]
    pub fn cost(mut self, usd: Option<f64>) -> Self {
        self.cost = usd;
        self
    }
}

/// `usage.input_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct InputTokensDetails {
    /// Tokens read from the server's cache.
    #[serde(default)]
    pub cached_tokens: Option<u64>,
}

/// `usage.output_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct OutputTokensDetails {
    /// Tokens of reasoning.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

/// One event of a streamed response (`response.created`, `response.output_text.delta`,
/// `error`, ...): its type, its number in the stream, and the fields its type has.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResponseStreamEvent {
    /// The event's type; also the SSE event name.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// The response so far (`response.created`, `.in_progress`, `.completed`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ResponseObject>,
    /// Which output item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_index: Option<u64>,
    /// The output item's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// Which part of the item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_index: Option<u64>,
    /// The item (`response.output_item.added`, `.done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<OutputItem>,
    /// The part (`response.content_part.added`, `.done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<OutputContent>,
    /// A piece of text or of arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// The whole text (`response.output_text.done`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Log probabilities of a text event (none here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprobs: Option<Vec<Value>>,
    /// An `error` event's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
    /// An `error` event's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// An `error` event's parameter (`null` when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub param: Option<Value>,
    /// The event's number in the stream, from 0.
    #[serde(default)]
    pub sequence_number: u64,
}

impl ResponseStreamEvent {
    /// An event of this type, its fields to be set.
    pub fn new(kind: &str) -> Self {
        Self {
            kind: kind.into(),
            ..Self::default()
        }
    }

    /// An event about the response (`response.created`, `.in_progress`, `.completed`).
    pub fn response(kind: &str, response: ResponseObject) -> Self {
        Self {
            response: Some(response),
            ..Self::new(kind)
        }
    }

    /// An event about output item `output_index` (`response.output_item.added`, `.done`).
    pub fn item(kind: &str, output_index: u64, item: OutputItem) -> Self {
        Self {
            output_index: Some(output_index),
            item: Some(item),
            ..Self::new(kind)
        }
    }

    /// An event about part `content_index` of item `item_id` at `output_index`, its other
    /// fields to be set (text deltas, parts).
    pub fn in_part(kind: &str, output_index: u64, item_id: &str, content_index: u64) -> Self {
        Self {
            output_index: Some(output_index),
            item_id: Some(item_id.into()),
            content_index: Some(content_index),
            ..Self::new(kind)
        }
    }

    /// The `error` event: `code`, `message` and `param` (each `null` when absent).
    pub fn error(code: Option<&str>, message: &str, param: Option<&str>) -> Self {
        Self {
            code: Some(code.map_or(Value::Null, |c| Value::String(c.into()))),
            message: Some(message.into()),
            param: Some(param.map_or(Value::Null, |p| Value::String(p.into()))),
            ..Self::new("error")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn responses_write_every_field_the_spec_wants() {
        let item = OutputItem::Message(MessageItem::new(
            "msg_1",
            "completed",
            vec![OutputContent::text("Hi")],
        ));
        let response = ResponseObject::new("resp_1", 5, "agent", "completed", vec![item])
            .instructions(None)
            .usage(ResponseUsage::new(10, 2, 3, 0));
        assert_eq!(
            serde_json::to_value(&response).unwrap(),
            json!({
                "id": "resp_1", "object": "response", "created_at": 5, "status": "completed",
                "model": "agent",
                "output": [{"type": "message", "id": "msg_1", "status": "completed",
                            "role": "assistant", "content": [{"type": "output_text",
                            "text": "Hi", "annotations": [], "logprobs": []}]}],
                "error": null, "incomplete_details": null, "instructions": null,
                "metadata": {}, "parallel_tool_calls": true, "temperature": null,
                "top_p": null, "tool_choice": "auto", "tools": [], "store": false,
                "text": {"format": {"type": "text"}},
                "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 2},
                          "output_tokens": 3, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 13}
            })
        );
        let back: ResponseObject =
            serde_json::from_value(serde_json::to_value(&response).unwrap()).unwrap();
        assert_eq!(back, response);
    }

    #[test]
    fn items_of_other_kinds_and_odd_fields_are_kept() {
        let response: ResponseObject = serde_json::from_value(json!({
            "id": 3, "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
            "tools": null, "metadata": null, "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "a"},
                                                                 {"type": "summary_text", "text": "b"}]},
                {"type": "message", "content": [{"type": "refusal", "refusal": "no"},
                                                {"type": "output_audio"}]},
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": {"x": 1}},
                {"type": "image_generation_call", "id": "ig_1"},
                {"no_type": true}
            ]
        }))
        .unwrap();
        assert_eq!(response.id.as_deref(), Some("3"));
        assert_eq!(
            response.incomplete_details.unwrap().reason.as_deref(),
            Some("max_output_tokens")
        );
        let output = response.output.unwrap();
        assert!(matches!(&output[0], OutputItem::Reasoning(r) if r.summary_text() == "a\n\nb"));
        assert!(matches!(&output[1], OutputItem::Message(m) if m.text() == "no"));
        assert!(
            matches!(&output[2], OutputItem::FunctionCall(c) if c.arguments_text() == r#"{"x":1}"#)
        );
        assert!(matches!(&output[3], OutputItem::Other(v) if v["id"] == "ig_1"));
        assert!(matches!(&output[4], OutputItem::Other(_)));
    }

    #[test]
    fn stream_events_carry_only_their_fields() {
        let mut delta = ResponseStreamEvent::in_part("response.output_text.delta", 0, "msg_1", 0);
        delta.delta = Some("Hi".into());
        delta.logprobs = Some(Vec::new());
        delta.sequence_number = 4;
        assert_eq!(
            serde_json::to_value(&delta).unwrap(),
            json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
                   "content_index": 0, "delta": "Hi", "logprobs": [], "sequence_number": 4})
        );
        assert_eq!(
            serde_json::to_value(ResponseStreamEvent::error(None, "boom", None)).unwrap(),
            json!({"type": "error", "code": null, "message": "boom", "param": null,
                   "sequence_number": 0})
        );
    }
}
