//! Tools from MCP servers: [`McpToolset`], a [`ToolResolver`] over one server, the type and
//! its settings. How it works sits beside it in `client/`: connecting (`connection`, over
//! `stdio` or `http`, with `oauth`), the client's handler (`handler`, passing what the server
//! asks to the `bridge`), reconnecting (`restart`, `health`), the remote tools
//! (`listing`, `remote_tool`, `naming`) and the server's prompts and resources (`catalog`,
//! `subscriptions`), mirroring the server's folder.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tinyagent::tools::ToolResolver;
use tinyagent::{BoxFuture, Invocation, Tool, ToolError};
use tokio::sync::Mutex;

mod bridge;
mod catalog;
mod command_line;
mod connection;
mod endpoint;
mod errors;
mod handler;
mod health;
mod health_state;
mod http;
mod listing;
mod naming;
mod oauth;
mod remote_tool;
mod restart;
mod stdio;
mod subscriptions;

use crate::protocol::content::DEFAULT_MAX_RESULT_BYTES;
use crate::protocol::errors::service_error;
use bridge::Bridge;
pub use bridge::{ElicitationFn, ElicitationHandler, elicitation_fn};
pub use catalog::{McpPromptInfo, McpResourceInfo};
use command_line::split_command_line;
use connection::Inner;
use endpoint::{Endpoint, Secret};
pub use errors::McpClientError;
pub use health_state::McpHealth;
pub use oauth::{DEFAULT_AUTHORIZATION_TIMEOUT, McpOAuth};
pub use remote_tool::McpToolInfo;

/// How long a tool call may take by default before it fails with a timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting (spawning, the MCP handshake) may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How many resource updates wait for a slow reader of
/// [`resource_updates`](McpToolset::resource_updates) before the oldest are dropped.
const UPDATES_BUFFER: usize = 256;

/// The tools of one MCP server, offered to an agent: a [`ToolResolver`].
///
/// The toolset connects to a server, either a child process that speaks MCP over its standard
/// input and output ([`stdio`](Self::stdio), [`command`](Self::command)) or a streamable HTTP
/// endpoint ([`http`](Self::http)), lists its tools (every page), and turns each into a
/// tinyagent [`Tool`]: same description and input schema, MCP annotations as
/// [`ToolHints`](tinyagent::ToolHints). Calling such a tool sends `tools/call` with a timeout;
/// a result flagged `isError` becomes a [`ToolError`] whose message the model reads.
///
/// The list is cached and listed again only after the server sends
/// `notifications/tools/list_changed`. If the server goes away, the call in flight fails with
/// an [`Unavailable`](tinyagent::ToolErrorKind::Unavailable) error that says so, and the
/// toolset connects again by itself (a stdio server's process is started again): at once,
/// then, while the server keeps dying soon after it starts, after 1 s, 2 s, 4 s … at most
/// 64 s. The tools already handed out use the new connection; [`health`](Self::health)
/// says what is happening meanwhile.
///
/// The connection is made lazily, on the first invocation, or eagerly with
/// [`connect`](Self::connect). A child process is killed when the toolset is dropped; its
/// standard error is inherited. A child that writes something other than MCP on its standard
/// output and does not finish the handshake within two seconds fails to connect, with an
/// error quoting what it wrote.
///
/// # Tool names
///
/// Every tool the server lists stays reachable under a name model APIs accept (1 to 64 of
/// `a-z A-Z 0-9 _ -`), unique and stable: a valid name is kept (after the
/// [`prefix`](Self::prefix)); another is sanitized (`files.read` → `files_read`, `météo` →
/// `m_ue9_t_ue9_o`); when sanitized names clash with each other or with a kept name, each
/// sanitized one gets `_` and six hex digits of a hash of its own name (`files.read` and
/// `files read` beside `files_read` become `files_read_…`), so no tool hides another and no
/// name depends on the order of the list. [`tool_infos`](Self::tool_infos) gives the mapping.
/// A tool that requires MCP task support (`execution.taskSupport: "required"`, seen on stdio)
/// is not offered, since this client cannot call it; `tool_infos` says so.
///
/// # Results
///
/// A result's text blocks are joined; other content is described (see
/// [`result_text`](crate::result_text)). Results longer than
/// [`max_result_bytes`](Self::max_result_bytes) (100 000 bytes by default) are cut, with a
/// marker saying how much. The client asks for protocol version 2025-11-25, the last with
/// the `initialize` handshake and unsolicited notifications, which servers of every era speak.
///
/// ```no_run
/// use std::time::Duration;
/// use tinyagent::LlmAgent;
/// use tinyagent::testing::ScriptedModel;
/// use tinyagent_mcp::McpToolset;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let files = McpToolset::stdio("npx -y @modelcontextprotocol/server-filesystem /tmp")?
///     .prefix("fs_")
///     .filter(|name| !name.starts_with("write"))
///     .call_timeout(Duration::from_secs(20));
/// files.connect().await?; // optional: fail early rather than on the first invocation
///
/// let agent = LlmAgent::builder("files")
///     .model(ScriptedModel::new([]))
///     .tool_resolver(files)
///     .build()?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpToolset {
    inner: Arc<Inner>,
}

impl fmt::Debug for McpToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolset")
            .field("server", &self.inner.label)
            .field("endpoint", &self.inner.endpoint)
            .field("prefix", &self.inner.prefix)
            .field("call_timeout", &self.inner.call_timeout)
            .field(
                "headers",
                &self
                    .inner
                    .headers
                    .iter()
                    .map(|(name, _)| format!("{name}: <redacted>"))
                    .collect::<Vec<_>>(),
            )
            .field("oauth", &self.inner.oauth)
            .finish_non_exhaustive()
    }
}

impl McpToolset {
    /// A toolset over a server started from a command line, such as
    /// `"python3 server.py --verbose"`, split on whitespace with single and double quotes
    /// grouping words. Use [`command`](Self::command) for full control (environment, working
    /// directory).
    ///
    /// ```
    /// use tinyagent_mcp::McpToolset;
    ///
    /// let tools = McpToolset::stdio("python3 'my server.py'").unwrap();
    /// assert!(McpToolset::stdio("  ").is_err());
    /// assert!(McpToolset::stdio("python3 'unclosed").is_err());
    /// ```
    pub fn stdio(command_line: &str) -> Result<Self, McpClientError> {
        let words =
            split_command_line(command_line).map_err(|reason| McpClientError::InvalidCommand {
                command: command_line.to_owned(),
                reason,
            })?;
        let mut words = words.into_iter();
        let Some(program) = words.next() else {
            return Err(McpClientError::InvalidCommand {
                command: command_line.to_owned(),
                reason: "it is empty".to_owned(),
            });
        };
        let mut command = std::process::Command::new(program);
        command.args(words);
        Ok(Self::command(command))
    }

    /// A toolset over a server started from a [`std::process::Command`] (program, arguments,
    /// environment and working directory are taken from it; its stdio settings are not: the
    /// server's standard input and output carry MCP, and its standard error is inherited).
    ///
    /// Only variables set on the command are taken: `env_clear()`, `env_remove()` and
    /// Unix-specific settings (user, group, process group, `pre_exec`) cannot be read back
    /// from a `Command`, so the server inherits this process's environment plus what was set.
    /// Do not rely on `env_clear()` to keep secrets (API keys in the environment) from an
    /// untrusted server: start it through a wrapper (`env -i ...`) instead.
    ///
    /// ```
    /// use tinyagent_mcp::McpToolset;
    ///
    /// let mut command = std::process::Command::new("python3");
    /// command.arg("server.py").env("LOG_LEVEL", "debug");
    /// let tools = McpToolset::command(command).prefix("py_");
    /// ```
    pub fn command(command: std::process::Command) -> Self {
        let program = command.get_program().to_owned();
        let label = std::path::Path::new(&program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| program.to_string_lossy().into_owned());
        let label = match command.get_args().next() {
            Some(first) => format!("{label} {}", first.to_string_lossy()),
            None => label,
        };
        let endpoint = Endpoint::Command {
            program,
            args: command.get_args().map(ToOwned::to_owned).collect(),
            envs: command
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
                .collect(),
            cwd: command.get_current_dir().map(ToOwned::to_owned),
        };
        Self::with_endpoint(label, endpoint)
    }

    /// A toolset over a server at a streamable HTTP endpoint, such as
    /// `"http://127.0.0.1:8000/mcp"`. HTTPS uses rustls.
    ///
    /// ```
    /// use tinyagent_mcp::McpToolset;
    ///
    /// let tools = McpToolset::http("http://127.0.0.1:8000/mcp").server_name("notes");
    /// ```
    pub fn http(url: impl Into<String>) -> Self {
        let url = url.into();
        // The label names the server in errors and logs: never with its credentials.
        Self::with_endpoint(tinyagent::redact::url(&url), Endpoint::Http { url })
    }

    fn with_endpoint(label: String, endpoint: Endpoint) -> Self {
        Self {
            inner: Arc::new(Inner {
                label,
                endpoint,
                prefix: String::new(),
                filter: None,
                call_timeout: DEFAULT_CALL_TIMEOUT,
                connect_timeout: DEFAULT_CONNECT_TIMEOUT,
                max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
                headers: Vec::new(),
                oauth: None,
                bridge: Arc::new(Bridge::default()),
                state: Mutex::new(None),
                outage: Default::default(),
                health: Default::default(),
                generation: Default::default(),
                subscribed: Default::default(),
                updates: tokio::sync::broadcast::channel(UPDATES_BUFFER).0,
            }),
        }
    }

    fn configure(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = match Arc::try_unwrap(self.inner) {
            Ok(inner) => inner,
            // A clone exists: configure a fresh, unconnected copy.
            Err(shared) => Inner {
                label: shared.label.clone(),
                endpoint: shared.endpoint.clone(),
                prefix: shared.prefix.clone(),
                filter: shared.filter.clone(),
                call_timeout: shared.call_timeout,
                connect_timeout: shared.connect_timeout,
                max_result_bytes: shared.max_result_bytes,
                headers: shared.headers.clone(),
                oauth: shared.oauth.clone(),
                bridge: Arc::new(Bridge::with_handlers(
                    shared.bridge.sampling.clone(),
                    shared.bridge.elicitation.clone(),
                )),
                state: Mutex::new(None),
                outage: Default::default(),
                health: Default::default(),
                generation: Default::default(),
                subscribed: Default::default(),
                updates: tokio::sync::broadcast::channel(UPDATES_BUFFER).0,
            },
        };
        f(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Answers the server's sampling requests (`sampling/createMessage`) with `model`. Without
    /// it, a sampling request goes to the host of the tool call that caused it (an MCP server
    /// serving this toolset's tools asks its own client), or is refused with an error saying
    /// so. The toolset declares the sampling and elicitation capabilities either way.
    #[must_use]
    pub fn sampling_model(self, model: Arc<dyn tinyagent::Model>) -> Self {
        self.configure(|inner| {
            inner.bridge = Arc::new(Bridge::with_handlers(
                Some(model),
                inner.bridge.elicitation.clone(),
            ));
        })
    }

    /// Answers the server's elicitation requests (`elicitation/create`: questions for the
    /// user) with `handler`. Without it, a request goes to the host of the tool call that
    /// caused it, or is declined.
    ///
    /// ```
    /// use tinyagent::host::Elicitation;
    /// use tinyagent_mcp::{McpToolset, elicitation_fn};
    ///
    /// let tools = McpToolset::http("http://127.0.0.1:8000/mcp").elicitation(elicitation_fn(
    ///     |request| async move {
    ///         if request.message.contains("delete") {
    ///             Elicitation::Decline
    ///         } else {
    ///             Elicitation::Accept(serde_json::json!({"confirm": true}))
    ///         }
    ///     },
    /// ));
    /// ```
    #[must_use]
    pub fn elicitation(self, handler: impl ElicitationHandler) -> Self {
        let handler: Arc<dyn ElicitationHandler> = Arc::new(handler);
        self.configure(|inner| {
            inner.bridge = Arc::new(Bridge::with_handlers(
                inner.bridge.sampling.clone(),
                Some(handler),
            ));
        })
    }

    /// Names the server in error messages and logs (default: the command, or the URL).
    #[must_use]
    pub fn server_name(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.configure(|inner| inner.label = name)
    }

    /// Puts `prefix` before every tool name, so tools of several servers cannot clash
    /// (`read_file` becomes `fs_read_file`). Calls go to the server under the original name.
    #[must_use]
    pub fn prefix(self, prefix: impl Into<String>) -> Self {
        let prefix = prefix.into();
        self.configure(|inner| inner.prefix = prefix)
    }

    /// Offers only the tools whose name (as the server gives it, before any prefix) passes
    /// `keep`.
    #[must_use]
    pub fn filter(self, keep: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.configure(|inner| inner.filter = Some(Arc::new(keep)))
    }

    /// How long one tool call may take before it fails with
    /// [`TimedOut`](tinyagent::ToolErrorKind::TimedOut) (default
    /// [`DEFAULT_CALL_TIMEOUT`]). The server is told the call was cancelled.
    #[must_use]
    pub fn call_timeout(self, timeout: Duration) -> Self {
        self.configure(|inner| inner.call_timeout = timeout)
    }

    /// How long connecting and listing the tools may take (default
    /// [`DEFAULT_CONNECT_TIMEOUT`]).
    #[must_use]
    pub fn connect_timeout(self, timeout: Duration) -> Self {
        self.configure(|inner| inner.connect_timeout = timeout)
    }

    /// The most bytes of a tool's result passed on to the model (default
    /// [`DEFAULT_MAX_RESULT_BYTES`](crate::DEFAULT_MAX_RESULT_BYTES)); a longer result is cut
    /// on a character boundary and ends with a marker saying how much was cut (see
    /// [`truncate_result`](crate::truncate_result)). Error messages are bounded the same way.
    #[must_use]
    pub fn max_result_bytes(self, max_bytes: usize) -> Self {
        self.configure(|inner| inner.max_result_bytes = max_bytes)
    }

    /// Sends an HTTP header with every request to the server (streamable HTTP only; repeat
    /// for several headers). Values are kept out of `Debug` output, logs and error messages.
    /// An invalid name or value makes connecting fail with an error naming the header.
    ///
    /// ```
    /// use tinyagent_mcp::McpToolset;
    ///
    /// let tools = McpToolset::http("https://mcp.example.com/mcp")
    ///     .header("X-Api-Key", "s3cret")
    ///     .header("X-Team", "tools");
    /// assert!(!format!("{tools:?}").contains("s3cret"));
    /// ```
    #[must_use]
    pub fn header(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let (name, value) = (name.into(), Secret(Arc::from(value.into())));
        self.configure(|inner| {
            inner
                .headers
                .retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            inner.headers.push((name, value));
        })
    }

    /// Sends `Authorization: Bearer TOKEN` with every request to the server (streamable HTTP
    /// only). The token is kept out of `Debug` output, logs and error messages.
    ///
    /// ```
    /// use tinyagent_mcp::McpToolset;
    ///
    /// let token = std::env::var("NOTES_TOKEN").unwrap_or_default();
    /// let tools = McpToolset::http("https://notes.example.com/mcp").bearer_token(token);
    /// ```
    #[must_use]
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        let token = token.into();
        self.header("Authorization", format!("Bearer {token}"))
    }

    /// Authorizes with OAuth 2.1 (authorization code with PKCE) for a server that requires it
    /// (streamable HTTP only): see [`McpOAuth`](crate::McpOAuth). The user is asked on the
    /// first connection that has no token; later connections, reconnects included, reuse and
    /// refresh it.
    #[must_use]
    pub fn oauth(self, oauth: McpOAuth) -> Self {
        self.configure(|inner| inner.oauth = Some(oauth))
    }

    /// The server's name as used in messages.
    pub fn name(&self) -> &str {
        &self.inner.label
    }

    /// Connects now (if not connected) and lists the tools, so a bad command or URL fails here
    /// rather than on the first invocation.
    pub async fn connect(&self) -> Result<(), McpClientError> {
        self.tools()
            .await
            .map(drop)
            .map_err(McpClientError::Connect)
    }

    /// The tools of the server, as offered to an agent: connects if needed, lists again if the
    /// server said its list changed, and otherwise returns the cached list.
    pub async fn tools(&self) -> Result<Vec<Arc<dyn Tool>>, ToolError> {
        let inner = &self.inner;
        let mut state = inner.state.lock().await;
        inner.ensure_connected(&mut state).await?;
        let Some(connection) = state.as_mut() else {
            return Err(ToolError::unavailable(format!(
                "MCP server `{}` is not connected",
                inner.label
            )));
        };
        let stale = connection.stale.swap(false, Ordering::SeqCst);
        if stale || connection.tools.is_none() {
            let peer = connection.service.peer().clone();
            let listed = tokio::time::timeout(inner.connect_timeout, peer.list_all_tools()).await;
            let listed = match listed {
                Ok(Ok(listed)) => listed,
                Ok(Err(err)) => {
                    connection.stale.store(true, Ordering::SeqCst);
                    let err = service_error(&inner.label, err, "listing its tools");
                    inner.check_error(connection.generation, &err);
                    return Err(err);
                }
                Err(_) => {
                    connection.stale.store(true, Ordering::SeqCst);
                    return Err(ToolError::timed_out(format!(
                        "MCP server `{}` did not list its tools within {:?}",
                        inner.label, inner.connect_timeout
                    )));
                }
            };
            let (tools, infos) =
                listing::offered_tools(inner, listed, connection.output.as_deref());
            connection.tools = Some(tools);
            connection.infos = infos;
        }
        Ok(connection.tools.clone().unwrap_or_default())
    }

    /// Every tool the server lists, offered or not, with the name it is offered under, its
    /// title and output schema, and why it is not offered when it is not (left out by the
    /// [`filter`](Self::filter), or needing MCP task support, which this client does not
    /// have). Connects and lists like [`tools`](Self::tools).
    ///
    /// ```no_run
    /// use tinyagent_mcp::McpToolset;
    ///
    /// # async fn demo() -> Result<(), tinyagent::ToolError> {
    /// let toolset = McpToolset::http("http://127.0.0.1:8000/mcp");
    /// for info in toolset.tool_infos().await? {
    ///     if info.renamed("") {
    ///         println!("{} is offered as {}", info.remote_name, info.name);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn tool_infos(&self) -> Result<Vec<McpToolInfo>, ToolError> {
        self.tools().await?;
        let state = self.inner.state.lock().await;
        Ok(state.as_ref().map(|c| c.infos.clone()).unwrap_or_default())
    }
}

impl ToolResolver for McpToolset {
    fn resolve_tools<'a>(
        &'a self,
        _inv: &'a Invocation,
    ) -> BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, ToolError>> {
        Box::pin(self.tools())
    }
}
