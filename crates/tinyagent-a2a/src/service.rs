//! [`A2aService`]: a tinyagent agent as an A2A agent, on the A2A project's own server crate.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a::AgentCard;
use a2a_server::DefaultRequestHandler;
use tinyagent::agent::SessionRunner;
use tinyagent::store::MemoryStore;
use tinyagent::{Agent, AgentError};
use tokio::sync::Semaphore;

use crate::card::{agent_card, card_json};
use crate::executor::{DescribeFn, RunExecutor, RunnerFn, TaskCall};
use crate::tasks::{BoundedTaskStore, DEFAULT_MAX_TASKS};

/// How many tasks run at once by default, per [`handler`](A2aService::handler).
pub const DEFAULT_MAX_RUNNING: usize = 8;

/// A tinyagent agent served over [A2A](https://a2a-protocol.org) (protocol 1.0, JSON-RPC
/// binding): `SendMessage` and `SendStreamingMessage` run the agent, `GetTask`, `ListTasks`,
/// `CancelTask` and `SubscribeToTask` follow its tasks; a 0.3 client's `message/send`,
/// `message/stream`, `tasks/get`, `tasks/cancel` and `tasks/resubscribe` reach the same tasks.
///
/// Each A2A context is a session of the [`SessionRunner`]'s store (the context id is the
/// session id), so a conversation goes on across tasks. A task's events:
///
/// - `working`, then the answer as it streams: chunks of the artifact `answer` (a reply
///   restarted by the provider starts the artifact again);
/// - each tool call, its progress and its result: a `working` status update whose message
///   has the tinyagent event as a data part (`{"type":"tool_call_started","id","name",
///   "arguments"}`, then `tool_progress`, `tool_call_finished`), also under the metadata key
///   `tinyagent/event`;
/// - the end: the whole answer as the `answer` artifact's last chunk and `completed` with the
///   answer as its message (usage under `tinyagent/usage`); `failed` with what went wrong;
///   `input-required` when the run [paused](tinyagent::agent::PausedRun) for an operator's
///   decision; `rejected` for a message it cannot take (a file part, too many tasks running).
///
/// Cancelling a task stops its run (the stream is dropped, tools and all). Tasks are kept in
/// memory, at most [`max_tasks`](Self::max_tasks) per handler, the oldest finished ones
/// forgotten first.
///
/// ```no_run
/// use tinyagent::LlmAgent;
/// use tinyagent::testing::{ScriptedModel, reply};
/// use tinyagent_a2a::A2aService;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let agent = LlmAgent::builder("greeter")
///     .description("Greets people")
///     .model(ScriptedModel::new([reply::text("Hello!")]))
///     .build()?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9000").await?;
/// // The card at /.well-known/agent-card.json, JSON-RPC at /.
/// let app = A2aService::from_agent(agent).router("http://127.0.0.1:9000/");
/// axum::serve(listener, app).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct A2aService {
    name: String,
    description: String,
    runner: RunnerFn,
    describe: DescribeFn,
    max_running: usize,
    max_tasks: usize,
    run_timeout: Option<Duration>,
    bearer: bool,
}

impl fmt::Debug for A2aService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("A2aService")
            .field("name", &self.name)
            .field("max_running", &self.max_running)
            .field("max_tasks", &self.max_tasks)
            .field("run_timeout", &self.run_timeout)
            .field("bearer", &self.bearer)
            .finish_non_exhaustive()
    }
}

impl A2aService {
    /// Serves the runner's agent; contexts are sessions of the runner's store.
    pub fn new(runner: SessionRunner) -> Self {
        Self::from_runner_fn(move || runner.clone())
    }

    /// Serves `agent`, keeping its conversations in memory.
    pub fn from_agent(agent: impl Agent + 'static) -> Self {
        Self::new(SessionRunner::new(agent, MemoryStore::new()))
    }

    /// Serves the agent of the runners `runner` makes, one per task (a server makes each with
    /// a view of its store scoped to the caller, say).
    pub fn from_runner_fn(runner: impl Fn() -> SessionRunner + Send + Sync + 'static) -> Self {
        Self::from_task_fn(move |_: &TaskCall| runner())
    }

    /// Serves the agent of the runners `runner` makes, one per task, from the [call](TaskCall)
    /// that started the task (a server names the request in the run's logs, say).
    pub fn from_task_fn(
        runner: impl Fn(&TaskCall) -> SessionRunner + Send + Sync + 'static,
    ) -> Self {
        let sample = runner(&TaskCall::default());
        Self {
            name: sample.agent().name().to_owned(),
            description: sample.agent().description().to_owned(),
            runner: Arc::new(runner),
            describe: Arc::new(|err: &AgentError, _: &TaskCall| err.to_string()),
            max_running: DEFAULT_MAX_RUNNING,
            max_tasks: DEFAULT_MAX_TASKS,
            run_timeout: None,
            bearer: false,
        }
    }

    /// How many tasks may run at once per handler ([`DEFAULT_MAX_RUNNING`]); a task beyond
    /// them is `rejected`.
    #[must_use]
    pub fn max_running(mut self, tasks: usize) -> Self {
        self.max_running = tasks.max(1);
        self
    }

    /// How many tasks a handler keeps ([`DEFAULT_MAX_TASKS`](crate::DEFAULT_MAX_TASKS)).
    #[must_use]
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks.max(1);
        self
    }

    /// How long a run may take before its task fails (none by default).
    #[must_use]
    pub fn run_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.run_timeout = timeout.into();
        self
    }

    /// Declares in the card that calls carry `Authorization: Bearer <key>` (checking it is the
    /// job of what is in front of the service).
    #[must_use]
    pub fn bearer_auth(mut self, bearer: bool) -> Self {
        self.bearer = bearer;
        self
    }

    /// How a failed run is told to the caller; by default the error's text. A server for
    /// others says less (no provider URLs, no store errors).
    #[must_use]
    pub fn error_text(
        self,
        describe: impl Fn(&AgentError) -> String + Send + Sync + 'static,
    ) -> Self {
        self.task_error_text(move |err, _| describe(err))
    }

    /// How a failed run is told to the caller, from the error and the [call](TaskCall) that
    /// started the task (a server quotes the request id its log names the error under, say).
    #[must_use]
    pub fn task_error_text(
        mut self,
        describe: impl Fn(&AgentError, &TaskCall) -> String + Send + Sync + 'static,
    ) -> Self {
        self.describe = Arc::new(describe);
        self
    }

    /// The agent's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The agent card, with its JSON-RPC endpoint at `url`.
    pub fn card(&self, url: &str) -> AgentCard {
        agent_card(&self.name, &self.description, url, self.bearer)
    }

    /// A request handler with its own tasks (and its own [`max_running`](Self::max_running)):
    /// one per tenant keeps tenants' tasks apart. Mount it with
    /// [`a2a_server::jsonrpc::jsonrpc_router`] or [`a2a_server::rest::rest_router`].
    pub fn handler(&self) -> Arc<DefaultRequestHandler> {
        let executor = RunExecutor {
            runner: self.runner.clone(),
            describe: self.describe.clone(),
            slots: Arc::new(Semaphore::new(self.max_running)),
            max_running: self.max_running,
            run_timeout: self.run_timeout,
            running: Arc::new(Mutex::new(HashMap::new())),
        };
        let handler = DefaultRequestHandler::new(executor, BoundedTaskStore::new(self.max_tasks))
            .with_capabilities(self.card("").capabilities)
            .with_default_input_modes(vec!["text/plain".to_owned(), "application/json".to_owned()]);
        Arc::new(handler)
    }

    /// The JSON-RPC endpoint (`POST /`) of a new tenant ([`handler`](Self::handler)): protocol
    /// 1.0's methods, and 0.3's (`message/send`, `message/stream`, `tasks/get`,
    /// `tasks/cancel`, `tasks/resubscribe`) translated on the same URL.
    pub fn jsonrpc_router(&self) -> axum::Router {
        crate::jsonrpc::jsonrpc_router(self.handler())
    }

    /// The card as served: the 1.0 card, with the fields a 0.3 client reads (`url`,
    /// `protocolVersion`, `preferredTransport`, `security`) merged in.
    pub fn card_json(&self, url: &str) -> serde_json::Value {
        card_json(&self.card(url))
    }

    /// An axum router for one tenant: the card at `/.well-known/agent-card.json` and the
    /// JSON-RPC endpoint at `/`, whose public address `url` the card gives.
    pub fn router(&self, url: impl Into<String>) -> axum::Router {
        let card = self.card_json(&url.into());
        self.jsonrpc_router().route(
            AGENT_CARD_PATH,
            axum::routing::get(move || async move { axum::Json(card) }),
        )
    }
}

/// The path of the agent card under an agent's A2A base URL.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
