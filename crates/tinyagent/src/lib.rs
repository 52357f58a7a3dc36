//! # tinyagent
//!
//! A Rust framework for LLM agents whose heart is its tool system, after the Go framework
//! TinyAgent. Tools are plain typed async functions; their input JSON Schema is derived from
//! the Rust type; middleware wraps them onion-style; an agent asks its model, runs the tool
//! calls it gets back, feeds the results in, and loops until the model answers.
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
//! async fn get_weather(_ctx: ToolContext, input: WeatherInput) -> Result<WeatherOutput, String> {
//!     Ok(WeatherOutput { city: input.city, temperature: 22.5 })
//! }
//!
//! let weather = tools::new_func("get_weather", "获取指定城市的实时天气信息", get_weather);
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

pub mod agent;
#[doc = include_str!("../docs/coming_from_go.md")]
pub mod coming_from_go {}
mod budget;
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
pub mod tools;
mod util;

pub use agent::{Agent, AgentError, AgentExt, Event, LlmAgent, LlmAgentBuilder};
pub use budget::{
    Budget, BudgetExceeded, BudgetResource, BudgetUsage, DEFAULT_MAX_DURATION,
    DEFAULT_MAX_MODEL_CALLS, DEFAULT_MAX_TOKENS, DEFAULT_MAX_TOOL_CALLS, SharedBudget,
};
pub use context::{Invocation, MemoryStore, Session, SessionStore, State, ToolContext};
pub use error::{BoxError, ToolError, ToolErrorKind};
pub use message::{Message, Part, Role, ToolCall, ToolResult, new_id};
pub use model::{
    FinishReason, Model, ModelError, ModelErrorKind, ModelEvent, ModelRequest, ModelResponse,
    ModelResponseBuilder, ToolChoice, ToolDefinition, Usage,
};
pub use tools::{HandleFunc, Handler, Tool, ToolHints, handler_fn};
pub use util::BoxFuture;

/// The JSON Schema crate tool input types derive [`JsonSchema`](schemars::JsonSchema) from,
/// re-exported so that its version always matches the one tinyagent builds schemas with.
pub use schemars;
/// The JSON crate of tinyagent's public API (schemas, arguments, session state), re-exported
/// so that its version always matches.
pub use serde_json;

/// The names most programs need: `use tinyagent::prelude::*;`.
pub mod prelude {
    pub use crate::tools;
    pub use crate::{
        Agent, AgentExt, Budget, Event, HandleFunc, Handler, Invocation, LlmAgent, Message, Model,
        Session, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, handler_fn,
    };
}
