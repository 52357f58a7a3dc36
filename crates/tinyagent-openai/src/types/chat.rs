//! Chat Completions, both ways: this provider writes its requests' messages and reads answers
//! and stream chunks with these types, and `tinyagent-server` reads its clients' messages and
//! writes its answers and chunks with them. In an answer, `refusal`, `logprobs` and
//! `finish_reason` are written as `null` when there is none, as the spec wants.
//!
//! ```
//! use tinyagent_openai::types::{ChatCompletionChunk, ChatUsage};
//!
//! let chunk: ChatCompletionChunk = serde_json::from_str(
//!     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",
//!         "choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}"#,
//! )?;
//! assert_eq!(chunk.choices[0].delta.text(), "Hi");
//! assert!(chunk.usage.flatten().is_none());
//!
//! let last = ChatCompletionChunk::new("c1", 1, "m").usage(ChatUsage::new(12, 3));
//! assert_eq!(
//!     serde_json::to_string(&last)?,
//!     r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}"#
//! );
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::lenient::{arguments_text, lenient_text, null_as_default};

/// `object` of a whole answer.
pub const CHAT_COMPLETION: &str = "chat.completion";
/// `object` of a stream chunk.
pub const CHAT_COMPLETION_CHUNK: &str = "chat.completion.chunk";

/// A message of a request's conversation (`system`, `developer`, `user`, `assistant` or
/// `tool`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatMessage {
    /// Who speaks.
    #[serde(default)]
    pub role: String,
    /// What they say; `None` is left out (an assistant message with only tool calls).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// The calls an assistant message makes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    /// The call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message of `role` whose content is `text`.
    pub fn text(role: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(Content::Text(text.into())),
            ..Self::default()
        }
    }

    /// A `user` message of content parts.
    pub fn parts(role: impl Into<String>, parts: Vec<ContentPart>) -> Self {
        Self {
            role: role.into(),
            content: Some(Content::Parts(parts)),
            ..Self::default()
        }
    }

    /// A `tool` message: the result of call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::text("tool", text)
        }
    }

    /// Returns the message with these tool calls (none are left out of the JSON).
    #[must_use]
    pub fn tool_calls(mut self, calls: Vec<ChatToolCall>) -> Self {
        self.tool_calls = (!calls.is_empty()).then_some(calls);
        self
    }
}

/// A message's content: a string, or parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Text and media parts.
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text: the string, or the text of the parts that have some, joined.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        }
    }
}

/// One part of a content: `{"type": "text", "text": …}` or `{"type": "image_url",
/// "image_url": {"url": …}}` (other kinds are read with their type and nothing else).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ContentPart {
    /// `text`, `image_url`, or another kind.
    #[serde(rename = "type", default)]
    pub kind: String,
    /// A text part's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// An image part's image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_url: Option<ImageUrl>,
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            kind: "text".into(),
            text: Some(text.into()),
            image_url: None,
        }
    }

    /// An image part: its URL (a `data:` URL for inline bytes).
    pub fn image(url: impl Into<String>) -> Self {
        Self {
            kind: "image_url".into(),
            text: None,
            image_url: Some(ImageUrl { url: url.into() }),
        }
    }
}

/// Where an image part's image is.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageUrl {
    /// An `https:` or `data:` URL.
    #[serde(default)]
    pub url: String,
}

/// A tool call, in an assistant message or (in pieces) in stream chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatToolCall {
    /// Which call of the message a chunk's piece belongs to (chunks only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// The call's id.
    #[serde(
        default,
        deserialize_with = "lenient_text",
        skip_serializing_if = "Option::is_none"
    )]
    pub id: Option<String>,
    /// `function`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function called.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<ChatFunction>,
}

impl ChatToolCall {
    /// A call of function `name` with `arguments` (JSON text), as id `id`.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> Self {
        Self {
            index: None,
            id: Some(id.into()),
            kind: Some("function".into()),
            function: Some(ChatFunction {
                name: Some(name.into()),
                arguments: Some(Value::String(arguments.into())),
            }),
        }
    }
}

/// The function of a tool call.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatFunction {
    /// The function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its arguments: JSON text by the spec; some servers send the object itself (see
    /// [`arguments_text`](Self::arguments_text)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
}

impl ChatFunction {
    /// The arguments as JSON text: a string as it is, anything else serialized, nothing as
    /// empty.
    pub fn arguments_text(&self) -> String {
        arguments_text(self.arguments.as_ref())
    }
}

/// `stream_options` of a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StreamOptions {
    /// Whether a last chunk carries the usage (and the others `"usage": null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_usage: Option<bool>,
}

/// What an answer used, in tokens (and in money, where the server says so).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatUsage {
    /// Tokens read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Tokens written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// The cached part of the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// The reasoning part of the completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// What the answer cost, in US dollars (OpenRouter's field; tinyagent-server's too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

impl ChatUsage {
    /// `prompt` tokens read and `completion` tokens written, and their total.
    pub fn new(prompt: u64, completion: u64) -> Self {
        Self {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: Some(prompt + completion),
            ..Self::default()
        }
    }

    /// Returns the usage with its cost in US dollars.
    #[must_use]
    pub fn cost(mut self, usd: Option<f64>) -> Self {
        self.cost = usd;
        self
    }
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptTokensDetails {
    /// Tokens read from the server's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompletionTokensDetails {
    /// Tokens of reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A whole answer (`chat.completion`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletion {
    /// The answer's id.
    #[serde(default, deserialize_with = "lenient_text")]
    pub id: Option<String>,
    /// [`CHAT_COMPLETION`].
    #[serde(default)]
    pub object: String,
    /// When it was made, in seconds since 1970.
    #[serde(default)]
    pub created: u64,
    /// The model that answered.
    #[serde(default, deserialize_with = "lenient_text")]
    pub model: Option<String>,
    /// The answers (one, here).
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice>,
    /// What it used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
}

impl ChatCompletion {
    /// An answer `id` by `model`, made at `created`, with one assistant message of `text`
    /// that stopped.
    pub fn new(
        id: impl Into<String>,
        created: u64,
        model: impl Into<String>,
        text: String,
    ) -> Self {
        Self {
            id: Some(id.into()),
            object: CHAT_COMPLETION.into(),
            created,
            model: Some(model.into()),
            choices: vec![Choice {
                index: 0,
                message: AnswerMessage {
                    refusal: Some(None),
                    ..AnswerMessage::assistant(text)
                },
                logprobs: None,
                finish_reason: Some("stop".into()),
            }],
            usage: None,
        }
    }

    /// Returns the answer with its usage.
    #[must_use]
    pub fn usage(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(usage);
        self
    }
}

/// One answer of a [`ChatCompletion`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Choice {
    /// Which answer.
    #[serde(default)]
    pub index: u64,
    /// The assistant's message.
    #[serde(default, deserialize_with = "null_as_default")]
    pub message: AnswerMessage,
    /// Log probabilities: never given here (`null`).
    #[serde(default)]
    pub logprobs: Option<Value>,
    /// Why it ended: `stop`, `length`, `tool_calls`, `content_filter`.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// The assistant's message of an answer, or a chunk's piece of it (its `delta`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AnswerMessage {
    /// `assistant` (in a chunk, only the first says it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub role: String,
    /// The text (a string; some servers send parts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// A refusal's text: left out, `null` (`Some(None)`, as a whole answer writes it) or
    /// given. Read, `null` and a missing field are both `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Option<String>>,
    /// The calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ChatToolCall>>,
    /// The legacy single call, from servers that still send it instead of `tool_calls`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function_call: Option<ChatFunction>,
}

impl AnswerMessage {
    /// The assistant's message of `text` (a whole answer's, or a stream's first piece).
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            ..Self::piece(text)
        }
    }

    /// A piece of the assistant's text, in a chunk's `delta`.
    pub fn piece(text: impl Into<String>) -> Self {
        Self {
            content: Some(Content::Text(text.into())),
            ..Self::default()
        }
    }

    /// The text: the content's, or else the refusal's.
    pub fn text(&self) -> String {
        let text = self.content.as_ref().map(Content::text).unwrap_or_default();
        if text.is_empty() {
            self.refusal.clone().flatten().unwrap_or_default()
        } else {
            text
        }
    }
}

/// One chunk of a streamed answer (`chat.completion.chunk`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChatCompletionChunk {
    /// The answer's id (the same in every chunk).
    #[serde(default, deserialize_with = "lenient_text")]
    pub id: Option<String>,
    /// [`CHAT_COMPLETION_CHUNK`].
    #[serde(default)]
    pub object: String,
    /// When the answer was made, in seconds since 1970.
    #[serde(default)]
    pub created: u64,
    /// The model that answers.
    #[serde(default, deserialize_with = "lenient_text")]
    pub model: Option<String>,
    /// The pieces (none in a last chunk that carries only the usage).
    #[serde(default, deserialize_with = "null_as_default")]
    pub choices: Vec<ChunkChoice>,
    /// The usage: left out, `null` (`Some(None)`: every chunk but the last when a request
    /// asks for it) or given (the last). Read, `null` and a missing field are both `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Option<ChatUsage>>,
}

impl ChatCompletionChunk {
    /// A chunk of answer `id` by `model`, made at `created`, with no pieces yet.
    pub fn new(id: impl Into<String>, created: u64, model: impl Into<String>) -> Self {
        Self {
            id: Some(id.into()),
            object: CHAT_COMPLETION_CHUNK.into(),
            created,
            model: Some(model.into()),
            choices: Vec::new(),
            usage: None,
        }
    }

    /// Returns the chunk with one piece of the first answer: `delta`, and why it ended in the
    /// last piece.
    #[must_use]
    pub fn delta(mut self, delta: AnswerMessage, finish_reason: Option<&str>) -> Self {
        self.choices = vec![ChunkChoice {
            index: 0,
            delta,
            logprobs: None,
            finish_reason: finish_reason.map(str::to_owned),
        }];
        self
    }

    /// Returns the chunk with its usage (the last of a stream that asked for it).
    #[must_use]
    pub fn usage(mut self, usage: ChatUsage) -> Self {
        self.usage = Some(Some(usage));
        self
    }
}

/// A piece of one answer in a [`ChatCompletionChunk`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChunkChoice {
    /// Which answer.
    #[serde(default)]
    pub index: u64,
    /// What the piece adds.
    #[serde(default, deserialize_with = "null_as_default")]
    pub delta: AnswerMessage,
    /// Log probabilities: never given here (`null`).
    #[serde(default)]
    pub logprobs: Option<Value>,
    /// Why the answer ended, in its last piece.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_read_leniently() {
        let answer: ChatCompletion = serde_json::from_value(json!({
            "id": 7, "model": null, "choices": [{"message": {
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"x": 1}}}]
            }, "finish_reason": null}],
            "usage": {"prompt_tokens": 3, "prompt_tokens_details": null}
        }))
        .unwrap();
        assert_eq!(answer.id.as_deref(), Some("7"));
        assert_eq!(answer.model, None);
        let message = &answer.choices[0].message;
        assert_eq!(message.text(), "ab");
        let call = &message.tool_calls.as_ref().unwrap()[0];
        assert_eq!(
            call.function.as_ref().unwrap().arguments_text(),
            r#"{"x":1}"#
        );
        assert_eq!(answer.usage.unwrap().prompt_tokens, Some(3));
        let empty: ChatCompletion = serde_json::from_str(r#"{"choices": null}"#).unwrap();
        assert!(empty.choices.is_empty());
    }

    #[test]
    fn answers_write_what_the_spec_wants() {
        let answer = ChatCompletion::new("a1", 5, "agent", "Hi".into()).usage(ChatUsage::new(1, 2));
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({
                "id": "a1", "object": "chat.completion", "created": 5, "model": "agent",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", "refusal": null},
                             "logprobs": null, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
            })
        );
        let mut chunk =
            ChatCompletionChunk::new("a1", 5, "agent").delta(AnswerMessage::default(), None);
        chunk.usage = Some(None);
        assert_eq!(
            serde_json::to_value(&chunk).unwrap(),
            json!({
                "id": "a1", "object": "chat.completion.chunk", "created": 5, "model": "agent",
                "choices": [{"index": 0, "delta": {}, "logprobs": null, "finish_reason": null}],
                "usage": null
            })
        );
    }

    #[test]
    fn request_messages_round_trip() {
        let call = ChatToolCall::new("c1", "get_weather", r#"{"city":"Oslo"}"#);
        let messages = vec![
            ChatMessage::text("user", "Weather?"),
            ChatMessage::text("assistant", "").tool_calls(vec![call]),
            ChatMessage::tool_result("c1", "Sunny"),
            ChatMessage::parts(
                "user",
                vec![
                    ContentPart::text("see"),
                    ContentPart::image("data:image/png;base64,AA"),
                ],
            ),
        ];
        let json = serde_json::to_value(&messages).unwrap();
        assert_eq!(
            json[1],
            json!({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                   "function": {"name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}]})
        );
        assert_eq!(
            json[2],
            json!({"role": "tool", "content": "Sunny", "tool_call_id": "c1"})
        );
        assert_eq!(
            json[3]["content"][1],
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}})
        );
        let back: Vec<ChatMessage> = serde_json::from_value(json).unwrap();
        assert_eq!(back, messages);
    }
}
