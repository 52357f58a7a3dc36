//! What every tinyagent crate shares: the bottom layer of
//! [tinyagent](https://docs.rs/tinyagent).
//!
//! - [`message`]: the conversation ([`Message`], [`Part`], [`ToolCall`], [`ToolResult`]) and
//!   the [`ContentPart`]s a tool gives or a user sends;
//! - [`model`]: the [`Model`] seam, its requests, answers, errors, prices and costs;
//! - [`context`]: what a call may read ([`ToolContext`]), one run ([`Invocation`]), the
//!   conversation and its state ([`Session`]) and where sessions are kept ([`store`]);
//! - [`budget`]: the limits an invocation tree shares;
//! - [`ToolError`] and [`output::ToolOutput`]: what a tool call fails with or gives;
//! - [`schema_gen`]: JSON Schemas from Rust types, for tool inputs and typed answers;
//! - [`redact`]: secrets out of logs and traces;
//! - [`telemetry`]: the spans runs, model calls and tool calls make, in OpenTelemetry's GenAI
//!   conventions, and the hooks that carry a trace across processes.
//!
//! Most programs use these through the `tinyagent` crate, which re-exports them at their
//! usual paths; the tool system (`tinyagent-tools`) and the agent (`tinyagent`) are built on
//! them, and nothing here knows of either.

#[doc(hidden)]
pub mod breaker;
pub mod budget;
pub mod content;
pub mod context;
pub mod error;
pub mod message;
pub mod model;
pub mod output;
#[doc(hidden)]
pub mod output_limit;
pub mod redact;
pub mod schema_gen;
pub mod telemetry;
#[doc(hidden)]
pub mod util;

/// Sessions that outlive a run, and the process: the [`SessionStore`](store::SessionStore)
/// trait, the in-memory [`MemoryStore`](store::MemoryStore), and what stores share. The
/// `tinyagent-store` crate has SQLite, PostgreSQL and Redis stores; tinyagent's
/// `SessionRunner` runs an agent on a stored session.
pub mod store {
    pub use crate::context::{
        Changes, Cursor, DEFAULT_LIST_LIMIT, ListOptions, MAX_SESSION_ID_LEN, MemoryStore,
        SessionInfo, SessionLock, SessionLocks, SessionPage, SessionStore, State, StoreError,
        StoredSession, check_session_id, from_micros, micros,
    };
    pub use crate::message::new_id;
}

/// What a tool may ask of whoever runs it, through its [`ToolContext`]: report progress and logs,
/// have the client's model sample a completion, or ask the user for input (elicitation). An agent
/// hands these to its caller; an MCP server to its client.
pub mod host {
    pub use crate::context::{
        Elicitation, ElicitationRequest, LogLevel, SamplingMessage, SamplingReply, SamplingRequest,
        ToolHost,
    };
}

pub use budget::limits::Budget;
pub use content::ContentPart;
pub use context::{Invocation, Session, ToolContext};
pub use error::{BoxError, ToolError, ToolErrorKind};
pub use message::{Message, Part, Role, ToolCall, ToolResult};
pub use model::error::ModelError;
pub use model::request::ModelRequest;
pub use model::response::{ModelResponse, Usage};
pub use model::traits::Model;
pub use util::BoxFuture;
