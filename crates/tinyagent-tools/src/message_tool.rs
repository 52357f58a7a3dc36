//! Agent-style tools: the agent-tool schema `{"message": string}`, reading a message out of
//! a call, and [`new_agent_tool_fn`], a tool from `(name, description, async fn(message) ->
//! text)`. An agent made into a tool (tinyagent's `new_agent_tool`) takes the same input.

use std::future::Future;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::{BoxError, ToolError};
use crate::util::BoxFuture;
use crate::{
    FuncTool, Handler, ToolHints, ToolInput, ToolOutput, generate_schema, validate_tool_name,
};

/// The input of an agent used as a tool: one natural-language message.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AgentToolInput {
    /// The task or question for the agent, in plain words.
    pub message: String,
}

/// The description of an agent tool's `message` parameter unless one is set with
/// `AgentTool::message_description`.
pub const DEFAULT_AGENT_MESSAGE_DESCRIPTION: &str =
    "The task or question for the agent, in plain words.";

/// The input schema of an agent tool with the default description:
/// `{"type":"object","properties":{"message":{"type":"string","description":"The task or question for the agent, in plain words."}},"required":["message"]}`.
pub fn agent_tool_schema() -> Value {
    generate_schema::<AgentToolInput>()
}

/// The input schema of an agent tool whose `message` parameter has this description (in the
/// language of the model's other instructions, say).
///
/// ```
/// use tinyagent::tools::agent_tool_schema_described;
///
/// let schema = agent_tool_schema_described("The message to send to this agent");
/// assert_eq!(schema["properties"]["message"]["description"], "The message to send to this agent");
/// assert_eq!(schema["required"], serde_json::json!(["message"]));
/// ```
pub fn agent_tool_schema_described(description: &str) -> Value {
    let mut schema = agent_tool_schema();
    if let Some(message) = schema.pointer_mut("/properties/message") {
        message["description"] = Value::String(description.to_owned());
    }
    schema
}

/// Reads the message out of an agent tool's raw input.
///
/// A JSON object gives its `message` field (and must have one); a JSON string is the message;
/// anything else, including text that is not JSON at all, is taken as the message itself,
/// except text that starts like a JSON object (`{`) and is not a valid one, which is refused:
/// it is a broken call, not a message.
///
/// ```
/// use tinyagent::tools::parse_agent_message;
///
/// assert_eq!(parse_agent_message(r#"{"message": "hi"}"#).unwrap(), "hi");
/// assert_eq!(parse_agent_message(r#""hi""#).unwrap(), "hi");
/// assert_eq!(parse_agent_message("hi there").unwrap(), "hi there");
/// assert!(parse_agent_message(r#"{"message": "hi""#).is_err());
/// assert!(parse_agent_message(r#"{"message":"a","message":"b"}"#).is_err());
/// ```
pub fn parse_agent_message(input: &str) -> Result<String, ToolError> {
    let trimmed = input.trim();
    match crate::parse_arguments(trimmed) {
        Ok(Value::Object(map)) => serde_json::from_value::<AgentToolInput>(Value::Object(map))
            .map(|i| i.message)
            .map_err(|e| {
                ToolError::invalid_input(format!(
                    "invalid arguments: {}; expected {{\"message\": \"...\"}}",
                    crate::util::cut(&e.to_string(), crate::arguments::MAX_PROBLEM_CHARS)
                ))
            }),
        Ok(Value::String(s)) => Ok(s),
        Err(err) if trimmed.starts_with('{') => Err(err),
        _ => Ok(input.to_owned()),
    }
}

/// The message of an agent tool's input: its `message` when validation read the text as an
/// object holding one, else what [`parse_agent_message`] reads from the text.
#[doc(hidden)]
pub fn message_of(input: &ToolInput) -> Result<String, ToolError> {
    match input.value() {
        Some(Value::Object(map)) => match map.get("message") {
            Some(Value::String(message)) if map.len() == 1 => Ok(message.clone()),
            _ => parse_agent_message(input.text()),
        },
        _ => parse_agent_message(input.text()),
    }
}

/// The handler of a tool made by [`new_agent_tool_fn`].
pub struct MessageHandler<F>(F);

impl<F, Fut, E> Handler for MessageHandler<F>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync,
    Fut: Future<Output = Result<String, E>> + Send,
    E: Into<BoxError>,
{
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let message = message_of(&input)?;
            (self.0)(ctx.clone(), message)
                .await
                .map(ToolOutput::text)
                .map_err(ToolError::from_error)
        })
    }
}

impl<F> FuncTool<MessageHandler<F>> {
    /// Returns the tool with this description of its `message` parameter (default
    /// [`DEFAULT_AGENT_MESSAGE_DESCRIPTION`]).
    #[must_use]
    pub fn message_description(mut self, description: impl AsRef<str>) -> Self {
        self.set_schema(agent_tool_schema_described(description.as_ref()));
        self
    }
}

/// Makes an agent-style tool from a function of one message: the tool takes the agent-tool
/// schema `{"message": string}` (its description settable with
/// [`message_description`](FuncTool::message_description)), accepts plain text as the message
/// too, and returns the function's text as it is (not JSON-encoded).
///
/// # Panics
///
/// If `name` is not a valid tool name; see [`validate_tool_name`].
///
/// ```
/// use tinyagent::{Tool, ToolContext, ToolError, tools};
///
/// let translator = tools::new_agent_tool_fn(
///     "translator",
///     "A translation expert that translates between French and English",
///     |_ctx: ToolContext, message: String| async move {
///         Ok::<_, ToolError>(format!("[translation] {message} → Hello, World!"))
///     },
/// )
/// .message_description("The message to send to this agent");
/// # tokio_test::block_on(async {
/// let ctx = ToolContext::default();
/// let out = translator.handle(&ctx, r#"{"message": "Bonjour le monde"}"#).await?;
/// assert_eq!(out, "[translation] Bonjour le monde → Hello, World!");
/// assert_eq!(translator.handle(&ctx, "Bonjour le monde").await?, out);
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[track_caller]
pub fn new_agent_tool_fn<F, Fut, E>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> FuncTool<MessageHandler<F>>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    let name = name.into();
    if let Err(err) = validate_tool_name(&name) {
        panic!("tools::new_agent_tool_fn: {err}");
    }
    FuncTool::from_parts(
        name,
        description.into(),
        agent_tool_schema(),
        ToolHints::default().plain_text(true),
        MessageHandler(f),
    )
}
