//! What a model is asked: [`ModelRequest`], with the [`ToolDefinition`]s it may call and the
//! [`ToolChoice`].

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ResponseFormat;
use crate::message::Message;

/// A tool as a model sees it: name, description and input schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The name the model calls the tool by.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema of the tool's arguments (an object schema).
    pub input_schema: Value,
    /// A human-readable name for user interfaces (not sent to models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The JSON Schema of the tool's structured content, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
}

impl ToolDefinition {
    /// A definition from its parts.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema,
            title: None,
            output_schema: None,
        }
    }

    /// Returns the definition with a human-readable title.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Returns the definition with the JSON Schema of the tool's structured content.
    #[must_use]
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
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
/// call, and sampling options (`None` leaves the provider's default; not every model takes
/// every option, see [`Model::supports`](super::Model::supports)).
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
    /// The tools the model may call in this invocation (shared: every step of an invocation,
    /// and every invocation of an agent without resolvers, sends the same list).
    pub tools: Arc<[ToolDefinition]>,
    /// How the model picks its tokens (temperature, nucleus, stop sequences, seed,
    /// penalties).
    pub sampling: super::Sampling,
    /// The most tokens the model may produce in this step.
    pub max_tokens: Option<u32>,
    /// Whether and which tool the model must call.
    pub tool_choice: Option<ToolChoice>,
    /// The JSON shape the final answer must have, if any; a provider sends it as its
    /// structured-output setting (or a grammar), see [`ResponseFormat`].
    pub response_format: Option<ResponseFormat>,
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
    pub fn instruction(mut self, instruction: impl Into<String>) -> Self {
        self.instruction = instruction.into();
        self
    }

    /// Sets the tools (to share a list between requests, set the field to a clone of it).
    #[must_use]
    pub fn tools(mut self, tools: Vec<ToolDefinition>) -> Self {
        self.tools = tools.into();
        self
    }

    /// Sets the temperature (a shortcut into [`sampling`](Self::sampling)).
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.sampling.temperature = Some(temperature);
        self
    }

    /// Sets how the model picks its tokens.
    #[must_use]
    pub fn sampling(mut self, sampling: super::Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Sets the token limit of one step.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }

    /// Sets the JSON shape the final answer must have.
    #[must_use]
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }
}
