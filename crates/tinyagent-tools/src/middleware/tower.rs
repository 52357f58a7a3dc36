//! Interop with tower (feature `tower`): a tower [`Layer`] as tool middleware, and a tool's
//! handler as a tower [`Service`].

use std::fmt;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::layer::{ToolLayer, ToolMiddleware};
use crate::context::ToolContext;
use crate::error::{BoxError, ToolError};
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// One tool call as a tower request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolRequest {
    /// The name of the tool being called.
    pub tool: Arc<str>,
    /// The call's context.
    pub context: ToolContext,
    /// The raw arguments.
    pub input: ToolInput,
}

impl ToolRequest {
    /// A request to call `tool` with `input`.
    pub fn new(
        tool: impl Into<Arc<str>>,
        context: ToolContext,
        input: impl Into<ToolInput>,
    ) -> Self {
        Self {
            tool: tool.into(),
            context,
            input: input.into(),
        }
    }
}

/// A [`Handler`] as a tower [`Service`]: what a tower layer wraps when it is used through
/// [`ToolMiddleware::from_tower`]. Always ready; cheap to clone.
#[derive(Clone)]
pub struct HandlerService {
    handler: Arc<dyn Handler>,
}

impl fmt::Debug for HandlerService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerService").finish_non_exhaustive()
    }
}

impl HandlerService {
    /// Serves calls with `handler`.
    pub fn new(handler: Arc<dyn Handler>) -> Self {
        Self { handler }
    }
}

impl Service<ToolRequest> for HandlerService {
    type Response = ToolOutput;
    type Error = ToolError;
    type Future = BoxFuture<'static, Result<ToolOutput, ToolError>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), ToolError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: ToolRequest) -> Self::Future {
        let handler = self.handler.clone();
        Box::pin(async move { handler.call(&request.context, request.input).await })
    }
}

struct TowerLayer<L>(L);

impl<L, S> ToolLayer for TowerLayer<L>
where
    L: Layer<HandlerService, Service = S> + Send + Sync + 'static,
    S: Service<ToolRequest, Response = ToolOutput> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(TowerHandler {
            service: Mutex::new(self.0.layer(HandlerService::new(next))),
            tool_name: tool.name().into(),
        })
    }
}

struct TowerHandler<S> {
    service: Mutex<S>,
    tool_name: Arc<str>,
}

impl<S> Handler for TowerHandler<S>
where
    S: Service<ToolRequest, Response = ToolOutput> + Clone + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send,
{
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        // tower's discipline: clone the service, wait until it is ready, then call it.
        let mut service = self
            .service
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let request = ToolRequest::new(self.tool_name.clone(), ctx.clone(), input);
        Box::pin(async move {
            poll_fn(|cx| service.poll_ready(cx))
                .await
                .map_err(ToolError::from_error)?;
            service.call(request).await.map_err(ToolError::from_error)
        })
    }
}

impl ToolMiddleware {
    /// A tower [`Layer`] as tool middleware.
    ///
    /// The layer wraps a [`HandlerService`] (the next handler inward) and must produce a
    /// cloneable `Service<ToolRequest, Response = String>`. Its errors are converted with
    /// [`ToolError::from_error`]: a [`ToolError`] keeps its kind, anything else (such as
    /// tower's own `BoxError`s) becomes a [`Failed`](crate::error::ToolErrorKind::Failed) error. The
    /// layer is applied once per wrapped tool; each call clones the service, waits for
    /// `poll_ready`, then calls it.
    ///
    /// ```
    /// use tinyagent::tools::ToolInput;
    /// use tinyagent::{ToolContext, ToolError, tools};
    /// use tinyagent::tools::middleware::{ToolMiddleware, ToolRequest};
    /// use tower_layer::layer_fn;
    /// use tower_service::Service;
    /// use std::task::{Context, Poll};
    ///
    /// /// A tower service that upper-cases city names before the tool sees them.
    /// #[derive(Clone)]
    /// struct Upper<S>(S);
    ///
    /// impl<S: Service<ToolRequest>> Service<ToolRequest> for Upper<S> {
    ///     type Response = S::Response;
    ///     type Error = S::Error;
    ///     type Future = S::Future;
    ///     fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
    ///         self.0.poll_ready(cx)
    ///     }
    ///     fn call(&mut self, mut req: ToolRequest) -> S::Future {
    ///         req.input = ToolInput::from_text(req.input.text().to_uppercase());
    ///         self.0.call(req)
    ///     }
    /// }
    ///
    /// let echo = tools::new_tool("echo", "echo", serde_json::json!({"type": "object"}),
    ///     |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) });
    /// let loud = tools::wrap_tool(echo, [ToolMiddleware::from_tower(layer_fn(Upper))]);
    /// # tokio_test::block_on(async {
    /// assert_eq!(loud.handle(&ToolContext::default(), r#"{"city":"paris"}"#).await?, r#"{"CITY":"PARIS"}"#);
    /// # Ok::<(), ToolError>(())
    /// # }).unwrap();
    /// ```
    pub fn from_tower<L, S>(layer: L) -> Self
    where
        L: Layer<HandlerService, Service = S> + Send + Sync + 'static,
        S: Service<ToolRequest, Response = ToolOutput> + Clone + Send + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send,
    {
        let mut mw = Self::new(TowerLayer(layer));
        mw.name = std::any::type_name::<L>();
        mw
    }
}
