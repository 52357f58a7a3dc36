//! TinyAgent's `tools` package: how tools are made, adapted and wrapped.
//!
//! - [`new_func`]: a typed async function becomes a tool, its input schema derived from the
//!   input type (TinyAgent's `NewFunc`);
//! - [`new_tool`]: a hand-written schema and a raw-string handler (TinyAgent's `NewTool`);
//! - [`json_adapter`]: a typed function becomes a [`Handler`];
//! - [`new_agent_tool`]: an agent becomes a tool; [`new_agent_tool_fn`]: a function of one
//!   message becomes an agent-style tool;
//! - [`ToolResolver`] and [`resolver_fn`]: tools chosen per invocation;
//! - [`generate_schema`] and [`strict_schema`]: the schema pipeline; [`anthropic_schema`] and
//!   [`gemini_schema`]: the vendors' dialects of it; [`SchemaValidator`]
//!   checks arguments against a schema;
//! - [`wrap_tool`], [`ToolMiddleware`] and [`ToolLayer`]: onion middleware around a tool's
//!   handler, and the middleware that ships: [`with_logging`], [`with_timeout`],
//!   [`with_retry`], [`with_validation`], [`with_concurrency_limit`], [`with_rate_limit`],
//!   [`with_cache`], [`with_output_budget`], [`with_approval`] (with the builders
//!   [`LoggingLayer`], [`TimeoutLayer`], [`RetryLayer`], [`ValidationLayer`], [`ConcurrencyLimitLayer`],
//!   [`RateLimitLayer`], [`CacheLayer`], [`OutputBudgetLayer`], [`ApprovalLayer`]). With the `tower`
//!   feature, `ToolMiddleware::from_tower` takes a tower `Layer`.

mod adapter;
pub(crate) mod arguments;
mod dialect;
mod func;
mod handler;
mod into_tool;
pub(crate) mod middleware;
mod output;
mod panic;
mod resolver;
pub(crate) mod schema;
mod validate;

pub use adapter::{
    JsonAdapter, ToolFn, WithContext, WithoutContext, decode_input, json_adapter,
    normalize_arguments,
};
pub use dialect::{DialectSchema, anthropic_schema, gemini_schema};
// Agents made into tools live with the agents; their TinyAgent names are kept here.
#[doc(inline)]
pub use crate::agent::{
    AgentTool, AgentToolInput, DEFAULT_AGENT_MESSAGE_DESCRIPTION, DEFAULT_MAX_AGENT_DEPTH,
    MessageHandler, agent_tool_schema, agent_tool_schema_described, new_agent_tool,
    new_agent_tool_fn, parse_agent_message,
};
pub use arguments::parse_arguments;
pub use func::{
    FuncTool, ManualTool, new_func, new_tool, try_new_func, try_new_tool, validate_tool_name,
};
pub use handler::{HandleFunc, Handler, Tool, ToolHints, handler_fn};
pub use into_tool::IntoTool;
pub use middleware::{
    Approval, ApprovalHook, ApprovalLayer, ApprovalRequest, CacheLayer, ConcurrencyLimitLayer,
    LoggingLayer, OutputBudgetLayer, RateLimitLayer, RetryLayer, SpawnBlockingLayer, TimeoutLayer,
    ToolLayer, ToolMiddleware, ValidationLayer, WrappedTool, canonical_json, layer_fn, redact_json,
    redact_text, redact_url, with_approval, with_cache, with_concurrency_limit, with_logging,
    with_output_budget, with_rate_limit, with_retry, with_spawn_blocking, with_timeout,
    with_validation, wrap_tool,
};
#[cfg(feature = "tower")]
pub use middleware::{HandlerService, ToolRequest};
pub use output::{IntoToolError, IntoToolOutput, Json, Structured, ToolErrorKindHint, ToolOutput};
pub use panic::handle_catching_panics;
pub use resolver::{ToolResolver, ToolResolverFunc, resolver_fn};
pub use schema::{generate_schema, strict_schema};
pub use validate::SchemaValidator;
