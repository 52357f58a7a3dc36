//! [`OutputLimitLayer`]: long results cut to a limit of characters, head and tail kept.

use std::sync::Arc;

use super::layer::ToolLayer;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Cuts results longer than a limit of characters, keeping the head and the tail, with a
/// note in the middle saying how much was dropped; media that do not fit are described
/// instead of sent ([`ToolOutput::limited`]). Errors pass through unchanged.
///
/// ```
/// use tinyagent::{handler_fn, ToolContext, ToolError, tools};
///
/// let big = tools::new_tool("dump", "dumps", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>("x".repeat(10_000)) });
/// let small = tools::wrap_tool(big, [tools::middleware::OutputLimitLayer::new(200).into()]);
/// # tokio_test::block_on(async {
/// let out = small.handle(&ToolContext::default(), "{}").await?;
/// assert!(out.chars().count() <= 200);
/// assert!(out.contains("characters omitted"), "{out}");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
#[derive(Debug, Clone, Copy)]
pub struct OutputLimitLayer {
    max_chars: usize,
}

impl OutputLimitLayer {
    /// Results are cut to at most `max_chars` characters.
    pub fn new(max_chars: usize) -> Self {
        Self { max_chars }
    }
}

impl ToolLayer for OutputLimitLayer {
    fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(LimitHandler {
            next,
            max_chars: self.max_chars,
        })
    }
}

struct LimitHandler {
    next: Arc<dyn Handler>,
    max_chars: usize,
}

impl Handler for LimitHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move { Ok(self.next.call(ctx, input).await?.limited(self.max_chars)) })
    }
}
