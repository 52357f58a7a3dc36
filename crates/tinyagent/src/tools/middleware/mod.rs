//! Onion middleware around a tool's handler: [`ToolLayer`], [`ToolMiddleware`], [`wrap_tool`],
//! and the middleware that ships with tinyagent, one module each.
//!
//! | middleware | what it does |
//! |---|---|
//! | [`with_logging`] / [`LoggingLayer`] | one `tracing` span per call, OpenTelemetry GenAI names, redacted arguments and results on request |
//! | [`with_timeout`] / [`TimeoutLayer`] | a deadline per call; the tool's future is dropped when it passes |
//! | [`with_spawn_blocking`] / [`SpawnBlockingLayer`] | calls of a tool that blocks its thread run on Tokio's blocking pool, so a timeout returns on time |
//! | [`with_retry`] / [`RetryLayer`] | retries of retryable errors, exponential backoff with jitter, guided by the tool's hints |
//! | [`with_validation`] / [`ValidationLayer`] | arguments checked against the tool's schema before the handler runs |
//! | [`with_concurrency_limit`] / [`ConcurrencyLimitLayer`] | at most `n` calls of the tool in flight |
//! | [`with_rate_limit`] / [`RateLimitLayer`] | at most `n` calls of the tool started per period |
//! | [`with_cache`] / [`CacheLayer`] | results of read-only or idempotent tools cached by canonical input |
//! | [`with_output_budget`] / [`OutputBudgetLayer`] | long results cut to a budget, head and tail kept |
//! | [`with_approval`] / [`ApprovalLayer`] | a hook approves, denies or rewrites each call |
//!
//! Every `with_*` function returns a [`ToolMiddleware`], and every config builder converts into
//! one, so they mix freely in [`wrap_tool`]. A layer is applied once per tool, when the tool is
//! wrapped, so state such as a limit or a cache belongs to that one tool.
//!
//! A sensible order, outermost first: logging, approval, validation, cache, rate and
//! concurrency limits, retry, timeout, output budget. Logging outermost sees every call and
//! its final outcome; validation before retry means bad arguments are never retried; the
//! timeout inside retry bounds each attempt (put it outside to bound the whole call).

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tools::{Handler, Tool, ToolHints};
use crate::util::BoxFuture;

mod approval;
mod blocking;
mod budget;
mod cache;
mod canonical;
mod limit;
mod logging;
mod redact;
mod retry;
mod timeout;
#[cfg(feature = "tower")]
mod tower;
pub(crate) mod validation;

pub use approval::{Approval, ApprovalHook, ApprovalLayer, ApprovalRequest, with_approval};
pub use blocking::{SpawnBlockingLayer, with_spawn_blocking};
pub use budget::{OutputBudgetLayer, with_output_budget};
pub use cache::{CacheLayer, with_cache};
pub use canonical::canonical_json;
pub use limit::{ConcurrencyLimitLayer, RateLimitLayer, with_concurrency_limit, with_rate_limit};
pub use logging::{LoggingLayer, with_logging};
pub use redact::{redact_json, redact_text, redact_url};
pub use retry::{RetryLayer, with_retry};
pub use timeout::{TimeoutLayer, with_timeout};
#[cfg(feature = "tower")]
pub use tower::{HandlerService, ToolRequest};
pub use validation::{ValidationLayer, with_validation};

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
/// use tinyagent::tools::ToolLayer;
///
/// /// Upper-cases every result.
/// struct Shout;
///
/// struct ShoutHandler(Arc<dyn Handler>);
///
/// impl Handler for ShoutHandler {
///     fn handle<'a>(&'a self, ctx: &'a ToolContext, input: &'a str)
///         -> BoxFuture<'a, Result<String, ToolError>>
///     {
///         Box::pin(async move { Ok(self.0.handle(ctx, input).await?.to_uppercase()) })
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

/// A tool middleware (TinyAgent's `ToolMiddleware func(Handler) Handler`): a cheap, cloneable
/// handle on a [`ToolLayer`].
///
/// Middleware is applied with [`wrap_tool`], where the first one listed is the outermost. Make
/// one from a closure over the next handler with [`layer_fn`], or from any
/// [`ToolLayer`] with [`ToolMiddleware::new`].
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

struct FnLayer<F>(F);

impl<F> ToolLayer for FnLayer<F>
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

/// Makes a closure that wraps the next handler into a middleware, exactly as in the tutorial
/// (`func(Handler) Handler`), the way tower's `layer_fn` makes a closure into a layer.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{Handler, ToolContext, ToolError, handler_fn, tools};
///
/// let exclaim = tools::layer_fn(|next: Arc<dyn Handler>| -> Arc<dyn Handler> {
///     Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
///         let next = next.clone();
///         async move { Ok::<_, ToolError>(next.handle(&ctx, &input).await? + "!") }
///     }))
/// });
/// let echo = tools::new_tool("echo", "echo", serde_json::json!({"type": "object"}),
///     |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) });
/// let loud = tools::wrap_tool(echo, [exclaim]);
/// # tokio_test::block_on(async {
/// assert_eq!(loud.handle(&ToolContext::default(), "{}").await?, "{}!");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
pub fn layer_fn<F>(f: F) -> ToolMiddleware
where
    F: Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync + 'static,
{
    ToolMiddleware {
        layer: Arc::new(FnLayer(f)),
        name: "layer_fn",
    }
}

/// Calls a tool as a handler: the innermost layer of a wrapped tool.
struct ToolHandler(Arc<dyn Tool>);

impl Handler for ToolHandler {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        self.0.handle(ctx, input)
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

    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        self.handler.handle(ctx, input)
    }
}

/// Wraps a tool in middleware, onion-style (TinyAgent's `WrapTool`): the first middleware
/// listed is the outermost, so it sees the call first and the result last.
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
///     tools::layer_fn(move |next: Arc<dyn Handler>| -> Arc<dyn Handler> {
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
/// let wrapped = tools::wrap_tool(echo, [tag("outer"), tag("inner")]);
/// assert_eq!(wrapped.name(), "echo");
/// # tokio_test::block_on(async {
/// wrapped.handle(&ToolContext::default(), "{}").await?;
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// assert_eq!(*log.lock().unwrap(), ["outer in", "inner in", "inner out", "outer out"]);
/// ```
pub fn wrap_tool(
    tool: impl crate::tools::IntoTool,
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
