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

mod adapter;
pub(crate) mod arguments;
mod definition;
mod dialect;
mod func;
pub(crate) mod handler;
mod input;
mod into_tool;
pub mod middleware;
mod output;
pub(crate) mod output_limit;
mod panic;
mod resolver;
pub(crate) mod schema_gen;
mod search;
mod search_index;
mod validate;

pub use adapter::{
    JsonAdapter, ToolFn, WithContext, WithoutContext, decode_input, json_adapter,
    normalize_arguments,
};
// Agents made into tools live with the agents; their TinyAgent names are here.
pub use crate::agent::agent_tool::{
    AgentTool, AgentToolInput, DEFAULT_AGENT_MESSAGE_DESCRIPTION, DEFAULT_MAX_AGENT_DEPTH,
    MessageHandler, agent_tool_schema, agent_tool_schema_described, new_agent_tool,
    new_agent_tool_fn, parse_agent_message,
};
pub use crate::content::content_text;
pub use arguments::parse_arguments;
pub use func::{
    FuncTool, ManualTool, new_func, new_tool, try_new_func, try_new_tool, validate_tool_name,
};
pub use input::ToolInput;
pub use into_tool::IntoTool;
pub use middleware::canonical::canonical_json;
pub use middleware::logging::with_logging;
pub use middleware::retry::with_retry;
pub use middleware::timeout::with_timeout;
pub use middleware::wrap::wrap_tool;
pub use output::{IntoToolError, IntoToolOutput, Json, Structured, ToolErrorKindHint, ToolOutput};
pub use panic::call_catching_panics;
pub use resolver::{ResolverFn, ToolResolver, resolver_fn};
pub use schema_gen::generate_schema;
pub use search::{
    CALL_TOOL, DEFAULT_OFFER_ALL_UP_TO, DEFAULT_SEARCH_RESULTS, SEARCH_TOOL, ToolSearch,
};

/// The schema pipeline beyond [`generate_schema`]: the strict form OpenAI's structured outputs
/// take, the Anthropic and Gemini dialects of a schema, and the validator agents check
/// arguments with.
pub mod schema {
    pub use super::dialect::{DialectSchema, anthropic_schema, gemini_schema};
    pub use super::schema_gen::strict_schema;
    pub use super::validate::SchemaValidator;
}
