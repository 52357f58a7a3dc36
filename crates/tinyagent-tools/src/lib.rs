//! The tool system of [tinyagent](https://docs.rs/tinyagent): how tools are made, adapted,
//! wrapped and chosen.
//!
//! - [`Tool`] is the seam: a name, a description, an input schema, hints, and a call that
//!   takes a [`ToolInput`] (the model's text and the value read from it) and gives one
//!   [`ToolOutput`] (text, content parts, structured content);
//! - [`new_func`]: a typed async function becomes a tool, its input schema derived from the
//!   input type (tinyagent's `#[tool]` does the same for an `async fn`);
//! - [`new_tool`]: a hand-written schema and a text-in, text-out handler;
//! - [`json_adapter`]: a typed function becomes a [`Handler`];
//! - [`ToolResolver`] and [`resolver_fn`]: tools chosen per invocation;
//! - [`ToolSearch`]: many tools offered through a search tool;
//! - [`generate_schema`]: the schema of an input type; [`schema`] has the strict form, the
//!   vendors' dialects and the validator;
//! - [`wrap_tool`] with the shortcuts [`with_logging`], [`with_timeout`] and [`with_retry`]:
//!   onion middleware around a tool's handler; [`middleware`] has every layer and the
//!   [`ToolStack`](middleware::ToolStack) builder.
//!
//! It is built on `tinyagent-core` (the context a call reads, errors, outputs, schemas) and
//! knows nothing of agents; the `tinyagent` crate re-exports it at `tinyagent::tools` and its
//! seam at the crate root, and adds agents made into tools.

// The modules of the layer below, under the names this crate's code uses.
pub(crate) use tinyagent_core::{
    breaker, content, context, error, message, model, output, redact, schema_gen, util,
};

mod adapter;
#[doc(hidden)]
pub mod arguments;
mod dialect;
mod func;
mod handler;
mod input;
mod into_tool;
#[doc(hidden)]
pub mod message_tool;
pub mod middleware;
mod panic;
mod resolver;
mod search;
mod search_index;
mod validate;

pub use crate::content::content_text;
pub use adapter::{
    JsonAdapter, ToolFn, WithContext, WithoutContext, decode_input, json_adapter,
    normalize_arguments,
};
pub use arguments::parse_arguments;
pub use func::{
    FuncTool, ManualTool, new_func, new_tool, try_new_func, try_new_tool, validate_tool_name,
};
pub use handler::{HandleFunc, Handler, Tool, ToolHints, handler_fn};
pub use input::ToolInput;
pub use into_tool::IntoTool;
pub use message_tool::{
    AgentToolInput, DEFAULT_AGENT_MESSAGE_DESCRIPTION, MessageHandler, agent_tool_schema,
    agent_tool_schema_described, new_agent_tool_fn, parse_agent_message,
};
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
