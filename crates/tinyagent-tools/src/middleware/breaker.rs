//! [`CircuitBreakerLayer`]: a tool whose dependency keeps failing is refused at once for a
//! while instead of being called (and retried) on every call.

use std::sync::Arc;
use std::time::Duration;

use super::layer::ToolLayer;
use crate::breaker::{Breaker, DEFAULT_COOL_DOWN, DEFAULT_FAILURES};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// A circuit breaker per tool: after `failures` consecutive failing calls (errors that are
/// [retryable](ToolError::is_retryable): the tool's service down, slow or refusing) the breaker
/// opens and every call fails at once with an [`Unavailable`](crate::error::ToolErrorKind::Unavailable)
/// error, not retryable, saying when the tool will be tried again. After the cool-down one call
/// goes through as a probe: if it works the breaker closes, if not it opens again.
///
/// Errors that say nothing about the tool's health (bad arguments, a refusal, a denial) neither
/// count nor reset. Put it outside [`RetryLayer`](super::RetryLayer), so that one call's
/// retries count once, and a refused call is not retried.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::{ToolContext, ToolError, ToolErrorKind, tools};
/// use tinyagent::tools::middleware::CircuitBreakerLayer;
///
/// let flaky = tools::new_tool("quote", "a stock quote", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, _input: String| async move {
///         Err::<String, _>(ToolError::unavailable("upstream 503"))
///     });
/// let guarded = tools::wrap_tool(flaky, [CircuitBreakerLayer::new()
///     .failures(2)
///     .cool_down(Duration::from_secs(30))
///     .into()]);
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap().block_on(async {
/// let ctx = ToolContext::default();
/// for _ in 0..2 {
///     assert!(guarded.handle(&ctx, "{}").await.unwrap_err().message().contains("upstream 503"));
/// }
/// // Open: refused at once, without calling the tool.
/// let err = guarded.handle(&ctx, "{}").await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::Unavailable);
/// assert!(err.message().contains("circuit breaker is open after 2 consecutive failures"), "{err}");
/// # });
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CircuitBreakerLayer {
    failures: u32,
    cool_down: Duration,
}

impl Default for CircuitBreakerLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl CircuitBreakerLayer {
    /// A breaker that opens after 5 consecutive failures and probes again after 30 s.
    pub fn new() -> Self {
        Self {
            failures: DEFAULT_FAILURES,
            cool_down: DEFAULT_COOL_DOWN,
        }
    }

    /// Sets how many consecutive failures open the breaker (at least 1).
    #[must_use]
    pub fn failures(mut self, failures: u32) -> Self {
        self.failures = failures.max(1);
        self
    }

    /// Sets how long an open breaker refuses calls before it lets a probe through.
    #[must_use]
    pub fn cool_down(mut self, cool_down: Duration) -> Self {
        self.cool_down = cool_down;
        self
    }
}

impl ToolLayer for CircuitBreakerLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(BreakerHandler {
            next,
            name: tool.name().to_owned(),
            breaker: Breaker::new(self.failures, self.cool_down),
        })
    }
}

struct BreakerHandler {
    next: Arc<dyn Handler>,
    name: String,
    breaker: Breaker,
}

impl Handler for BreakerHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let permit = self.breaker.admit().map_err(|refusal| {
                ToolError::unavailable(format!("tool {:?} is not called: {refusal}", self.name))
                    .retryable(false)
            })?;
            let result = self.next.call(ctx, input).await;
            match &result {
                Ok(_) => permit.succeeded(),
                Err(err) if err.is_retryable() => permit.failed(),
                Err(_) => permit.neutral(),
            }
            result
        })
    }
}
