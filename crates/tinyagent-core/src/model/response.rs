//! What a model answers: [`ModelResponse`], its [`Usage`] and [`FinishReason`], and the
//! [`ModelResponseBuilder`](crate::model::ModelResponseBuilder) that assembles one from streamed pieces.

use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use super::Cost;
use crate::message::Message;

/// Tokens used, as the provider reports them.
///
/// A count the provider did not report is `None`, never a made-up zero; sums keep what was
/// reported (`None + Some(3)` is `Some(3)`). Serialized, unreported counts are left out:
///
/// ```
/// use tinyagent::Usage;
///
/// let step = Usage::new(80, 17).cached_input_tokens(64);
/// assert_eq!(step.total_tokens(), Some(97));
/// assert_eq!(
///     serde_json::to_string(&step).unwrap(),
///     r#"{"input_tokens":80,"output_tokens":17,"cached_input_tokens":64}"#
/// );
/// let run = step + Usage::default();
/// assert_eq!(run.input_tokens, Some(80));
/// assert_eq!(Usage::default().total_tokens(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Usage {
    /// Tokens of the prompt (instruction, history, tool definitions), cached ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Tokens the model produced, reasoning included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Of the input tokens, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Of the input tokens, those written to the provider's prompt cache (which some
    /// providers bill apart).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_tokens: Option<u64>,
    /// Of the output tokens, those spent on reasoning the reply does not show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// What the call cost, from the agent's [`PriceTable`](super::PriceTable) (or the
    /// provider); `None` when the model's price is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Cost>,
}

impl Usage {
    /// A usage with input and output counts reported.
    pub const fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens: Some(input_tokens),
            output_tokens: Some(output_tokens),
            cached_input_tokens: None,
            cache_write_input_tokens: None,
            reasoning_tokens: None,
            cost: None,
        }
    }

    /// Returns the usage with the cached input tokens set.
    #[must_use]
    pub const fn cached_input_tokens(mut self, tokens: u64) -> Self {
        self.cached_input_tokens = Some(tokens);
        self
    }

    /// Returns the usage with the input tokens written to the prompt cache set.
    #[must_use]
    pub const fn cache_write_input_tokens(mut self, tokens: u64) -> Self {
        self.cache_write_input_tokens = Some(tokens);
        self
    }

    /// Returns the usage with the reasoning tokens set.
    #[must_use]
    pub const fn reasoning_tokens(mut self, tokens: u64) -> Self {
        self.reasoning_tokens = Some(tokens);
        self
    }

    /// Sets what the call cost.
    #[must_use]
    pub const fn cost(mut self, cost: Cost) -> Self {
        self.cost = Some(cost);
        self
    }

    /// Input plus output tokens, as far as reported; `None` when neither was.
    pub const fn total_tokens(&self) -> Option<u64> {
        match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (input, output) => Some(or_zero(input).saturating_add(or_zero(output))),
        }
    }

    /// Whether the provider reported nothing.
    pub const fn is_unreported(&self) -> bool {
        self.input_tokens.is_none()
            && self.output_tokens.is_none()
            && self.cached_input_tokens.is_none()
            && self.cache_write_input_tokens.is_none()
            && self.reasoning_tokens.is_none()
            && self.cost.is_none()
    }
}

const fn or_zero(count: Option<u64>) -> u64 {
    match count {
        Some(n) => n,
        None => 0,
    }
}

fn add_counts(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        (a, b) => Some(or_zero(a).saturating_add(or_zero(b))),
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(self, rhs: Usage) -> Usage {
        Usage {
            input_tokens: add_counts(self.input_tokens, rhs.input_tokens),
            output_tokens: add_counts(self.output_tokens, rhs.output_tokens),
            cached_input_tokens: add_counts(self.cached_input_tokens, rhs.cached_input_tokens),
            cache_write_input_tokens: add_counts(
                self.cache_write_input_tokens,
                rhs.cache_write_input_tokens,
            ),
            reasoning_tokens: add_counts(self.reasoning_tokens, rhs.reasoning_tokens),
            cost: match (self.cost, rhs.cost) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or_default() + b.unwrap_or_default()),
            },
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        *self = *self + rhs;
    }
}

/// Why the model stopped producing output in a step.
///
/// Serialized as a string: `"stop"`, `"tool_calls"`, `"length"`, `"content_filter"`, or the
/// provider's own name for anything else.
///
/// ```
/// use tinyagent::model::FinishReason;
///
/// assert_eq!(serde_json::to_string(&FinishReason::ToolCalls).unwrap(), r#""tool_calls""#);
/// let other: FinishReason = serde_json::from_str(r#""pause_turn""#).unwrap();
/// assert_eq!(other, FinishReason::Other("pause_turn".into()));
/// assert_eq!(other.as_str(), "pause_turn");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
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

impl FinishReason {
    /// The reason's name: `"stop"`, `"tool_calls"`, `"length"`, `"content_filter"`, or the
    /// provider's own name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::ToolCalls => "tool_calls",
            Self::Length => "length",
            Self::ContentFilter => "content_filter",
            Self::Other(other) => other,
        }
    }
}

impl From<String> for FinishReason {
    fn from(name: String) -> Self {
        match name.as_str() {
            "stop" => Self::Stop,
            "tool_calls" => Self::ToolCalls,
            "length" => Self::Length,
            "content_filter" => Self::ContentFilter,
            _ => Self::Other(name),
        }
    }
}

impl From<FinishReason> for String {
    fn from(reason: FinishReason) -> Self {
        match reason {
            FinishReason::Other(other) => other,
            known => known.as_str().to_owned(),
        }
    }
}

/// A model's answer to one request: the assistant message (text and/or tool calls), token
/// usage and why it stopped.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelResponse {
    /// The model that answered, when the provider or a [`FallbackModel`](super::FallbackModel)
    /// says (else the agent's model is assumed): what the call is priced as.
    pub model: Option<String>,
    /// The provider's id of this answer (`chatcmpl-…`, `resp_…`, `msg_…`), when it gives one:
    /// for logs and traces (`gen_ai.response.id`).
    pub id: Option<String>,
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
            model: None,
            id: None,
            message,
            usage,
            finish_reason,
        }
    }

    /// Sets the tokens this step used.
    ///
    /// ```
    /// use tinyagent::Usage;
    /// use tinyagent::testing::reply;
    ///
    /// let step = reply::text("Hello!").usage(Usage::new(120, 8));
    /// assert_eq!(step.usage.input_tokens, Some(120));
    /// ```
    #[must_use]
    pub fn usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_adds_up_and_serializes() {
        let mut total = Usage::new(1, 2);
        total += Usage::new(10, 20);
        assert_eq!(total.total_tokens(), Some(33));
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
