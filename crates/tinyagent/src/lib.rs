//! # tinyagent
//!
//! A Rust framework for LLM agents whose heart is its tool system, after the Go framework
//! TinyAgent. Tools are plain typed async functions; their input JSON Schema is derived from
//! the Rust type; middleware wraps them onion-style; an agent asks its model, runs the tool
//! calls it gets back, feeds the results in, and loops until the model answers.
//!
//! ```
//! use tinyagent::{ToolContext, ToolError, tool};
//!
//! /// 获取指定城市的实时天气信息
//! #[tool(read_only)]
//! async fn get_weather(
//!     /// 城市名称，如北京、上海、广州
//!     city: String,
//! ) -> Result<String, ToolError> {
//!     Ok(format!("{city}: 22.5 °C"))
//! }
//!
//! let weather = get_weather_tool();
//! assert_eq!(weather.input_schema()["required"], serde_json::json!(["city"]));
//! # tokio_test::block_on(async {
//! let out = weather.handle(&ToolContext::default(), r#"{"city": "北京"}"#).await?;
//! assert_eq!(out, "北京: 22.5 °C");
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```
//!
//! The same tool without the macro, from an input struct, with [`tools::new_func`]:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use tinyagent::{ToolContext, ToolError, tools};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WeatherInput {
//!     /// 城市名称，如北京、上海、广州
//!     city: String,
//! }
//!
//! #[derive(Serialize)]
//! struct WeatherOutput { city: String, temperature: f64 }
//!
//! async fn get_weather(input: WeatherInput) -> Result<WeatherOutput, String> {
//!     Ok(WeatherOutput { city: input.city, temperature: 22.5 })
//! }
//!
//! let weather = tools::new_func("get_weather", "获取指定城市的实时天气信息", get_weather).read_only();
//! # tokio_test::block_on(async {
//! let out = weather.handle(&ToolContext::default(), r#"{"city": "北京"}"#).await?;
//! assert_eq!(out, r#"{"city":"北京","temperature":22.5}"#);
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```
//!
//! Coming from the Go framework TinyAgent? [`coming_from_go`] maps its names to these. The
//! pieces:
//!
//! - [`Tool`], [`Handler`], [`HandleFunc`] (made by [`handler_fn`]), [`ToolContext`], [`ToolError`], [`ToolHints`];
//! - [`tool`] (the `#[tool]` attribute, with the default `macros` feature);
//! - [`tools`]: [`tools::new_func`], [`tools::new_tool`], [`tools::json_adapter`],
//!   [`tools::generate_schema`], [`tools::strict_schema`], [`tools::wrap_tool`],
//!   [`tools::ToolResolver`], [`tools::new_agent_tool`];
//! - middleware for [`tools::wrap_tool`]: [`tools::with_logging`], [`tools::with_timeout`],
//!   [`tools::with_retry`], [`tools::with_validation`], [`tools::with_concurrency_limit`],
//!   [`tools::with_rate_limit`], [`tools::with_cache`], [`tools::with_output_budget`],
//!   [`tools::with_approval`]; with the `tower` feature, any tower `Layer` through
//!   `tools::ToolMiddleware::from_tower`;
//! - [`Model`] with [`ModelRequest`], [`ModelResponse`] and [`ModelEvent`]; [`Message`] and
//!   its [`Part`]s;
//! - [`Agent`], [`LlmAgent`] (built like TinyAgent's `NewAgent`), [`Invocation`], [`Session`],
//!   [`Event`] (with a stable JSON shape), [`Budget`] (what one invocation tree may spend);
//! - [`testing`]: a scripted model for tests.

// The paths `#[tool]` generates (`::tinyagent::...`) work inside this crate too.
extern crate self as tinyagent;

pub mod agent;
#[doc = include_str!("../docs/coming_from_go.md")]
pub mod coming_from_go {}
mod budget;
mod content;
mod context;
#[cfg(feature = "demo")]
pub mod demo;
mod error;
mod message;
mod model;
pub mod testing;

/// Sessions that outlive a run, and the process: the [`SessionStore`] trait, the in-memory
/// [`MemoryStore`], and what stores share. The `tinyagent-store` crate has SQLite, PostgreSQL
/// and Redis stores; [`SessionRunner`](crate::agent::SessionRunner) runs an agent on a stored
/// session.
pub mod store {
    pub use crate::context::{
        Changes, Cursor, DEFAULT_LIST_LIMIT, ListOptions, MAX_SESSION_ID_LEN, MemoryStore,
        SessionInfo, SessionLock, SessionLocks, SessionPage, SessionStore, StoreError,
        StoredSession, check_session_id, from_micros, micros,
    };
}

#[doc(hidden)]
#[path = "fuzz.rs"]
pub mod __fuzz;
#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support;
pub mod tools;
mod util;

pub use agent::{Agent, AgentError, AgentExt, Event, LlmAgent, LlmAgentBuilder};
pub use budget::{
    Budget, BudgetExceeded, BudgetResource, BudgetUsage, DEFAULT_MAX_DURATION,
    DEFAULT_MAX_MODEL_CALLS, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOOL_CALLS, SharedBudget,
};
pub use content::{ContentPart, RichContent, content_text};
pub use context::{
    ContentSlot, Elicitation, ElicitationRequest, Invocation, LogLevel, MemoryStore,
    SamplingMessage, SamplingReply, SamplingRequest, Session, SessionStore, State, ToolContext,
    ToolHost,
};
pub use error::{BoxError, ToolError, ToolErrorKind};
pub use message::{Message, Part, Role, ToolCall, ToolResult, new_id};
pub use model::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelResponse,
    ModelResponseBuilder, ResponseFormat, ToolChoice, ToolDefinition, Usage,
};
pub use tools::{HandleFunc, Handler, Tool, ToolHints, handler_fn};
pub use util::BoxFuture;

/// Makes an `async fn` a tool: its doc comment is the description, its parameters are the
/// input.
///
/// ```
/// use tinyagent::{Tool, ToolContext, ToolError, tool};
///
/// /// Looks up the weather of a city.
/// #[tool(read_only, name = "get_weather")]
/// async fn weather(
///     /// The city, as its people write it
///     city: String,
///     #[arg(description = "Fahrenheit instead of Celsius")] fahrenheit: Option<bool>,
///     ctx: ToolContext,
/// ) -> Result<String, ToolError> {
///     let _ = ctx.call_id();
///     let celsius = 22.5;
///     Ok(match fahrenheit {
///         Some(true) => format!("{city}: {}°F", celsius * 9.0 / 5.0 + 32.0),
///         _ => format!("{city}: {celsius}°C"),
///     })
/// }
///
/// let tool = weather_tool();
/// assert_eq!(tool.name(), "get_weather");
/// assert_eq!(tool.description(), "Looks up the weather of a city.");
/// assert!(tool.hints().read_only);
/// assert_eq!(tool.input_schema()["required"], serde_json::json!(["city"]));
/// assert_eq!(
///     tool.input_schema()["properties"]["city"]["description"],
///     "The city, as its people write it"
/// );
/// # tokio_test::block_on(async {
/// let out = tool.handle(&ToolContext::default(), r#"{"city": "Oslo"}"#).await?;
/// assert_eq!(out, "Oslo: 22.5°C");
/// // The fn itself is still an ordinary fn.
/// assert_eq!(weather("Rome".into(), Some(true), ToolContext::default()).await?, "Rome: 72.5°F");
/// # Ok::<(), ToolError>(())
/// # }).unwrap();
/// ```
///
/// - The tool is returned by `{fn}_tool()`, declared beside the fn with the fn's visibility; it
///   is a [`tools::FuncTool`], which an agent, [`tools::wrap_tool`] and a toolset take as it is.
/// - Parameters are the properties of the input object, in order; an `Option<T>` parameter is
///   not required. A parameter is described by its doc comment or
///   `#[arg(description = "...")]`; `#[serde(..)]` and `#[schemars(..)]` attributes on it apply
///   to its property (`#[serde(rename = "...")]`, `#[serde(default)]`).
/// - One parameter of type [`ToolContext`], anywhere, gets the call's context; it is not part
///   of the input.
/// - The fn returns `Result<T, E>`: `T` is text (passed through), `Json<T>`, `ToolOutput` or any
///   `Serialize` value; `E` is [`ToolError`], text or an error type implementing
///   [`tools::ToolErrorKindHint`] (see [`tools::IntoToolOutput`] and [`tools::IntoToolError`]).
/// - Attribute arguments: `name = "..."` (default: the fn's name), `description = "..."`
///   (default: the doc comment; one of the two is required), and the [hints](ToolHints)
///   `read_only`, `idempotent`, `destructive = bool`, `open_world = bool`, `blocking`.
///
/// Mistakes are compile errors at the user's code: a fn that is not `async`, a missing
/// description, an invalid tool name, a parameter type that is not `Deserialize` +
/// `JsonSchema`, a result that is not `Serialize`, an error that does not convert.
#[cfg(feature = "macros")]
pub use tinyagent_macros::tool;

/// The JSON Schema crate tool input types derive [`JsonSchema`](schemars::JsonSchema) from,
/// re-exported so that its version always matches the one tinyagent builds schemas with.
pub use schemars;
/// The serialization crate tool inputs and outputs derive `Deserialize` and `Serialize` from,
/// re-exported so that its version always matches (and for the code `#[tool]` generates).
pub use serde;
/// The JSON crate of tinyagent's public API (schemas, arguments, session state), re-exported
/// so that its version always matches.
pub use serde_json;

/// The names most programs need: `use tinyagent::prelude::*;`.
pub mod prelude {
    #[cfg(feature = "macros")]
    pub use crate::tool;
    pub use crate::tools;
    pub use crate::tools::{IntoTool, ToolErrorKindHint};
    pub use crate::{
        Agent, AgentExt, Budget, Event, HandleFunc, Handler, Invocation, LlmAgent, Message, Model,
        Session, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, handler_fn,
    };
}
