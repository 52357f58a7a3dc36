//! Serve [tinyagent] agents over HTTP.
//!
//! A [`Server`] holds named agents, a [`SessionStore`](tinyagent::store::SessionStore), API keys and
//! limits, and serves:
//!
//! | route | what |
//! |---|---|
//! | `POST /v1/chat/completions` | OpenAI's Chat Completions API, streamed or not; `model` names the agent, whose tools run on the server |
//! | `POST /v1/responses` | OpenAI's Responses API, streamed or not; `model` names the agent |
//! | `GET /v1/models` | the agents, as OpenAI models |
//! | `POST /v1/sessions/{id}/messages` | a message to a stored session, answered as server-sent events of the run's [`Event`](tinyagent::Event)s |
//! | `GET /v1/sessions/{id}`, `DELETE …` | a session's history and state; removing it |
//! | `POST /v1/sessions/{id}/resume` | the decisions on a run paused for a person (its calls approved or denied); the run goes on, answered as the messages route answers |
//! | `GET /v1/sessions` | the sessions, most recently written first, paged (`limit`, `cursor`) |
//! | `GET /v1/agents` | the agents' names and descriptions |
//! | `POST /a2a/{agent}` | the agent as an A2A agent (JSON-RPC, streamed or not); its card at `GET /a2a/{agent}/.well-known/agent-card.json`, the first agent's at `GET /.well-known/agent-card.json` |
//! | `GET /metrics` | the metrics in the Prometheus text format, for an admin key |
//! | `GET /healthz`, `GET /readyz` | alive; ready (the store answers) |
//! | `GET /` | a page to chat with the agents in a browser |
//!
//! Every route but the health checks and the page needs `Authorization: Bearer <key>` when
//! keys are configured (compared in constant time). A key's name is its tenant (two keys of
//! one name are refused; a key given without one is named after its secret). Each session
//! belongs to the key that created it, and each key has session ids of its own: another key's
//! `chat-1` is another session ([`store_key`]), so a key can neither see, guess nor take
//! another's; an [admin key](Server::admin_key) lists every session and addresses any with
//! `?owner=NAME`; a server without keys is one tenant. Per key, [`Server::rate_limit`],
//! [`Server::max_cost_per_key`], [`Server::max_sessions_per_key`] and [`Server::max_history`]
//! bound what it sends, spends and keeps, and a session post may carry an `Idempotency-Key`
//! whose retry gets the stored outcome instead of a second run.
//!
//! Errors are OpenAI's error objects,
//! `{"error":{"message","type","param","code","request_id"}}`, so OpenAI's SDKs raise their
//! usual exceptions; every answer carries its request id as `x-request-id`, and what went
//! wrong inside (the model provider's URL and answer, the store's error) is only logged.
//!
//! Against other sites' pages driving the server through a browser: API bodies must be
//! `Content-Type: application/json` (`415` otherwise), a request whose `Origin` is not the
//! server's own (or an [allowed one](Server::allowed_origin)) gets `403`, and one whose `Host`
//! is not the address connected to, `localhost` on a loopback address, or an [allowed
//! host](Server::allowed_host) gets `421`. Connections are bounded: a [header
//! timeout](Server::header_timeout), a [write timeout](Server::write_timeout) that drops a
//! client that reads nothing (cancelling its run), and a [maximum number](Server::max_connections).
//!
//! Client `system`/`developer` messages never join the agent's instruction: by default they
//! reach the model as marked user-level context below it ([`ClientInstructions`]), and client
//! tool results are refused unless [allowed](Server::allow_client_tool_results).
//!
//! Tool calls in Chat Completions: the agent runs its tools itself, so the answer carries no
//! `tool_calls` (an OpenAI client would try to run them). Each call is reported instead on a
//! chunk with an empty `delta` and a top-level `tinyagent` field —
//! `{"tinyagent":{"event":{"type":"tool_call_started","id":…,"name":…,"arguments":…}}}` and
//! then `tool_call_finished` — which OpenAI clients ignore; a non-streamed answer lists the
//! same events under `tinyagent.events`.
//!
//! ```no_run
//! use tinyagent::LlmAgent;
//! use tinyagent::testing::{ScriptedModel, reply};
//! use tinyagent_server::Server;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = LlmAgent::builder("greeter")
//!     .model(ScriptedModel::new([reply::text("Hello!")]))
//!     .build()?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! Server::new()
//!     .agent(agent)
//!     .api_key("sk-local-secret")
//!     .serve(listener, async { tokio::signal::ctrl_c().await.ok(); })
//!     .await?;
//! # Ok(()) }
//! ```

mod a2a;
mod answer_shape;
mod auth;
mod chat;
mod cost_limit;
mod error;
mod extract;
mod guard;
mod ids;
mod keys;
mod listen;
mod metered;
mod namespace;
mod options;
mod page;
mod post;
mod request_id;
mod responses;
mod routes;
mod scoped;
mod serve_error;
mod server;
mod serving;
mod sessions;
mod sse;
mod state;
mod store_spans;
mod telemetry;
mod tenancy;

pub use cost_limit::CostLimit;
pub use error::ApiError;
pub use namespace::store_key;
pub use serve_error::ServeError;
pub use server::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_CONCURRENT_PER_KEY, DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_WRITE_TIMEOUT, ENV_API_KEYS, Server,
};
pub use state::ClientInstructions;
pub use tenancy::{DEFAULT_ADMIN_KEY_NAME, RateLimit};
