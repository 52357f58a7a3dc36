//! # tinyagent-a2a
//!
//! [A2A (Agent2Agent)](https://a2a-protocol.org) for tinyagent, protocol 1.0, on the A2A
//! project's own Rust crates (`a2a-lf`, `a2a-server-lf`, `a2a-client-lf`):
//!
//! - [`A2aService`]: any agent served as an A2A agent: its card at
//!   `/.well-known/agent-card.json`, `SendMessage` and `SendStreamingMessage` over JSON-RPC,
//!   tasks that can be read, listed, cancelled and followed; protocol 0.3's `message/send`,
//!   `message/stream`, `tasks/get`, `tasks/cancel` and `tasks/resubscribe` on the same URL. `tinyagent serve` mounts one per
//!   agent under `/a2a/{agent}`, behind its keys and limits.
//! - [`A2aAgentTool`]: a remote A2A agent as a tool, its `working` updates as the call's
//!   progress.
//!
//! ```no_run
//! use tinyagent::{AgentExt, LlmAgent, Session};
//! use tinyagent::testing::{ScriptedModel, reply};
//! use tinyagent_a2a::{A2aAgentTool, A2aService};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! // Serve one agent over A2A...
//! let weather = LlmAgent::builder("weather")
//!     .description("Answers questions about the weather")
//!     .model(ScriptedModel::new([reply::text("Sunny, 22.5°C.")]))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}", listener.local_addr()?);
//! let app = A2aService::from_agent(weather).router(format!("{url}/"));
//! tokio::spawn(async move { axum::serve(listener, app).await });
//!
//! // ...and give another agent that one as a tool.
//! let lead = LlmAgent::builder("lead")
//!     .model(ScriptedModel::new([
//!         reply::tool_call("call_1", "weather", r#"{"message":"Weather in Beijing?"}"#),
//!         reply::text("It is sunny."),
//!     ]))
//!     .tool(A2aAgentTool::connect(&url).await?)
//!     .build()?;
//! assert_eq!(lead.ask(&Session::new(), "Beijing?").await?, "It is sunny.");
//! # Ok(()) }
//! ```

mod card;
mod executor;
mod jsonrpc;
mod remote_call;
mod service;
mod tasks;
mod text;
mod tool;
mod turn;
mod v03;

pub use executor::TaskCall;
pub use service::{A2aService, AGENT_CARD_PATH, DEFAULT_MAX_RUNNING};
pub use tasks::DEFAULT_MAX_TASKS;
pub use tool::{A2aAgentTool, A2aAgentToolBuilder, A2aError, DEFAULT_A2A_TIMEOUT};
pub use turn::{ANSWER_ARTIFACT, EVENT_METADATA_KEY};

/// The A2A protocol's types (`a2a-lf`), for cards, messages and tasks.
pub use a2a as protocol;
/// The A2A server crate (`a2a-server-lf`), for other bindings of [`A2aService::handler`].
pub use a2a_server as server;

/// The guide's examples (`docs/a2a.md`), compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/a2a.md")]
pub struct GuideDoctests;
