//! [`ApprovalLayer`]: a hook approves, denies or rewrites each call before it runs.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use super::layer::ToolLayer;
use crate::context::{Approval, ToolContext};
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolHints, ToolInput, ToolOutput};

/// One call awaiting approval: the tool, the arguments the model gave, the call id.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ApprovalRequest {
    /// The tool's name.
    pub tool: Arc<str>,
    /// The tool's effect hints, so a hook can, say, wave read-only calls through.
    pub hints: ToolHints,
    /// The raw arguments the model gave.
    pub arguments: String,
    /// The id the model gave the call, if any.
    pub call_id: Option<String>,
    /// The call's context, for anything else a hook needs (the session, the user).
    pub context: ToolContext,
}

/// Decides whether a call may run: a person at a prompt, a policy, a sandbox rule.
///
/// A closure `Fn(ApprovalRequest) -> impl Future<Output = Approval>` is made into one with
/// [`approval_fn`].
///
/// ```
/// use tinyagent::{ToolContext, ToolErrorKind, tools};
/// use tinyagent::tools::middleware::{Approval, ApprovalRequest};
///
/// // Only Beijing and Shanghai may be looked up; anything else becomes Beijing.
/// let policy = tools::middleware::approval_fn(|req: ApprovalRequest| async move {
///     if req.arguments.contains("Mars") {
///         Approval::deny("we do not report the weather on Mars")
///     } else if req.arguments.contains("北京") || req.arguments.contains("上海") {
///         Approval::Approve
///     } else {
///         Approval::rewrite(r#"{"city":"北京"}"#) // Beijing
///     }
/// });
/// let weather = tools::wrap_tool(tinyagent_demo::weather_tool(), [tools::middleware::ApprovalLayer::new(policy).into()]);
/// # tokio_test::block_on(async {
/// let ctx = ToolContext::default();
/// let err = weather.handle(&ctx, r#"{"city":"Mars"}"#).await.unwrap_err();
/// assert_eq!(err.kind(), ToolErrorKind::Denied);
/// assert_eq!(err.to_string(), "the call to get_weather was denied: we do not report the weather on Mars");
/// assert!(weather.handle(&ctx, r#"{"city":"Guangzhou"}"#).await.unwrap().contains("北京"));
/// # });
/// ```
pub trait ApprovalHook: Send + Sync + 'static {
    /// Reviews one call.
    fn review<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval>;
}

/// Makes a closure `Fn(ApprovalRequest) -> impl Future<Output = Approval>` into an
/// [`ApprovalHook`].
///
/// ```
/// use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
///
/// let layer = ApprovalLayer::new(approval_fn(|req| async move {
///     if req.hints.read_only { Approval::Approve } else { Approval::deny("writes need a person") }
/// }));
/// # let _ = layer;
/// ```
pub fn approval_fn<F, Fut>(f: F) -> ApprovalFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Approval> + Send + 'static,
{
    ApprovalFn(f)
}

/// A closure made into an [`ApprovalHook`]; made by [`approval_fn`].
#[derive(Clone, Copy)]
pub struct ApprovalFn<F>(F);

impl<F> fmt::Debug for ApprovalFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApprovalFn(..)")
    }
}

impl<F, Fut> ApprovalHook for ApprovalFn<F>
where
    F: Fn(ApprovalRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Approval> + Send + 'static,
{
    fn review<'a>(&'a self, request: ApprovalRequest) -> BoxFuture<'a, Approval> {
        Box::pin((self.0)(request))
    }
}

/// The approval middleware: every call goes past an [`ApprovalHook`] first.
///
/// Put it outside [validation](super::ValidationLayer) so rewritten arguments are checked
/// too, and inside [logging](crate::with_logging) so denials are logged.
#[derive(Clone)]
pub struct ApprovalLayer {
    hook: Arc<dyn ApprovalHook>,
}

impl fmt::Debug for ApprovalLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApprovalLayer").finish_non_exhaustive()
    }
}

impl ApprovalLayer {
    /// Approval by `hook`.
    pub fn new(hook: impl ApprovalHook) -> Self {
        Self {
            hook: Arc::new(hook),
        }
    }
}

impl ToolLayer for ApprovalLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(ApprovalHandler {
            next,
            hook: self.hook.clone(),
            tool_name: tool.name().into(),
            hints: tool.hints(),
        })
    }
}

struct ApprovalHandler {
    next: Arc<dyn Handler>,
    hook: Arc<dyn ApprovalHook>,
    tool_name: Arc<str>,
    hints: ToolHints,
}

impl Handler for ApprovalHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let request = ApprovalRequest {
                tool: self.tool_name.clone(),
                hints: self.hints,
                arguments: input.text().to_owned(),
                call_id: ctx.call_id().map(str::to_owned),
                context: ctx.clone(),
            };
            let approval = match (self.hook.review(request).await, ctx.decision()) {
                // The call was deferred to a person, who decided: the run is resumed. A hook
                // that approves, denies or rewrites (a policy) still has its say.
                (Approval::Defer(_), Some(decided)) => decided.clone(),
                (approval, _) => approval,
            };
            match approval {
                Approval::Approve => self.next.call(ctx, input).await,
                Approval::Rewrite(arguments) => {
                    tracing::info!(
                        gen_ai.tool.name = &*self.tool_name,
                        "tool call arguments rewritten on review"
                    );
                    self.next.call(ctx, ToolInput::from_text(arguments)).await
                }
                Approval::Defer(reason) => {
                    tracing::info!(gen_ai.tool.name = &*self.tool_name, reason = %reason, "tool call deferred on review");
                    let reason = reason.trim();
                    Err(ToolError::deferred(if reason.is_empty() {
                        format!("the call to {} waits for approval", self.tool_name)
                    } else {
                        reason.to_owned()
                    }))
                }
                Approval::Deny(reason) => {
                    tracing::info!(gen_ai.tool.name = &*self.tool_name, reason = %reason, "tool call denied on review");
                    let reason = reason.trim();
                    Err(ToolError::denied(if reason.is_empty() {
                        format!("the call to {} was denied", self.tool_name)
                    } else {
                        format!("the call to {} was denied: {reason}", self.tool_name)
                    }))
                }
            }
        })
    }
}
