//! # tinyagent
//!
//! A Rust framework for LLM agents whose heart is its tool system. Tools are plain typed async
//! functions; their input JSON Schema is derived from the Rust type; middleware wraps them
//! onion-style; an agent asks its model, runs the tool calls it gets back, feeds every result
//! (and every failure) back in, and loops until the model answers.
//!
//! ```
//! use tinyagent::{Tool, ToolContext, ToolError, tool};
//!
//! /// Looks up the current weather of a city.
//! #[tool(read_only)]
//! async fn get_weather(
//!     /// The city, as its people write it
//!     city: String,
//! ) -> Result<String, ToolError> {
//!     Ok(format!("{city}: 22.5 °C"))
//! }
//!
//! let weather = get_weather_tool();
//! assert_eq!(weather.input_schema()["required"], serde_json::json!(["city"]));
//! # tokio_test::block_on(async {
//! let out = weather.handle(&ToolContext::default(), r#"{"city": "Oslo"}"#).await?;
//! assert_eq!(out, "Oslo: 22.5 °C");
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```
//!
//! The same tool without the macro, from an input struct, with [`tools::new_func`]; its output
//! is a value, which the model reads as JSON:
//!
//! ```
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//! use tinyagent::{Tool, ToolContext, ToolError, tools};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct WeatherInput {
//!     /// The city, as its people write it
//!     city: String,
//! }
//!
//! #[derive(Serialize)]
//! struct Weather { city: String, celsius: f64 }
//!
//! async fn get_weather(input: WeatherInput) -> Result<Weather, String> {
//!     Ok(Weather { city: input.city, celsius: 22.5 })
//! }
//!
//! let weather = tools::new_func("get_weather", "Looks up the current weather", get_weather)
//!     .read_only();
//! # tokio_test::block_on(async {
//! let out = weather.handle(&ToolContext::default(), r#"{"city": "Oslo"}"#).await?;
//! assert_eq!(out, r#"{"city":"Oslo","celsius":22.5}"#);
//! # Ok::<(), ToolError>(())
//! # }).unwrap();
//! ```
//!
//! The pieces:
//!
//! - [`Tool`] and [`Handler`]: what is called, with a [`tools::ToolInput`], giving a
//!   [`tools::ToolOutput`]; [`HandleFunc`] (made by [`handler_fn`]), [`ToolContext`],
//!   [`ToolError`], [`ToolHints`]; [`tool`] (the `#[tool]` attribute, default `macros`
//!   feature);
//! - [`tools`]: making tools ([`tools::new_func`], [`tools::new_tool`],
//!   [`tools::json_adapter`], [`tools::generate_schema`]), agents as tools
//!   ([`tools::new_agent_tool`]), tools per invocation ([`tools::ToolResolver`]), and middleware
//!   ([`tools::wrap_tool`], [`tools::middleware`]);
//! - [`Model`], with [`ModelRequest`] and [`ModelResponse`] ([`model`] has the rest);
//!   [`Message`] and its [`Part`]s, [`ToolCall`], [`ToolResult`], [`ContentPart`], [`Usage`];
//! - [`Agent`], [`LlmAgent`] ([`agent`] has its builder and the [`SessionRunner`] of stored
//!   sessions), [`Invocation`], [`Session`], [`Event`] (with a stable JSON shape), [`Budget`]
//!   (what one invocation tree may spend, shared by nested agents; [`budget`]);
//! - [`store`]: sessions that outlive a run; [`host`]: what a tool may ask of whoever runs it
//!   (progress, logs, sampling, elicitation); [`redact`]: secrets out of logs;
//! - [`testing`]: a scripted model for tests.
//!
//! Coming from the Go framework TinyAgent? [`coming_from_go`] maps its names to these.
//!
//! [`SessionRunner`]: agent::SessionRunner

// The paths `#[tool]` generates (`::tinyagent::...`) work inside this crate too.
extern crate self as tinyagent;

pub mod agent;
#[doc = include_str!("../docs/coming_from_go.md")]
pub mod coming_from_go {}
pub mod testing;

// The layers below, under the names this crate's code uses: `tinyagent-core` (messages, models,
// a call's context, sessions, budgets, errors) and `tinyagent-tools` (the tool system).
use tinyagent_core::{context, error, message, util};

pub use tinyagent_core::{budget, host, model, redact, store, telemetry};

#[doc(hidden)]
#[path = "fuzz.rs"]
pub mod __fuzz;
#[doc(hidden)]
#[path = "macro_support.rs"]
pub mod __macro_support;
#[path = "tools.rs"]
pub mod tools;

pub use agent::builder::LlmAgent;
pub use agent::error::AgentError;
pub use agent::events::Event;
pub use agent::traits::{Agent, AgentExt};
pub use tinyagent_core::{
    BoxError, BoxFuture, Budget, ContentPart, Invocation, Message, Model, ModelError, ModelRequest,
    ModelResponse, Part, Role, Session, ToolCall, ToolContext, ToolError, ToolErrorKind,
    ToolResult, Usage,
};
pub use tinyagent_tools::{HandleFunc, Handler, Tool, ToolHints, handler_fn};

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
