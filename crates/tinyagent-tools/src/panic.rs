//! [`call_catching_panics`]: a panic in a tool becomes an error result.

use std::any::Any;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::{Tool, ToolInput, ToolOutput};

/// Calls `tool` on `input`, turning a panic inside it into a [`Failed`](crate::error::ToolErrorKind::Failed)
/// error that reads `tool "{name}" panicked: {message}; the call has no result`, logged at
/// `error` level. What agents and the MCP server use so that one broken tool cannot take down
/// the run or the server.
///
/// The tool's `call` is called inside the guard too, so a panic before its future exists (in
/// a hand-written tool or a middleware) is caught like one while it runs. Panics that abort
/// (`panic = "abort"`) cannot be caught.
///
/// ```
/// use tinyagent::{ToolContext, ToolError, ToolErrorKind, tools};
///
/// let broken = tools::new_tool("broken", "always panics", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move {
///         if true { panic!("index out of bounds") }
///         Ok::<_, ToolError>(String::new())
///     });
/// # tokio_test::block_on(async {
/// let input = tools::ToolInput::from_text("{}");
/// let err = tools::call_catching_panics(broken.as_ref(), &ToolContext::new(), input)
///     .await
///     .unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::Failed);
/// assert_eq!(
///     err.to_string(),
///     "tool \"broken\" panicked: index out of bounds; the call has no result"
/// );
/// # });
/// ```
pub async fn call_catching_panics(
    tool: &dyn Tool,
    ctx: &ToolContext,
    input: ToolInput,
) -> Result<ToolOutput, ToolError> {
    let outcome = AssertUnwindSafe(async { tool.call(ctx, input).await })
        .catch_unwind()
        .await;
    outcome.unwrap_or_else(|panic| {
        let message = panic_message(panic.as_ref());
        tracing::error!(tool = tool.name(), panic = message, "tool panicked");
        Err(ToolError::failed(format!(
            "tool {:?} panicked: {message}; the call has no result",
            tool.name()
        )))
    })
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&'static str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a non-text panic payload"
    }
}
