//! [`ToolHost`]: what a running tool may ask of whoever runs it (an agent, an MCP server):
//! report progress, log, ask a model (sampling), ask a person (elicitation).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::content::ContentPart;
use crate::error::ToolError;
use crate::message::Role;
use crate::util::BoxFuture;

/// The severity of a log message a tool sends to its client (MCP's logging levels, from
/// least to most severe).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum LogLevel {
    Debug,
    Info,
    Notice,
    Warning,
    Error,
    Critical,
    Alert,
    Emergency,
}

/// One message of a [`SamplingRequest`]: who says it, and what (text, an image or a sound).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: Role,
    /// What the message holds.
    pub content: ContentPart,
}

impl SamplingMessage {
    /// A message.
    pub fn new(role: Role, content: ContentPart) -> Self {
        Self { role, content }
    }

    /// A user message of text.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, ContentPart::text(text))
    }

    /// An assistant message of text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, ContentPart::text(text))
    }
}

/// A tool's request for a completion from the client's model (MCP's `sampling/createMessage`).
///
/// ```
/// use tinyagent::host::SamplingRequest;
///
/// let req = SamplingRequest::text("Summarise: …", 200).system_prompt("Be brief.");
/// assert_eq!(req.max_tokens, 200);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation to complete.
    pub messages: Vec<SamplingMessage>,
    /// A system prompt, when the tool wants one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// The sampling temperature, when the tool asks for one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

impl SamplingRequest {
    /// A request to complete these messages with at most `max_tokens` tokens.
    pub fn new(messages: Vec<SamplingMessage>, max_tokens: u32) -> Self {
        Self {
            messages,
            system_prompt: None,
            max_tokens,
            temperature: None,
        }
    }

    /// A request of one user message of text.
    pub fn text(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::new(vec![SamplingMessage::user(prompt)], max_tokens)
    }

    /// Sets the system prompt.
    #[must_use]
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }
}

/// The client model's answer to a [`SamplingRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SamplingReply {
    /// Who answers (normally `assistant`).
    pub role: Role,
    /// The answer.
    pub content: ContentPart,
    /// The model that answered.
    pub model: String,
    /// Why it stopped (`endTurn`, `maxTokens`, …), when said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl SamplingReply {
    /// An assistant's answer of text.
    pub fn text(text: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            role: Role::Assistant,
            content: ContentPart::text(text),
            model: model.into(),
            stop_reason: None,
        }
    }

    /// Returns the reply with the stop reason set.
    #[must_use]
    pub fn stop_reason(mut self, reason: impl Into<String>) -> Self {
        self.stop_reason = Some(reason.into());
        self
    }

    /// The answer's text (empty when it is not text).
    pub fn as_text(&self) -> &str {
        self.content.as_text().unwrap_or_default()
    }
}

/// A tool's question to the person behind the client (MCP's `elicitation/create`): a message
/// and the JSON Schema of the answer (a flat object of strings, numbers, booleans and enums).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ElicitationRequest {
    /// What to ask.
    pub message: String,
    /// The schema of the answer.
    pub schema: Value,
}

impl ElicitationRequest {
    /// A question.
    pub fn new(message: impl Into<String>, schema: Value) -> Self {
        Self {
            message: message.into(),
            schema,
        }
    }
}

/// What the person answered to an [`ElicitationRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", content = "content", rename_all = "lowercase")]
#[non_exhaustive]
pub enum Elicitation {
    /// They answered; the value follows the request's schema.
    Accept(Value),
    /// They said no.
    Decline,
    /// They dismissed the question without choosing.
    Cancel,
}

/// What runs a tool, as the tool sees it: where its progress reports and log messages go, and
/// who answers its sampling and elicitation requests.
///
/// An agent attaches one to every call (progress becomes `Event::ToolProgress`);
/// an MCP server attaches one that speaks to the client (`notifications/progress`,
/// `notifications/message`, `sampling/createMessage`, `elicitation/create`). Tools reach it
/// through [`ToolContext::progress`](super::ToolContext::progress),
/// [`log`](super::ToolContext::log), [`sample`](super::ToolContext::sample) and
/// [`elicit`](super::ToolContext::elicit). Every method has a
/// default: reports are dropped, requests fail with a clear error.
pub trait ToolHost: Send + Sync {
    /// Reports progress: `progress` of `total` (when known), with a message.
    fn progress(
        &self,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> BoxFuture<'_, ()> {
        let _ = (progress, total, message);
        Box::pin(async {})
    }

    /// Sends a log message.
    fn log(&self, level: LogLevel, logger: Option<String>, data: Value) -> BoxFuture<'_, ()> {
        let _ = (level, logger, data);
        Box::pin(async {})
    }

    /// Asks the client's model for a completion.
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingReply, ToolError>> {
        let _ = request;
        Box::pin(async { Err(unsupported("sampling (asking the client's model)")) })
    }

    /// Asks the person behind the client.
    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Result<Elicitation, ToolError>> {
        let _ = request;
        Box::pin(async { Err(unsupported("elicitation (asking the user)")) })
    }
}

/// The error of a request no one answers.
#[doc(hidden)]
pub fn unsupported(what: &str) -> ToolError {
    ToolError::unavailable(format!(
        "{what} is not supported here: the tool runs without a client that answers it"
    ))
    .retryable(false)
}

/// The host attached to a context.
#[derive(Clone)]
pub(crate) struct Host(pub(crate) Arc<dyn ToolHost>);

impl fmt::Debug for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ToolHost")
    }
}
