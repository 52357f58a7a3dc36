//! [`Server`]: the builder that holds agents, a session store, keys and limits, and turns them
//! into an axum [`Router`] or a running server.

use std::fmt;

use std::sync::Arc;
use std::time::Duration;

use tinyagent::agent::OnBusy;
use tinyagent::{
    Agent,
    store::{MemoryStore, SessionStore},
};

use crate::guard::SitePolicy;
use crate::state::{ClientInstructions, Limits};
use crate::tenancy::{DEFAULT_ADMIN_KEY_NAME, RateLimit};

/// The largest request body accepted by default: 1 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;
/// How long an answer may take by default before it is cut: 5 minutes.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a request body may take to arrive by default: 30 seconds.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How many requests one API key may have in flight at once by default.
pub const DEFAULT_MAX_CONCURRENT_PER_KEY: usize = 64;
/// How long a shutdown waits by default for the answers in flight to finish.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a client may take to send a request's headers by default, which is also how long a
/// kept-alive connection may sit idle between requests: 10 seconds.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How many connections [`Server::serve`] keeps open at once by default; one more is answered
/// `503` and closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// How long a client may read nothing of an answer by default before it is dropped (and the
/// run it was reading cancelled): 30 seconds.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// The environment variable the `tinyagent serve` command reads API keys from
/// (comma-separated).
pub const ENV_API_KEYS: &str = "TINYAGENT_API_KEYS";

/// An HTTP server for agents: the OpenAI Chat Completions API, a session API streaming each
/// run's events, health checks and a page to try the agents in a browser.
///
/// Build it with setters, then either take its [`router`](Self::router) to mount in an axum
/// app of your own, or [`serve`](Self::serve) it on a listener.
///
/// ```
/// use tinyagent::LlmAgent;
/// use tinyagent::store::MemoryStore;
/// use tinyagent::testing::{ScriptedModel, reply};
/// use tinyagent_server::Server;
///
/// let agent = LlmAgent::builder("greeter")
///     .description("Says hello")
///     .model(ScriptedModel::new([reply::text("Hello!")]))
///     .build()
///     .unwrap();
/// let server = Server::new()
///     .agent(agent)
///     .store(MemoryStore::new())
///     .api_key("sk-local-secret")
///     .max_concurrent_per_key(8);
/// // Mount the routes in your own app, under any prefix:
/// let app: axum::Router = axum::Router::new().nest("/agents", server.router());
/// # let _ = app;
/// ```
pub struct Server {
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) keys: Vec<crate::keys::ApiKey>,
    pub(crate) allow_unauthenticated: bool,
    pub(crate) limits: Limits,
    pub(crate) on_busy: OnBusy,
    pub(crate) page: bool,
    pub(crate) site: SitePolicy,
    pub(crate) client_instructions: ClientInstructions,
    pub(crate) client_tool_results: bool,
    pub(crate) parameters: crate::options::Parameters,
    pub(crate) tenancy: crate::tenancy::Tenancy,
    pub(crate) metrics: Option<tinyagent_otel::Prometheus>,
    pub(crate) cost_limit: Option<crate::CostLimit>,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field(
                "agents",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("keys", &self.keys.len())
            .field("allow_unauthenticated", &self.allow_unauthenticated)
            .field("limits", &self.limits)
            .field("on_busy", &self.on_busy)
            .field("site", &self.site)
            .field("client_instructions", &self.client_instructions)
            .field("client_tool_results", &self.client_tool_results)
            .field("cost_limit", &self.cost_limit)
            .finish_non_exhaustive()
    }
}

impl Server {
    /// A server with no agents, an in-memory session store, no API keys and the default
    /// limits.
    pub fn new() -> Self {
        Self {
            agents: Vec::new(),
            store: Arc::new(MemoryStore::new()),
            keys: Vec::new(),
            allow_unauthenticated: false,
            limits: Limits {
                max_body_bytes: DEFAULT_MAX_BODY_BYTES,
                request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
                body_timeout: DEFAULT_BODY_TIMEOUT,
                max_concurrent_per_key: DEFAULT_MAX_CONCURRENT_PER_KEY,
                drain_timeout: DEFAULT_DRAIN_TIMEOUT,
                header_timeout: DEFAULT_HEADER_TIMEOUT,
                write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
                max_connections: DEFAULT_MAX_CONNECTIONS,
            },
            on_busy: OnBusy::default(),
            page: true,
            site: SitePolicy::default(),
            client_instructions: ClientInstructions::default(),
            client_tool_results: false,
            parameters: crate::options::Parameters::default(),
            tenancy: Default::default(),
            metrics: None,
            cost_limit: None,
        }
    }

    /// Offers an agent under its [name](Agent::name): the `model` of a chat completion, the
    /// `agent` of a session message. A later agent of the same name replaces an earlier one.
    #[must_use]
    pub fn agent(mut self, agent: impl Agent + 'static) -> Self {
        let agent: Arc<dyn Agent> = Arc::new(agent);
        self.agents.retain(|a| a.name() != agent.name());
        self.agents.push(agent);
        self
    }

    /// Keeps sessions in this store ([`MemoryStore`] by default; see the `tinyagent-store`
    /// crate for SQLite, PostgreSQL and Redis).
    #[must_use]
    pub fn store(mut self, store: impl SessionStore + 'static) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Accepts this API key (as `Authorization: Bearer <key>`), named after its secret:
    /// `key-` and 8 hex digits of a SHA-256 of it (`key-3f9a1c2e`), the same whatever other
    /// keys come and go, and saying nothing of the secret. Logs show that name, and it is the
    /// tenant its sessions belong to ([`key_names`](Self::key_names) lists it). Empty keys are
    /// ignored.
    #[must_use]
    pub fn api_key(self, key: impl Into<String>) -> Self {
        self.named_api_key("", key)
    }

    /// Accepts these API keys (see [`api_key`](Self::api_key)).
    #[must_use]
    pub fn api_keys<K: Into<String>>(self, keys: impl IntoIterator<Item = K>) -> Self {
        keys.into_iter().fold(self, Self::api_key)
    }

    /// Accepts this API key under a name of your choosing, which logs show instead of the key
    /// (and by which its concurrency and rate are counted). The name is the tenant: the
    /// sessions the key creates belong to it, so keep it when the key's secret changes, and
    /// know that renaming a key moves its sessions out of its reach. An empty name is replaced
    /// by the one [`api_key`](Self::api_key) derives from the secret. Empty keys are ignored.
    ///
    /// Names must be unique (the admin key's included) and free of control and invisible
    /// format characters, and a secret may be given once: [`check`](Self::check) and
    /// [`serve`](Self::serve) refuse the server otherwise ([`ServeError::DuplicateKeyName`](crate::ServeError::DuplicateKeyName),
    /// [`DuplicateKey`](crate::ServeError::DuplicateKey), [`KeyName`](crate::ServeError::KeyName)).
    #[must_use]
    pub fn named_api_key(self, id: impl Into<String>, key: impl Into<String>) -> Self {
        self.add_key(id.into(), key.into(), false)
    }

    fn add_key(mut self, name: String, secret: String, admin: bool) -> Self {
        if secret.is_empty() {
            return self;
        }
        let name = if name.trim().is_empty() {
            crate::keys::derived_name(&secret)
        } else {
            name
        };
        self.keys.push(crate::keys::ApiKey {
            name,
            secret,
            admin,
        });
        self
    }

    /// The names of the keys, in the order they were added (admin keys included): what logs,
    /// the page and the store's `owner` show for them.
    ///
    /// ```
    /// let server = tinyagent_server::Server::new()
    ///     .named_api_key("alice", "sk-alice")
    ///     .api_key("sk-erin")
    ///     .admin_key("sk-root");
    /// let names: Vec<&str> = server.key_names().collect();
    /// assert_eq!(names[0], "alice");
    /// assert!(names[1].starts_with("key-") && names[1].len() == 12);
    /// assert_eq!(names[2], "admin");
    /// ```
    pub fn key_names(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|k| k.name.as_str())
    }

    /// Lets [`serve`](Self::serve) start without API keys on an address other than loopback,
    /// open to anyone who can reach it (off by default: without keys it only binds to
    /// loopback addresses).
    #[must_use]
    pub fn allow_unauthenticated(mut self, allow: bool) -> Self {
        self.allow_unauthenticated = allow;
        self
    }

    /// The largest request body accepted, in bytes; larger ones get `413`
    /// ([`DEFAULT_MAX_BODY_BYTES`] by default).
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_body_bytes = bytes;
        self
    }

    /// How long an answer may take: past it, a waiting request gets `504` and a stream is cut
    /// with an error event ([`DEFAULT_REQUEST_TIMEOUT`] by default; `None` for no limit).
    #[must_use]
    pub fn request_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.limits.request_timeout = timeout.into();
        self
    }

    /// How long a request body may take to arrive, from the end of its headers: a client
    /// slower than that gets `408` ([`DEFAULT_BODY_TIMEOUT`] by default).
    #[must_use]
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_timeout = timeout;
        self
    }

    /// How many requests one API key (or, without keys, all clients together) may have in
    /// flight at once; one more gets `429` with `Retry-After`
    /// ([`DEFAULT_MAX_CONCURRENT_PER_KEY`] by default; 0 is taken as 1).
    #[must_use]
    pub fn max_concurrent_per_key(mut self, max: usize) -> Self {
        self.limits.max_concurrent_per_key = max.max(1);
        self
    }

    /// How long [`serve`](Self::serve) waits, once told to shut down, for the answers in
    /// flight to finish before it cuts them ([`DEFAULT_DRAIN_TIMEOUT`] by default).
    #[must_use]
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.limits.drain_timeout = timeout;
        self
    }

    /// What a message posted to a session does while another run on that session is in
    /// flight: wait for it, or fail at once with `409` ([`OnBusy::default`] by default).
    #[must_use]
    pub fn on_busy(mut self, on_busy: OnBusy) -> Self {
        self.on_busy = on_busy;
        self
    }

    /// How long a client may take to send a request's headers, from its connection (or the
    /// end of its previous answer on a kept-alive connection): past it the connection is
    /// closed ([`DEFAULT_HEADER_TIMEOUT`] by default). Enforced by [`serve`](Self::serve).
    #[must_use]
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_timeout = timeout;
        self
    }

    /// How long a client may take nothing while an answer waits to be sent to it (the
    /// connection's buffers full): past it the connection is dropped, the run it was reading
    /// cancelled, and its session and concurrency slot freed ([`DEFAULT_WRITE_TIMEOUT`] by default; `None` for no limit).
    /// Enforced by [`serve`](Self::serve).
    #[must_use]
    pub fn write_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.limits.write_timeout = timeout.into();
        self
    }

    /// How many connections [`serve`](Self::serve) keeps open at once: one more is answered
    /// `503` (`too_many_connections`, `Retry-After: 1`) and closed, and new connections are
    /// taken again as soon as others close ([`DEFAULT_MAX_CONNECTIONS`] by default; 0 is taken
    /// as 1). Keep it under the process's file descriptor limit (`ulimit -n`).
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
        self
    }

    /// Also answers requests whose `Host` is this name (`name`: any port; `name:port`: that
    /// port; `*`: any host at all). Without it, [`serve`](Self::serve) answers only the
    /// address a client connected to and, on a loopback address, `localhost`; other hosts get
    /// `421` — against DNS rebinding, where a web page reaches a local server under its own
    /// host name. Add the names clients (or a reverse proxy) use to reach the server.
    #[must_use]
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        let host = host.into().trim().to_ascii_lowercase();
        if !host.is_empty() {
            self.site.hosts.push(host);
        }
        self
    }

    /// Also answers browser requests from pages of this origin (`scheme://host[:port]`; `*`
    /// for any). By default only the server's own pages (the same origin as the `Host`) may
    /// call it from a browser; other `Origin`s get `403`. Requests without `Origin`
    /// (non-browser clients) are not concerned.
    #[must_use]
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        let origin = origin
            .into()
            .trim()
            .trim_end_matches('/')
            .to_ascii_lowercase();
        if !origin.is_empty() {
            self.site.origins.push(origin);
        }
        self
    }

    /// What becomes of the `system` and `developer` messages a client sends to
    /// `/v1/chat/completions` ([`ClientInstructions::Below`] by default: user-level context,
    /// marked as the client's, below the agent's instruction).
    #[must_use]
    pub fn client_instructions(mut self, policy: ClientInstructions) -> Self {
        self.client_instructions = policy;
        self
    }

    /// Whether a client may send assistant `tool_calls` and `tool` results in the history of a
    /// chat completion (off by default: `400`). Such results reach the model as the output
    /// of the agent's own tools, which the client did not run; allow them only for trusted
    /// clients.
    #[must_use]
    pub fn allow_client_tool_results(mut self, allow: bool) -> Self {
        self.client_tool_results = allow;
        self
    }

    /// Accepts this Chat Completions field and does not use it, where by default it is
    /// refused with `400 unsupported_parameter` (`logprobs`, `logit_bias`...: see the table in
    /// the serving guide), for clients that always send it. Repeatable.
    #[must_use]
    pub fn ignore_parameter(mut self, name: impl Into<String>) -> Self {
        self.parameters.ignored.push(name.into());
        self
    }

    /// Gives every request this value of a sampling field (`temperature`, `top_p`, `stop`,
    /// `seed`, `presence_penalty`, `frequency_penalty`, `parallel_tool_calls`): a client may
    /// leave the field out or send the same value; another value is a `400` naming it.
    /// [`serve`](Self::serve) refuses a field that cannot be pinned, a value it does not take
    /// and one an agent's model does not take.
    ///
    /// ```
    /// let server = tinyagent_server::Server::new().pin_parameter("temperature", serde_json::json!(0));
    /// ```
    #[must_use]
    pub fn pin_parameter(mut self, name: impl Into<String>, value: serde_json::Value) -> Self {
        self.parameters.pinned.push((name.into(), value));
        self
    }

    /// Caps a field (`temperature`, `top_p`, `presence_penalty`, `frequency_penalty`,
    /// `max_tokens`): a request above the cap is a `400` naming the field, except
    /// `max_tokens`, which is lowered to it (and applies when a request sets none).
    #[must_use]
    pub fn cap_parameter(mut self, name: impl Into<String>, max: f64) -> Self {
        self.parameters.caps.push((name.into(), max));
        self
    }

    /// Whether `GET /` serves the page to try the agents in a browser (on by default).
    #[must_use]
    pub fn page(mut self, page: bool) -> Self {
        self.page = page;
        self
    }

    /// Serves these metrics at `GET /metrics`, in the Prometheus text format (for an admin
    /// key; on a server without keys, for whoever reaches it, like every route). Make them with
    /// `tinyagent_otel::Telemetry::builder().prometheus(true)`; the server's requests are
    /// counted there too (`http.server.request.duration`, `http.server.active_requests`,
    /// `tinyagent.server.active_streams`), beside the runs' own metrics.
    #[must_use]
    pub fn metrics(mut self, metrics: tinyagent_otel::Prometheus) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Accepts an admin key, named [`DEFAULT_ADMIN_KEY_NAME`]: a request with it lists every
    /// tenant's sessions (each with its owner) and reads, posts to and deletes any of them
    /// (`?owner=NAME` addresses another tenant's; see the serving guide), and reads
    /// `/metrics`. Its rights go with the key itself, never with its name; the sessions it
    /// creates without `?owner` have no owner, so only admin keys see them.
    #[must_use]
    pub fn admin_key(self, key: impl Into<String>) -> Self {
        self.named_admin_key(DEFAULT_ADMIN_KEY_NAME, key)
    }

    /// Accepts an admin key under a name of your choosing (see [`admin_key`](Self::admin_key);
    /// names must be unique, as for [`named_api_key`](Self::named_api_key)).
    #[must_use]
    pub fn named_admin_key(self, name: impl Into<String>, key: impl Into<String>) -> Self {
        self.add_key(name.into(), key.into(), true)
    }

    /// How many sessions one key may keep (`None`, the default: no limit). A message that
    /// would create one more gets `409` with code `too_many_sessions`; deleting a session (or
    /// its expiry) makes room. Admin keys have no limit. Checked when the message arrives, so
    /// messages to new sessions sent at once may pass it by as many as are in flight.
    #[must_use]
    pub fn max_sessions_per_key(mut self, max: impl Into<Option<usize>>) -> Self {
        self.tenancy.max_sessions_per_key = max.into().map(|m| m.max(1));
        self
    }

    /// How many messages a session may hold (`None`, the default: no limit). A message to a
    /// session that holds this many already gets `413` with code `history_too_long`, and
    /// nothing runs; the run of an accepted message may take the history past the limit by
    /// the messages that run adds.
    #[must_use]
    pub fn max_history(mut self, max: impl Into<Option<usize>>) -> Self {
        self.tenancy.max_history = max.into().map(|m| m.max(1));
        self
    }

    /// How much one key's runs may cost per period (`None`, the default: no limit), priced by
    /// the agents' [price tables](tinyagent::LlmAgent::builder) (models without a price cost
    /// nothing). A key whose money is spent gets `429` with code `cost_limit_exceeded` and a
    /// `Retry-After`, and a run in flight stops before a model call once it has spent what its
    /// key had left when it started (each run then draws from [`Budget::default`] with that
    /// as its `max_cost`, in place of its agent's own budget). Counted per key name, in this
    /// process's memory: each replica of a server counts its own, and a restart forgets.
    ///
    /// ```
    /// use tinyagent_server::{CostLimit, Server};
    ///
    /// let server = Server::new().max_cost_per_key("5/day".parse::<CostLimit>().unwrap());
    /// # let _ = server;
    /// ```
    ///
    /// [`Budget::default`]: tinyagent::Budget::default
    #[must_use]
    pub fn max_cost_per_key(mut self, limit: impl Into<Option<crate::CostLimit>>) -> Self {
        self.cost_limit = limit.into();
        self
    }

    /// How many requests one key (without keys: all clients together) may send per unit of
    /// time (`None`, the default: no limit). One more gets `429` with code
    /// `rate_limit_exceeded` and a `Retry-After` in seconds.
    #[must_use]
    pub fn rate_limit(mut self, limit: impl Into<Option<RateLimit>>) -> Self {
        self.tenancy.rate_limit = limit.into();
        self
    }
}
