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
//! The functions [`with_logging`](crate::with_logging),
//! [`with_timeout`](crate::with_timeout), [`with_retry`](crate::with_retry) and
//! [`wrap_tool`](crate::wrap_tool) are shortcuts onto these. A layer is applied once
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

mod approval;
mod blocking;
mod breaker;
mod cache;
pub(crate) mod canonical;
mod layer;
mod limit;
pub(crate) mod logging;
mod output_limit;
pub(crate) mod retry;
mod stack;
pub(crate) mod timeout;
#[cfg(feature = "tower")]
mod tower;
#[doc(hidden)]
pub mod validation;
pub(crate) mod wrap;

pub use crate::context::decision::Approval;
pub use approval::{ApprovalFn, ApprovalHook, ApprovalLayer, ApprovalRequest, approval_fn};
pub use blocking::SpawnBlockingLayer;
pub use breaker::CircuitBreakerLayer;
pub use cache::CacheLayer;
pub use layer::{LayerFn, ToolLayer, ToolMiddleware, layer_fn};
pub use limit::{ConcurrencyLimitLayer, RateLimitLayer};
pub use logging::LoggingLayer;
pub use output_limit::OutputLimitLayer;
pub use retry::RetryLayer;
pub use stack::ToolStack;
pub use timeout::TimeoutLayer;
#[cfg(feature = "tower")]
pub use tower::{HandlerService, ToolRequest};
pub use validation::ValidationLayer;
pub use wrap::WrappedTool;
