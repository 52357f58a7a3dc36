//! The model behind an agent: the [`Model`] trait, what it is asked ([`ModelRequest`]) and
//! what it answers ([`ModelResponse`], or a stream of [`ModelEvent`]s).

use std::borrow::Cow;
use std::fmt;
use std::ops::{Add, AddAssign};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::BoxError;
use crate::message::{Message, Part};
use crate::tool::{BoxFuture, Tool};

/// A tool as a model sees it: name, description and input schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the tool's arguments (an object schema).
    pub input_schema: Value,
}

impl ToolDefinition {
    /// The definition of a tool.
    pub fn from_tool(tool: &dyn Tool) -> Self {
        Self {
            name: tool.name().to_owned(),
            description: tool.description().to_owned(),
            input_schema: tool.input_schema().clone(),
        }
    }
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the usual default).
    Auto,
    /// The model must not call tools.
    None,
    /// The model must call at least one tool.
    Required,
    /// The model must call this tool.
    Tool(String),
}

/// What a model is asked: the agent's instruction, the conversation so far, the tools it may
/// call, and sampling options (`None` leaves the provider's default).
///
/// The agent loop builds one request per invocation and appends to
/// [`messages`](Self::messages) between steps, so a provider sees the whole history every time.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelRequest {
    /// The agent's instruction (a system prompt); empty for none.
    pub instruction: String,
    /// The conversation, oldest first: user, assistant (text and tool calls) and tool (results)
    /// messages.
    pub messages: Vec<Message>,
    /// The tools the model may call in this invocation.
    pub tools: Vec<ToolDefinition>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// The most tokens the model may produce in this step.
    pub max_tokens: Option<u32>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
}

impl ModelRequest {
    /// A request with these messages and nothing else.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Sets the instruction.
    #[must_use]
    pub fn with_instruction(mut self, instruction: impl Into<String>) -> Self {
        self.instruction = instruction.into();
        self
    }

    /// Sets the tools.
    #[must_use]
    pub fn with_tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets the token limit of one step.
    #[must_use]
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn with_tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }
}

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

/// What a streaming model yields, shaped after server-sent-event deltas.
///
/// A stream yields any number of [`TextDelta`](Self::TextDelta)s, and for each tool call a
/// [`ToolCallStart`](Self::ToolCallStart) followed by [`ToolCallDelta`](Self::ToolCallDelta)s
/// carrying fragments of its JSON arguments (deltas of different calls may interleave; `id`
/// says which call a fragment belongs to). It **must end with exactly one**
/// [`Done`](Self::Done) carrying the complete, assembled response: the agent acts on `Done`
/// alone and treats the other events as progress to show. A stream that ends without `Done`
/// is an [`ModelErrorKind::InvalidResponse`] error.
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

/// The broad class of a model failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The provider could not be reached or failed on its side (network errors, 5xx).
    Unavailable,
    /// The provider refused for rate or quota reasons (429).
    RateLimited,
    /// The credentials were missing or refused (401, 403).
    Authentication,
    /// The provider rejected the request as malformed (400, unknown model).
    InvalidRequest,
    /// The prompt does not fit the model's context window.
    ContextLengthExceeded,
    /// The provider's answer could not be understood (bad JSON, a stream without an end).
    InvalidResponse,
    /// No answer within the deadline.
    TimedOut,
    /// The call was cancelled.
    Cancelled,
    /// Anything else.
    Other,
}

impl ModelErrorKind {
    /// A short, stable, snake-case name for the kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unavailable => "unavailable",
            Self::RateLimited => "rate_limited",
            Self::Authentication => "authentication",
            Self::InvalidRequest => "invalid_request",
            Self::ContextLengthExceeded => "context_length_exceeded",
            Self::InvalidResponse => "invalid_response",
            Self::TimedOut => "timed_out",
            Self::Cancelled => "cancelled",
            Self::Other => "other",
        }
    }

    /// Whether errors of this kind are retryable unless said otherwise: unavailability, rate
    /// limits and timeouts.
    pub const fn default_retryable(self) -> bool {
        matches!(self, Self::Unavailable | Self::RateLimited | Self::TimedOut)
    }
}

impl fmt::Display for ModelErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of a model call: a [`kind`](Self::kind), a retryable flag, a message and the
/// underlying error.
///
/// ```
/// use tinyagent::{ModelError, ModelErrorKind};
///
/// let err = ModelError::new(ModelErrorKind::RateLimited, "429 Too Many Requests");
/// assert!(err.is_retryable());
/// assert_eq!(err.to_string(), "rate_limited: 429 Too Many Requests");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct ModelError {
    kind: ModelErrorKind,
    message: Cow<'static, str>,
    retryable: bool,
    source: Option<BoxError>,
}

impl ModelError {
    /// An error of the given kind, retryable as the kind says by default.
    pub fn new(kind: ModelErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            kind,
            message: message.into(),
            retryable: kind.default_retryable(),
            source: None,
        }
    }

    /// An [`ModelErrorKind::InvalidResponse`] error.
    pub fn invalid_response(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::InvalidResponse, message)
    }

    /// An [`ModelErrorKind::Other`] error.
    pub fn other(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ModelErrorKind::Other, message)
    }

    /// Overrides the retryable flag.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// Attaches the underlying error.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The kind of failure.
    pub fn kind(&self) -> ModelErrorKind {
        self.kind
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether trying again may succeed.
    pub fn is_retryable(&self) -> bool {
        self.retryable
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A language model: given the instruction, the history and the tool definitions, it returns
/// the next assistant message.
///
/// Object safe; agents hold it as `Arc<dyn Model>`. Implement [`generate`](Self::generate);
/// a provider that can stream also overrides [`stream`](Self::stream), whose default is one
/// `generate` call replayed as events (see [`ModelResponse::into_events`]).
///
/// ```
/// use tinyagent::{BoxFuture, Message, Model, ModelError, ModelRequest, ModelResponse,
///     FinishReason, Usage};
///
/// /// Answers every question with the last user message, reversed.
/// struct Reverse;
///
/// impl Model for Reverse {
///     fn generate<'a>(&'a self, req: &'a ModelRequest)
///         -> BoxFuture<'a, Result<ModelResponse, ModelError>>
///     {
///         Box::pin(async move {
///             let last = req.messages.last().map(|m| m.text()).unwrap_or_default();
///             let text: String = last.chars().rev().collect();
///             Ok(ModelResponse::new(Message::assistant(text), Usage::default(), FinishReason::Stop))
///         })
///     }
/// }
/// # tokio_test::block_on(async {
/// let req = ModelRequest::new(vec![Message::user("abc")]);
/// assert_eq!(Reverse.generate(&req).await.unwrap().message.text(), "cba");
/// # });
/// ```
pub trait Model: Send + Sync {
    /// The model's name, for logs (`gen_ai.request.model`).
    fn name(&self) -> &str {
        "model"
    }

    /// Produces the next assistant message.
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>>;

    /// Produces the next assistant message as a stream of events that ends with
    /// [`ModelEvent::Done`]. The agent loop calls this one.
    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        Box::pin(stream::once(self.generate(req)).flat_map(|res| {
            let events: Vec<Result<ModelEvent, ModelError>> = match res {
                Ok(resp) => resp.into_events().into_iter().map(Ok).collect(),
                Err(err) => vec![Err(err)],
            };
            stream::iter(events)
        }))
    }
}

impl<M: Model + ?Sized> Model for Arc<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).generate(req)
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        (**self).stream(req)
    }
}

impl<M: Model + ?Sized> Model for Box<M> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        (**self).generate(req)
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        (**self).stream(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Role, ToolCall};

    struct Fixed(ModelResponse);

    impl Model for Fixed {
        fn generate<'a>(
            &'a self,
            _req: &'a ModelRequest,
        ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
            Box::pin(async move { Ok(self.0.clone()) })
        }
    }

    #[test]
    fn the_default_stream_replays_generate_as_events() {
        let message = Message::new(
            Role::Assistant,
            vec![
                Part::text("看看"),
                ToolCall::new("c1", "get_weather", r#"{"city":"北京"}"#).into(),
            ],
        );
        let response = ModelResponse::new(message, Usage::new(3, 4), FinishReason::ToolCalls);
        let model = Fixed(response.clone());
        let req = ModelRequest::new(vec![Message::user("hi")]);
        let events: Vec<ModelEvent> =
            futures::executor::block_on(model.stream(&req).map(|e| e.unwrap()).collect::<Vec<_>>());
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("看看".into()),
                ModelEvent::ToolCallStart {
                    id: "c1".into(),
                    name: "get_weather".into()
                },
                ModelEvent::ToolCallDelta {
                    id: "c1".into(),
                    arguments_fragment: r#"{"city":"北京"}"#.into()
                },
                ModelEvent::Done(response),
            ]
        );
    }

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
