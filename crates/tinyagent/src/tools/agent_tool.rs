//! Agents as tools: the seed's agent-tool schema `{"message": string}` and the demo's form,
//! a tool from `(name, description, async fn(message) -> text)`.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::func::{FuncTool, validate_tool_name};
use super::schema::generate_schema;
use crate::error::{BoxError, ToolError};
use crate::tool::{BoxFuture, Handler, Tool, ToolContext, ToolHints};

/// The input of an agent used as a tool: one natural-language message.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AgentToolInput {
    /// 要发送给此 Agent 的消息
    pub message: String,
}

/// The input schema of every agent tool (the seed's):
/// `{"type":"object","properties":{"message":{"type":"string","description":"要发送给此 Agent 的消息"}},"required":["message"]}`.
pub fn agent_tool_schema() -> Value {
    generate_schema::<AgentToolInput>()
}

/// Reads the message out of an agent tool's raw input.
///
/// A JSON object gives its `message` field (and must have one); a JSON string is the message;
/// anything else, including text that is not JSON at all, is taken as the message itself.
pub fn parse_agent_message(input: &str) -> Result<String, ToolError> {
    match serde_json::from_str::<Value>(input) {
        Ok(Value::Object(_)) => super::decode_input::<AgentToolInput>(input).map(|i| i.message),
        Ok(Value::String(s)) => Ok(s),
        _ => Ok(input.to_owned()),
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
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let message = parse_agent_message(input)?;
            (self.0)(ctx.clone(), message)
                .await
                .map_err(ToolError::from_error)
        })
    }
}

/// Makes an agent-style tool from a function of one message (the seed demo's
/// `tools.NewAgentTool(name, description, fn)`): the tool takes the agent-tool schema
/// `{"message": string}`, accepts plain text as the message too, and returns the function's
/// text as it is (not JSON-encoded).
///
/// # Panics
///
/// If `name` is not a valid tool name; see [`validate_tool_name`].
///
/// ```
/// use tinyagent::{ToolContext, ToolError, tools};
///
/// let translator = tools::new_agent_tool_fn(
///     "translator",
///     "一个翻译专家，能进行中英文互译",
///     |_ctx: ToolContext, message: String| async move {
///         Ok::<_, ToolError>(format!("[翻译结果] {message} → Hello, World!"))
///     },
/// );
/// # tokio_test::block_on(async {
/// let ctx = ToolContext::default();
/// let out = translator.handle(&ctx, r#"{"message": "你好世界"}"#).await?;
/// assert_eq!(out, "[翻译结果] 你好世界 → Hello, World!");
/// assert_eq!(translator.handle(&ctx, "你好世界").await?, out);
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[track_caller]
pub fn new_agent_tool_fn<F, Fut, E>(
    name: impl Into<String>,
    description: impl Into<String>,
    f: F,
) -> Arc<dyn Tool>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, E>> + Send + 'static,
    E: Into<BoxError> + 'static,
{
    let name = name.into();
    if let Err(err) = validate_tool_name(&name) {
        panic!("tools::new_agent_tool_fn: {err}");
    }
    Arc::new(FuncTool::from_parts(
        name,
        description.into(),
        agent_tool_schema(),
        ToolHints::default(),
        MessageHandler(f),
    ))
}
