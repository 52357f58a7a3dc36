//! [`wrap_tool`]: a tool with middleware around its handler, as a [`WrappedTool`].

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::layer::ToolMiddleware;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolHints};
use crate::{ToolInput, ToolOutput};

/// Calls a tool as a handler: the innermost layer of a wrapped tool.
struct ToolHandler(Arc<dyn Tool>);

impl Handler for ToolHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.0.call(ctx, input)
    }
}

/// A tool with middleware around its handler; made by [`wrap_tool`]. It keeps the inner tool's
/// name, description, schema and hints.
pub struct WrappedTool {
    inner: Arc<dyn Tool>,
    handler: Arc<dyn Handler>,
}

impl fmt::Debug for WrappedTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WrappedTool")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl WrappedTool {
    /// The tool inside the middleware.
    pub fn inner(&self) -> &Arc<dyn Tool> {
        &self.inner
    }
}

impl Tool for WrappedTool {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn input_schema(&self) -> &Value {
        self.inner.input_schema()
    }

    fn hints(&self) -> ToolHints {
        self.inner.hints()
    }

    fn title(&self) -> Option<&str> {
        self.inner.title()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.inner.output_schema()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        self.handler.call(ctx, input)
    }
}

/// Wraps a tool in middleware, onion-style: the first middleware listed is the outermost, so
/// it sees the call first and the result last.
///
/// The wrapped tool keeps the tool's name, description, schema, hints, title and output
/// schema.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tinyagent::{handler_fn, Handler, ToolContext, ToolError, tools};
///
/// let log = Arc::new(Mutex::new(Vec::new()));
/// let tag = |name: &'static str| {
///     let log = log.clone();
///     tools::middleware::layer_fn(move |next: Arc<dyn Handler>| -> Arc<dyn Handler> {
///         let log = log.clone();
///         Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
///             let (next, log) = (next.clone(), log.clone());
///             async move {
///                 log.lock().unwrap().push(format!("{name} in"));
///                 let out = next.handle(&ctx, &input).await;
///                 log.lock().unwrap().push(format!("{name} out"));
///                 out
///             }
///         }))
///     })
/// };
/// let echo = tools::new_tool("echo", "echo", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) });
/// let wrapped = tools::wrap_tool(echo, [tag("outer").into(), tag("inner").into()]);
/// assert_eq!(wrapped.name(), "echo");
/// # tokio_test::block_on(async {
/// wrapped.handle(&ToolContext::default(), "{}").await?;
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// assert_eq!(*log.lock().unwrap(), ["outer in", "inner in", "inner out", "outer out"]);
/// ```
pub fn wrap_tool(
    tool: impl crate::IntoTool,
    middlewares: impl IntoIterator<Item = ToolMiddleware>,
) -> Arc<dyn Tool> {
    let tool = tool.into_tool();
    let middlewares: Vec<ToolMiddleware> = middlewares.into_iter().collect();
    if middlewares.is_empty() {
        return tool;
    }
    let mut handler: Arc<dyn Handler> = Arc::new(ToolHandler(tool.clone()));
    for mw in middlewares.iter().rev() {
        handler = mw.apply(tool.as_ref(), handler);
    }
    Arc::new(WrappedTool {
        inner: tool,
        handler,
    })
}
