//! [`Server`]: the builder that holds agents, a session store, keys and limits, and turns them
//! into an axum [`Router`] or a running server.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use tinyagent::agent::{OnBusy, SessionRunner};
use tinyagent::{
    Agent,
    store::{MemoryStore, SessionStore},
};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::auth::{ANONYMOUS, KeyRing};
use crate::chat::ClientInstructions;
use crate::guard::{FrontLayer, SitePolicy};
use tinyagent_http::serve::ConnLimits;
use tower_layer::Layer;

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
    agents: Vec<Arc<dyn Agent>>,
    store: Arc<dyn SessionStore>,
    pub(crate) keys: Vec<(String, String)>,
    allow_unauthenticated: bool,
    limits: Limits,
    on_busy: OnBusy,
    page: bool,
    site: SitePolicy,
    client_instructions: ClientInstructions,
    client_tool_results: bool,
    pub(crate) tenancy: crate::tenancy::Tenancy,
}

/// The limits a [`Server`] enforces.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) body_timeout: Duration,
    pub(crate) max_concurrent_per_key: usize,
    pub(crate) drain_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
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
            tenancy: Default::default(),
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

    /// Offers an agent already shared behind an `Arc`.
    #[must_use]
    pub fn shared_agent(mut self, agent: Arc<dyn Agent>) -> Self {
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

    /// Keeps sessions in a store already shared behind an `Arc`.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
        self
    }

    /// Accepts this API key (as `Authorization: Bearer <key>`); logs name it `key-N`, N
    /// counting from 1 in the order keys were added. Empty keys are ignored.
    #[must_use]
    pub fn api_key(self, key: impl Into<String>) -> Self {
        let id = format!("key-{}", self.keys.len() + 1);
        self.named_api_key(id, key)
    }

    /// Accepts these API keys.
    #[must_use]
    pub fn api_keys<K: Into<String>>(self, keys: impl IntoIterator<Item = K>) -> Self {
        keys.into_iter().fold(self, Self::api_key)
    }

    /// Accepts this API key under a name of your choosing, which logs show instead of the key
    /// (and by which its concurrency is counted). The name is the tenant: the sessions the key
    /// creates belong to it, so keep it when the key's secret changes. An empty name is
    /// replaced by `key-N`.
    #[must_use]
    pub fn named_api_key(mut self, id: impl Into<String>, key: impl Into<String>) -> Self {
        let key = key.into();
        let id = id.into();
        let id = if id.trim().is_empty() {
            format!("key-{}", self.keys.len() + 1)
        } else {
            id
        };
        if !key.is_empty() {
            self.keys.push((id, key));
        }
        self
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

    /// Whether `GET /` serves the page to try the agents in a browser (on by default).
    #[must_use]
    pub fn page(mut self, page: bool) -> Self {
        self.page = page;
        self
    }

    /// The routes, to serve or to mount in an app of your own (`Router::nest`, `merge`).
    ///
    /// Mounted this way, the routes enforce the keys, body size, time and concurrency limits
    /// themselves; the choice of address (and whether a server without keys may listen on
    /// it) is the app's. [`serve`](Self::serve) makes it for you.
    pub fn router(self) -> Router {
        let (router, site, _) = self.into_parts(Arc::new(AtomicBool::new(false)));
        // Every route behind the front door (request ids, the cross-site checks).
        router.layer(FrontLayer::new(site))
    }

    /// The routes (without the front door), the host and origin policy, and the limits.
    fn into_parts(self, draining: Arc<AtomicBool>) -> (Router, Arc<SitePolicy>, Limits) {
        let limits = self.limits;
        let runners = self
            .agents
            .iter()
            .map(|agent| {
                let runner =
                    SessionRunner::new(agent.clone(), self.store.clone()).on_busy(self.on_busy);
                (agent.name().to_owned(), runner)
            })
            .collect();
        let mut slots: HashMap<String, Arc<Semaphore>> = HashMap::new();
        for (id, _) in &self.keys {
            slots.insert(
                id.clone(),
                Arc::new(Semaphore::new(limits.max_concurrent_per_key)),
            );
        }
        slots.insert(
            ANONYMOUS.to_owned(),
            Arc::new(Semaphore::new(limits.max_concurrent_per_key)),
        );
        let site = Arc::new(self.site);
        let state = AppState {
            agents: self.agents,
            runners,
            store: self.store,
            keys: KeyRing::new(self.keys),
            slots,
            limits,
            draining,
            page: self.page,
            client_instructions: self.client_instructions,
            client_tool_results: self.client_tool_results,
            tenancy: self.tenancy,
        };
        (crate::routes::router(Arc::new(state)), site, limits)
    }

    /// Why the server may not serve on `addr`, if it may not.
    fn cannot_serve_on(&self, addr: SocketAddr) -> Option<ServeError> {
        if self.keys.is_empty() && !self.allow_unauthenticated && !addr.ip().is_loopback() {
            Some(ServeError::Unauthenticated { addr })
        } else if self.agents.is_empty() {
            Some(ServeError::NoAgents)
        } else {
            None
        }
    }

    /// Serves on `listener` until `shutdown` completes, then stops accepting connections and
    /// lets the answers in flight finish, for at most the [drain
    /// timeout](Self::drain_timeout).
    ///
    /// Refuses to start without API keys on an address other than loopback, unless
    /// [`allow_unauthenticated`](Self::allow_unauthenticated) says so.
    ///
    /// ```no_run
    /// # async fn run(server: tinyagent_server::Server) -> Result<(), tinyagent_server::ServeError> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
    /// server.serve(listener, async { tokio::signal::ctrl_c().await.ok(); }).await
    /// # }
    /// ```
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), ServeError> {
        let addr = listener.local_addr()?;
        if let Some(problem) = self.cannot_serve_on(addr) {
            return Err(problem);
        }
        if self.keys.is_empty() {
            tracing::warn!(%addr, "serving without API keys: anyone who can reach the address may use the agents");
        }
        let draining = Arc::new(AtomicBool::new(false));
        let (router, site, limits) = self.into_parts(draining.clone());
        // The front door wraps the router once (not each route, as `Router::layer` would).
        let service = FrontLayer::new(site).layer(router);
        let stop = async move {
            shutdown.await;
            draining.store(true, Ordering::SeqCst);
            tracing::info!(
                "shutting down: no new connections; letting the answers in flight finish"
            );
        };
        tracing::info!(%addr, "serving");
        let conn_limits = ConnLimits::new(limits.header_timeout, limits.max_connections)
            .write_timeout(limits.write_timeout);
        let (drained, cut) = crate::listen::serve(listener, service, conn_limits, stop).await;
        if tokio::time::timeout(limits.drain_timeout, drained)
            .await
            .is_err()
        {
            let _ = cut.send(true);
            tracing::warn!(
                drain_timeout_ms = limits.drain_timeout.as_millis() as u64,
                "answers still in flight after the drain timeout were cut"
            );
        }
        tracing::info!("stopped");
        Ok(())
    }
}

/// Why [`Server::serve`] could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// No API keys, and an address that is not loopback.
    #[error(
        "refusing to serve on {addr} without API keys: anyone who can reach it could use the \
         agents; add API keys, listen on a loopback address (127.0.0.1), or allow \
         unauthenticated access explicitly"
    )]
    Unauthenticated {
        /// The address.
        addr: SocketAddr,
    },
    /// No agent to serve.
    #[error("no agent to serve: add one with Server::agent")]
    NoAgents,
    /// The listener failed.
    #[error("the server's listener failed: {0}")]
    Io(#[from] std::io::Error),
}

/// What every handler shares.
pub(crate) struct AppState {
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) runners: HashMap<String, SessionRunner>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) keys: KeyRing,
    pub(crate) slots: HashMap<String, Arc<Semaphore>>,
    pub(crate) limits: Limits,
    pub(crate) draining: Arc<AtomicBool>,
    pub(crate) page: bool,
    pub(crate) client_instructions: ClientInstructions,
    pub(crate) client_tool_results: bool,
    pub(crate) tenancy: crate::tenancy::Tenancy,
}

impl AppState {
    /// The agent of this name.
    pub(crate) fn agent(&self, name: &str) -> Option<&Arc<dyn Agent>> {
        self.agents.iter().find(|a| a.name() == name)
    }

    /// The names of the agents, for error messages.
    pub(crate) fn agent_names(&self) -> String {
        self.agents
            .iter()
            .map(|a| format!("{:?}", a.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tinyagent::LlmAgent;
    use tinyagent::testing::ScriptedModel;

    fn agent() -> LlmAgent {
        LlmAgent::builder("a")
            .model(ScriptedModel::new([]))
            .build()
            .unwrap()
    }

    #[test]
    fn without_keys_only_loopback_is_served_unless_allowed() {
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let v6: SocketAddr = "[::]:8080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        let local6: SocketAddr = "[::1]:8080".parse().unwrap();
        let server = Server::new().agent(agent());
        for addr in [open, v6] {
            let problem = server.cannot_serve_on(addr).expect("refused");
            assert!(matches!(problem, ServeError::Unauthenticated { .. }));
            assert!(
                problem.to_string().contains("without API keys"),
                "{problem}"
            );
        }
        assert!(server.cannot_serve_on(local).is_none());
        assert!(server.cannot_serve_on(local6).is_none());
        let server = server.allow_unauthenticated(true);
        assert!(server.cannot_serve_on(open).is_none());
        let server = Server::new().agent(agent()).api_key("k");
        assert!(server.cannot_serve_on(open).is_none());
        // An empty key is no key.
        let server = Server::new().agent(agent()).api_key("");
        assert!(server.cannot_serve_on(open).is_some());
    }

    #[test]
    fn a_server_needs_an_agent() {
        let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
        assert!(matches!(
            Server::new().cannot_serve_on(local),
            Some(ServeError::NoAgents)
        ));
    }

    #[test]
    fn an_agent_of_the_same_name_replaces_the_earlier_one() {
        let server = Server::new().agent(agent()).agent(agent());
        assert_eq!(server.agents.len(), 1);
        let debug = format!("{server:?}");
        assert!(debug.contains("keys: 0"), "{debug}");
    }

    #[test]
    fn keys_are_found_by_value_and_never_printed() {
        let server = Server::new().api_key("sk-1").named_api_key("ops", "sk-2");
        assert!(!format!("{server:?}").contains("sk-"));
        let ring = KeyRing::new(server.keys);
        assert_eq!(ring.find(b"sk-1").map(|n| &**n), Some("key-1"));
        assert_eq!(ring.find(b"sk-2").map(|n| &**n), Some("ops"));
        assert_eq!(ring.find(b"sk-"), None);
        assert_eq!(ring.find(b""), None);
    }
}
