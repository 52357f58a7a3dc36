//! Onion middleware around a tool's handler: [`ToolLayer`], [`ToolMiddleware`], the
//! [`ToolStack`] builder, and the middleware that ships with tinyagent, one module each.
//!
//! | layer | what it does |
//! |---|---|
//! | [`LoggingLayer`] | one `tracing` span per call, OpenTelemetry GenAI names, redacted arguments and results on request |
//! | [`TimeoutLayer`] | a deadline per call; the tool's future is dropped when it passes |
//! | [`SpawnBlockingLayer`] | calls of a tool that blocks its thread run on Tokio's blocking pool, so a timeout returns on time |
//! | [`RetryLayer`] | retries of retryable errors, exponential backoff with jitter, guided by the tool's hints |
//! | [`ValidationLayer`] | arguments checked against the tool's schema before the handler runs |
//! | [`ConcurrencyLimitLayer`] | at most `n` calls of the tool in flight |
//! | [`RateLimitLayer`] | at most `n` calls of the tool started per period |
//! | [`CacheLayer`] | whole outputs (text, parts, structured content) of read-only or idempotent tools, cached by canonical input |
//! | [`OutputLimitLayer`] | long outputs cut to a limit of characters, head and tail kept |
//! | [`ApprovalLayer`] | a hook approves, denies or rewrites each call |
//! | [`CircuitBreakerLayer`] | after repeated failures the tool is refused at once for a while, then probed |
//!
//! The functions [`with_logging`](crate::tools::with_logging),
//! [`with_timeout`](crate::tools::with_timeout), [`with_retry`](crate::tools::with_retry) and
//! [`wrap_tool`](crate::tools::wrap_tool) are shortcuts onto these. A layer is applied once
//! per tool, when the tool is wrapped, so state such as a limit or a cache belongs to that one
//! tool.
//!
//! A sensible order, outermost first: logging, approval, validation, cache, rate and
//! concurrency limits, circuit breaker, retry, timeout, output limit. Logging outermost sees every call and
//! its final outcome; validation before retry means bad arguments are never retried; the
//! timeout inside retry bounds each attempt (put it outside to bound the whole call).
//!
//! ```
//! use std::time::Duration;
//! use tinyagent::tools::middleware::{CacheLayer, LoggingLayer, ToolStack, ValidationLayer};
//! # use tinyagent::{ToolContext, ToolError, tools};
//! # let tool = tools::new_tool("echo", "echoes", serde_json::json!({"type": "object"}),
//! #     |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) });
//!
//! let tool = ToolStack::new()
//!     .layer(LoggingLayer::new())
//!     .layer(ValidationLayer::new())
//!     .layer(CacheLayer::new().ttl(Duration::from_secs(60)))
//!     .retry(2)
//!     .timeout(Duration::from_secs(5))
//!     .wrap(tool);
//! # let _ = tool;
//! ```

use std::fmt;
use std::sync::Arc;

use crate::error::ToolError;
use crate::{Handler, Tool};

mod approval;
mod blocking;
mod breaker;
mod cache;
pub(crate) mod canonical;
mod limit;
pub(crate) mod logging;
mod output_limit;
pub(crate) mod retry;
pub(crate) mod timeout;
#[cfg(feature = "tower")]
mod tower;
pub(crate) mod validation;
pub(crate) mod wrap;

pub use crate::context::decision::Approval;
pub use approval::{ApprovalFn, ApprovalHook, ApprovalLayer, ApprovalRequest, approval_fn};
pub use blocking::SpawnBlockingLayer;
pub use breaker::CircuitBreakerLayer;
pub use cache::CacheLayer;
pub use limit::{ConcurrencyLimitLayer, RateLimitLayer};
pub use logging::LoggingLayer;
pub use output_limit::OutputLimitLayer;
pub use retry::RetryLayer;
pub use timeout::TimeoutLayer;
#[cfg(feature = "tower")]
pub use tower::{HandlerService, ToolRequest};
pub use validation::ValidationLayer;
pub use wrap::WrappedTool;

/// Fails with a clear error instead of panicking when there is no Tokio runtime to drive
/// timers.
pub(crate) fn require_runtime(middleware: &str) -> Result<(), ToolError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        Ok(())
    } else {
        Err(ToolError::unavailable(format!(
            "{middleware} needs a Tokio runtime with its time driver enabled, and none is running"
        ))
        .retryable(false))
    }
}

/// A middleware's behaviour, in the shape of tower's `Layer`: given the tool being wrapped and
/// the next handler inward, return the handler that runs in its place.
///
/// The tool is there so the layer can read its name (for logs), schema (for validation) or
/// hints (for caching) once, when the tool is wrapped, rather than on every call.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{BoxFuture, Handler, Tool, ToolContext, ToolError};
/// use tinyagent::tools::middleware::ToolLayer;
/// use tinyagent::tools::{ToolInput, ToolOutput};
///
/// /// Upper-cases every result.
/// struct Shout;
///
/// struct ShoutHandler(Arc<dyn Handler>);
///
/// impl Handler for ShoutHandler {
///     fn call<'a>(&'a self, ctx: &'a ToolContext, input: ToolInput)
///         -> BoxFuture<'a, Result<ToolOutput, ToolError>>
///     {
///         Box::pin(async move {
///             let output = self.0.call(ctx, input).await?;
///             Ok(ToolOutput::text(output.as_text().to_uppercase()))
///         })
///     }
/// }
///
/// impl ToolLayer for Shout {
///     fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
///         Arc::new(ShoutHandler(next))
///     }
/// }
/// ```
pub trait ToolLayer: Send + Sync + 'static {
    /// Wraps `next`, the handler of `tool` (or of the middleware inside this one).
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler>;
}

/// A tool middleware: a cheap, cloneable handle on a [`ToolLayer`].
///
/// Middleware is applied with [`wrap_tool`], where the first one listed is the outermost. Make
/// one from a closure over the next handler with [`layer_fn`], or from any
/// [`ToolLayer`] with [`ToolMiddleware::new`].
///
/// [`wrap_tool`]: super::wrap_tool
#[derive(Clone)]
pub struct ToolMiddleware {
    layer: Arc<dyn ToolLayer>,
    name: &'static str,
}

impl fmt::Debug for ToolMiddleware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ToolMiddleware({})", self.name)
    }
}

impl<L: ToolLayer> From<L> for ToolMiddleware {
    fn from(layer: L) -> Self {
        Self::new(layer)
    }
}

/// Makes a closure over the next handler, `Fn(Arc<dyn Handler>) -> Arc<dyn Handler>`, into a
/// [`ToolLayer`], the way tower's `layer_fn` does.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{Handler, ToolContext, ToolError, handler_fn, tools};
/// use tinyagent::tools::middleware::layer_fn;
///
/// // Answers "pong" to "ping" without calling the tool.
/// let pong = layer_fn(|next: Arc<dyn Handler>| -> Arc<dyn Handler> {
///     Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
///         let next = next.clone();
///         async move {
///             if input == "ping" { return Ok("pong".to_owned()); }
///             next.handle(&ctx, &input).await
///         }
///     }))
/// });
/// let echo = tools::new_tool("echo", "echoes", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) });
/// let tool = tools::wrap_tool(echo, [pong.into()]);
/// # tokio_test::block_on(async {
/// assert_eq!(tool.handle(&ToolContext::new(), "ping").await?, "pong");
/// assert_eq!(tool.handle(&ToolContext::new(), "hi").await?, "hi");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn layer_fn<F>(f: F) -> LayerFn<F>
where
    F: Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync + 'static,
{
    LayerFn(f)
}

/// A closure made into a [`ToolLayer`]; made by [`layer_fn`].
#[derive(Clone, Copy)]
pub struct LayerFn<F>(F);

impl<F> fmt::Debug for LayerFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LayerFn(..)")
    }
}

impl<F> ToolLayer for LayerFn<F>
where
    F: Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync + 'static,
{
    fn layer(&self, _tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        (self.0)(next)
    }
}

impl ToolMiddleware {
    /// A middleware from a [`ToolLayer`].
    pub fn new<L: ToolLayer>(layer: L) -> Self {
        Self {
            layer: Arc::new(layer),
            name: std::any::type_name::<L>(),
        }
    }

    /// Applies this middleware alone: wraps `next`, the handler of `tool`.
    pub fn apply(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        self.layer.layer(tool, next)
    }
}

/// Middleware stacked for a tool, outermost first: tower's `ServiceBuilder` for tools.
///
/// [`layer`](Self::layer) adds any [`ToolLayer`] (or [`ToolMiddleware`]); [`logging`],
/// [`timeout`] and [`retry`] add the usual three. [`wrap`](Self::wrap) applies the stack to a
/// tool, as [`wrap_tool`](crate::tools::wrap_tool) does; a stack can wrap many tools, each
/// getting its own layer state (its own cache, its own limits).
///
/// [`logging`]: Self::logging
/// [`timeout`]: Self::timeout
/// [`retry`]: Self::retry
#[derive(Clone, Debug, Default)]
pub struct ToolStack {
    layers: Vec<ToolMiddleware>,
}

impl ToolStack {
    /// An empty stack: wrapping with it changes nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `layer` inside the layers added before it.
    #[must_use]
    pub fn layer(mut self, layer: impl Into<ToolMiddleware>) -> Self {
        self.layers.push(layer.into());
        self
    }

    /// Adds a [`LoggingLayer`].
    #[must_use]
    pub fn logging(self) -> Self {
        self.layer(LoggingLayer::new())
    }

    /// Adds a [`TimeoutLayer`] of `duration`.
    #[must_use]
    pub fn timeout(self, duration: std::time::Duration) -> Self {
        self.layer(TimeoutLayer::new(duration))
    }

    /// Adds a [`RetryLayer`] of up to `max_retries` retries.
    #[must_use]
    pub fn retry(self, max_retries: u32) -> Self {
        self.layer(RetryLayer::new(max_retries))
    }

    /// The tool with every layer of the stack around it.
    pub fn wrap(&self, tool: impl crate::tools::IntoTool) -> Arc<dyn Tool> {
        wrap::wrap_tool(tool, self.layers.iter().cloned())
    }
}
