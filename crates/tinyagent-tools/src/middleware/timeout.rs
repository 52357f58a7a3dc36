//! [`with_timeout`]: a deadline per call; the tool's future is dropped when it passes.

use std::sync::Arc;
use std::time::Duration;

use super::layer::{ToolLayer, ToolMiddleware, require_runtime};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Bounds each call by a deadline, with real cancellation.
///
/// When the deadline passes, the call fails with a [`TimedOut`](crate::error::ToolErrorKind::TimedOut)
/// error saying `tool execution timed out after {d}`, and the future running the tool is
/// dropped, so the tool's work stops at its next `.await` instead of running on after the
/// caller has given up. Work the tool moved to another task or thread is out of reach, as
/// always with dropping.
///
/// Needs a Tokio runtime with its time driver; without one the call fails with an error
/// rather than panicking.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::{ToolContext, ToolError, ToolErrorKind, tools};
///
/// let slow = tools::new_tool("slow", "sleeps", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move {
///         tokio::time::sleep(Duration::from_secs(10)).await;
///         Ok::<_, ToolError>("done".to_owned())
///     });
/// let bounded = tools::wrap_tool(slow, [tools::with_timeout(Duration::from_millis(5))]);
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let err = bounded.handle(&ToolContext::default(), "{}").await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::TimedOut);
/// assert_eq!(err.to_string(), "tool execution timed out after 5ms");
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TimeoutLayer {
    duration: Duration,
}

impl TimeoutLayer {
    /// A deadline of `duration` per call.
    pub fn new(duration: Duration) -> Self {
        Self { duration }
    }

    /// The deadline.
    pub fn duration(&self) -> Duration {
        self.duration
    }
}

/// Bounds each call by `duration`; see [`TimeoutLayer`].
pub fn with_timeout(duration: Duration) -> ToolMiddleware {
    TimeoutLayer::new(duration).into()
}

impl ToolLayer for TimeoutLayer {
    fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(TimeoutHandler {
            next,
            duration: self.duration,
        })
    }
}

struct TimeoutHandler {
    next: Arc<dyn Handler>,
    duration: Duration,
}

impl Handler for TimeoutHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            require_runtime("with_timeout")?;
            match tokio::time::timeout(self.duration, self.next.call(ctx, input)).await {
                Ok(result) => result,
                Err(_elapsed) => Err(ToolError::timed_out(format!(
                    "tool execution timed out after {:?}",
                    self.duration
                ))),
            }
        })
    }
}
