//! [`with_spawn_blocking`]: calls of a tool that blocks its thread run on Tokio's blocking
//! thread pool, so that timeouts and the other calls of a step are not held up.

use std::sync::Arc;

use super::layer::ToolLayer;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Runs each call of the tool on Tokio's blocking thread pool
/// ([`tokio::task::spawn_blocking`]), driving the tool's future there to completion.
///
/// A tool that blocks the thread it runs on (`std::thread::sleep`, synchronous I/O, a long
/// computation without `.await`) holds up everything else on that thread: a
/// [`with_timeout`](crate::with_timeout) around it cannot fire until it returns, and in an
/// agent the other calls of the step wait too. Moved to a thread of its own, the call is
/// awaited like any other future: a timeout outside this layer returns on time and the
/// other calls go on.
///
/// What this cannot do is stop the blocking code: when the caller gives up (a timeout, a
/// cancelled run), the thread goes on until the tool returns, and its result is dropped. Tools
/// with side effects keep having them.
///
/// Agents apply this layer by themselves to tools whose
/// [hints](crate::ToolHints::blocking) say they block. Needs a multi-threaded or
/// current-thread Tokio runtime; without one the call fails with an error rather than
/// panicking.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::{ToolContext, ToolError, ToolErrorKind, tools};
///
/// let slow = tools::new_tool("slow", "blocks", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move {
///         std::thread::sleep(Duration::from_millis(300));
///         Ok::<_, ToolError>("done".to_owned())
///     });
/// let bounded = tools::wrap_tool(slow, [
///     tools::with_timeout(Duration::from_millis(20)),
///     tools::middleware::SpawnBlockingLayer::new().into(),
/// ]);
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let err = bounded.handle(&ToolContext::default(), "{}").await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::TimedOut);
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct SpawnBlockingLayer {
    _private: (),
}

impl SpawnBlockingLayer {
    /// The layer.
    pub fn new() -> Self {
        Self::default()
    }
}

impl ToolLayer for SpawnBlockingLayer {
    fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(BlockingHandler { next })
    }
}

struct BlockingHandler {
    next: Arc<dyn Handler>,
}

impl Handler for BlockingHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Box::pin(std::future::ready(Err(ToolError::unavailable(
                "with_spawn_blocking needs a Tokio runtime, and none is running",
            )
            .retryable(false))));
        };
        let next = self.next.clone();
        let ctx = ctx.clone();
        let task = runtime
            .clone()
            .spawn_blocking(move || runtime.block_on(async move { next.call(&ctx, input).await }));
        Box::pin(async move {
            match task.await {
                Ok(result) => result,
                Err(err) if err.is_panic() => {
                    std::panic::resume_unwind(err.into_panic());
                }
                Err(_) => Err(ToolError::cancelled(
                    "the tool's blocking task was cancelled (the runtime is shutting down)",
                )),
            }
        })
    }
}
