//! Tools: how they are made, adapted, wrapped and chosen.
//!
//! - [`new_func`]: a typed async function becomes a tool, its input schema derived from the
//!   input type; [`tool`](crate::tool) does the same for an `async fn`;
//! - [`new_tool`]: a hand-written schema and a text-in, text-out handler;
//! - [`json_adapter`]: a typed function becomes a [`Handler`](crate::Handler);
//! - a tool is called with a [`ToolInput`] (the model's text and the value read from it) and
//!   gives one [`ToolOutput`] (text, content parts, structured content);
//! - [`new_agent_tool`]: an agent becomes a tool; [`new_agent_tool_fn`]: a function of one
//!   message becomes an agent-style tool;
//! - [`ToolResolver`] and [`resolver_fn`]: tools chosen per invocation;
//! - [`generate_schema`]: the schema of an input type; [`schema`] has the strict form, the
//!   vendors' dialects and the validator;
//! - [`wrap_tool`] with the shortcuts [`with_logging`], [`with_timeout`] and [`with_retry`]:
//!   onion middleware around a tool's handler; [`middleware`] has every layer and the
//!   [`ToolStack`](middleware::ToolStack) builder.

pub use tinyagent_core::content::content_text;
pub use tinyagent_core::output::{
    IntoToolError, IntoToolOutput, Json, Structured, ToolErrorKindHint, ToolOutput,
};
pub use tinyagent_core::schema_gen::generate_schema;
pub use tinyagent_tools::{
    AgentToolInput, DEFAULT_AGENT_MESSAGE_DESCRIPTION, MessageHandler, agent_tool_schema,
    agent_tool_schema_described, new_agent_tool_fn, parse_agent_message,
};
pub use tinyagent_tools::{
    CALL_TOOL, DEFAULT_OFFER_ALL_UP_TO, DEFAULT_SEARCH_RESULTS, FuncTool, IntoTool, JsonAdapter,
    ManualTool, ResolverFn, SEARCH_TOOL, ToolFn, ToolInput, ToolResolver, ToolSearch, WithContext,
    WithoutContext, call_catching_panics, canonical_json, decode_input, json_adapter, middleware,
    new_func, new_tool, normalize_arguments, parse_arguments, resolver_fn, schema, try_new_func,
    try_new_tool, validate_tool_name, with_logging, with_retry, with_timeout, wrap_tool,
};

// Agents made into tools live with the agents; their TinyAgent names are here.
pub use crate::agent::agent_tool::{AgentTool, DEFAULT_MAX_AGENT_DEPTH, new_agent_tool};
