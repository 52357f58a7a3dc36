//! The middleware seam: [`ToolLayer`] (tower's `Layer` for tools), the [`ToolMiddleware`]
//! handle on one, and [`layer_fn`] for a closure.

use std::fmt;
use std::sync::Arc;

use crate::error::ToolError;
use crate::{Handler, Tool};

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
/// [`wrap_tool`]: crate::wrap_tool
#[derive(Clone)]
pub struct ToolMiddleware {
    layer: Arc<dyn ToolLayer>,
    pub(super) name: &'static str,
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
