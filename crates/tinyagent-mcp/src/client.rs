//! Tools from MCP servers: [`McpToolset`], a [`ToolResolver`] over one server.

use std::collections::HashSet;
use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ErrorCode, Implementation,
    ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tinyagent::tools::{ToolResolver, validate_tool_name};
use tinyagent::{BoxFuture, Invocation, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints};
use tokio::sync::Mutex;

use crate::content::result_text;

/// How long a tool call may take by default before it fails with a timeout.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting (spawning, the MCP handshake) may take by default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

type NameFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Where the server is.
#[derive(Clone)]
enum Endpoint {
    /// A child process speaking MCP over its stdin and stdout.
    Command {
        program: OsString,
        args: Vec<OsString>,
        envs: Vec<(OsString, Option<OsString>)>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint.
    Http { url: String },
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Command { program, args, .. } => f
                .debug_struct("Command")
                .field("program", program)
                .field("args", args)
                .finish_non_exhaustive(),
            Self::Http { url } => f.debug_struct("Http").field("url", url).finish(),
        }
    }
}

/// The tools of one MCP server, offered to an agent: a [`ToolResolver`].
///
/// The toolset connects to a server, either a child process that speaks MCP over its standard
/// input and output ([`stdio`](Self::stdio), [`command`](Self::command)) or a streamable HTTP
/// endpoint ([`http`](Self::http)), lists its tools (every page), and turns each into a
/// tinyagent [`Tool`]: same description and input schema, MCP annotations as [`ToolHints`].
/// Calling such a tool sends `tools/call` with a timeout; a result flagged `isError` becomes a
/// [`ToolError`] whose message the model reads.
///
/// The list is cached and listed again only after the server sends
/// `notifications/tools/list_changed`. If the server goes away, calls fail with an
/// [`Unavailable`](tinyagent::ToolErrorKind::Unavailable) error that says so, and the next
/// invocation (the next [`resolve_tools`](ToolResolver::resolve_tools)) connects again.
///
/// The connection is made lazily, on the first invocation, or eagerly with
/// [`connect`](Self::connect). A child process is killed when the toolset is dropped; its
/// standard error is inherited. The client asks for protocol version 2025-11-25, the last with
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

struct Inner {
    label: String,
    endpoint: Endpoint,
    prefix: String,
    filter: Option<NameFilter>,
    call_timeout: Duration,
    connect_timeout: Duration,
    state: Mutex<Option<Connection>>,
}

struct Connection {
    service: RunningService<RoleClient, ToolsetClient>,
    /// Set when the server says its tool list changed.
    stale: Arc<AtomicBool>,
    /// Set when a call found the connection gone (HTTP has no connection to watch).
    broken: Arc<AtomicBool>,
    tools: Option<Vec<Arc<dyn Tool>>>,
}

impl fmt::Debug for McpToolset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolset")
            .field("server", &self.inner.label)
            .field("endpoint", &self.inner.endpoint)
            .field("prefix", &self.inner.prefix)
            .field("call_timeout", &self.inner.call_timeout)
            .finish_non_exhaustive()
    }
}

/// Why a toolset could not be made or could not connect.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The command line was empty or its quoting unbalanced.
    #[error("invalid MCP server command line `{command}`: {reason}")]
    InvalidCommand {
        /// The command line as given.
        command: String,
        /// What is wrong with it.
        reason: String,
    },
    /// Connecting or listing the tools failed.
    #[error("{0}")]
    Connect(#[source] ToolError),
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
    /// let tools = McpToolset::http("http://127.0.0.1:8000/mcp").name("notes");
    /// ```
    pub fn http(url: impl Into<String>) -> Self {
        let url = url.into();
        Self::with_endpoint(url.clone(), Endpoint::Http { url })
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
                state: Mutex::new(None),
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
                state: Mutex::new(None),
            },
        };
        f(&mut inner);
        Self {
            inner: Arc::new(inner),
        }
    }

    /// Names the server in error messages and logs (default: the command, or the URL).
    #[must_use]
    pub fn name(self, name: impl Into<String>) -> Self {
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

    /// The server's name as used in messages.
    pub fn server_name(&self) -> &str {
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
        let alive = state.as_ref().is_some_and(|c| {
            !c.broken.load(Ordering::SeqCst)
                && !c.service.is_closed()
                && !c.service.is_transport_closed()
        });
        if !alive {
            if state.is_some() {
                tracing::info!(server = %inner.label, "MCP server connection lost; reconnecting");
            }
            *state = None;
            let connection = tokio::time::timeout(inner.connect_timeout, inner.connect())
                .await
                .map_err(|_| {
                    ToolError::timed_out(format!(
                        "MCP server `{}` did not finish connecting within {:?}",
                        inner.label, inner.connect_timeout
                    ))
                })??;
            *state = Some(connection);
        }
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
                    if err.kind() == ToolErrorKind::Unavailable {
                        *state = None;
                    }
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
            let broken = Arc::clone(&connection.broken);
            connection.tools = Some(self.convert(listed, &peer, &broken));
        }
        Ok(connection.tools.clone().unwrap_or_default())
    }

    fn convert(
        &self,
        listed: Vec<rmcp::model::Tool>,
        peer: &Peer<RoleClient>,
        broken: &Arc<AtomicBool>,
    ) -> Vec<Arc<dyn Tool>> {
        let inner = &self.inner;
        let mut seen = HashSet::new();
        let label: Arc<str> = Arc::from(inner.label.as_str());
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
        for tool in listed {
            let remote = tool.name.to_string();
            if let Some(keep) = &inner.filter
                && !keep(&remote)
            {
                continue;
            }
            let Some(name) = exposed_name(&inner.prefix, &remote) else {
                tracing::warn!(server = %inner.label, tool = %remote,
                    "skipping MCP tool whose name cannot be made a valid tool name");
                continue;
            };
            if !seen.insert(name.clone()) {
                tracing::warn!(server = %inner.label, tool = %remote, name = %name,
                    "skipping MCP tool whose name clashes with another tool of the server");
                continue;
            }
            if name != format!("{}{remote}", inner.prefix) {
                tracing::warn!(server = %inner.label, tool = %remote, name = %name,
                    "MCP tool name is not a valid tool name; offering it under a sanitized name");
            }
            let description = tool
                .description
                .as_deref()
                .map(str::to_owned)
                .or_else(|| tool.title.clone())
                .or_else(|| tool.annotations.as_ref().and_then(|a| a.title.clone()))
                .unwrap_or_default();
            let hints = tool
                .annotations
                .as_ref()
                .map_or_else(ToolHints::default, |a| {
                    let d = ToolHints::default();
                    d.with_read_only(a.read_only_hint.unwrap_or(d.read_only))
                        .with_destructive(a.destructive_hint.unwrap_or(d.destructive))
                        .with_idempotent(a.idempotent_hint.unwrap_or(d.idempotent))
                        .with_open_world(a.open_world_hint.unwrap_or(d.open_world))
                });
            tools.push(Arc::new(McpTool {
                name,
                remote,
                description,
                schema: Value::Object((*tool.input_schema).clone()),
                hints,
                peer: peer.clone(),
                label: Arc::clone(&label),
                call_timeout: inner.call_timeout,
                broken: Arc::clone(broken),
            }));
        }
        tools
    }
}

impl Inner {
    async fn connect(&self) -> Result<Connection, ToolError> {
        let stale = Arc::new(AtomicBool::new(false));
        let client = ToolsetClient {
            stale: Arc::clone(&stale),
            label: self.label.clone(),
        };
        let service = match &self.endpoint {
            Endpoint::Command {
                program,
                args,
                envs,
                cwd,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args).kill_on_drop(true);
                for (key, value) in envs {
                    match value {
                        Some(value) => command.env(key, value),
                        None => command.env_remove(key),
                    };
                }
                if let Some(cwd) = cwd {
                    command.current_dir(cwd);
                }
                let transport = TokioChildProcess::new(command).map_err(|e| {
                    ToolError::unavailable(format!(
                        "MCP server `{}` could not be started: {e}",
                        self.label
                    ))
                    .with_source(e)
                })?;
                client.serve(transport).await
            }
            Endpoint::Http { url } => {
                let transport = StreamableHttpClientTransport::from_uri(url.as_str());
                client.serve(transport).await
            }
        };
        let service = service.map_err(|e| {
            ToolError::unavailable(format!(
                "could not connect to MCP server `{}`: {e}",
                self.label
            ))
            .with_source(e)
        })?;
        tracing::debug!(server = %self.label, "connected to MCP server");
        Ok(Connection {
            service,
            stale,
            broken: Arc::new(AtomicBool::new(false)),
            tools: None,
        })
    }
}

/// A failed request, as the model should read it.
fn service_error(label: &str, err: ServiceError, doing: &str) -> ToolError {
    {
        match err {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                ToolError::unavailable(format!(
                    "MCP server `{label}` is not running: the connection closed while {doing} \
                     ({err}); it will be reconnected on the next invocation"
                ))
                .with_source(err)
            }
            ServiceError::Timeout { .. } => ToolError::timed_out(format!(
                "MCP server `{label}` timed out while {doing}: {err}"
            ))
            .with_source(err),
            ServiceError::Cancelled { .. } => {
                ToolError::cancelled(format!("MCP server `{label}` cancelled {doing}: {err}"))
                    .with_source(err)
            }
            ServiceError::McpError(ref data) => {
                let message = format!(
                    "MCP server `{label}` returned an error while {doing}: {}",
                    data.message
                );
                let error = if data.code == ErrorCode::INVALID_PARAMS {
                    ToolError::invalid_input(message)
                } else if data.code == ErrorCode::METHOD_NOT_FOUND {
                    ToolError::not_found(message)
                } else {
                    ToolError::failed(message)
                };
                error.with_source(err)
            }
            other => ToolError::failed(format!(
                "MCP server `{label}` failed while {doing}: {other}"
            ))
            .with_source(other),
        }
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

/// The client half of the connection: notices when the server's tool list changes.
struct ToolsetClient {
    stale: Arc<AtomicBool>,
    label: String,
}

impl ClientHandler for ToolsetClient {
    fn get_info(&self) -> ClientConfig {
        // 2025-11-25 keeps the initialize handshake and unsolicited notifications
        // (`notifications/tools/list_changed`), which servers of every era understand.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("tinyagent-mcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.label, "MCP server's tool list changed");
        self.stale.store(true, Ordering::SeqCst);
    }
}

/// One tool of an MCP server, as a tinyagent [`Tool`].
struct McpTool {
    name: String,
    remote: String,
    description: String,
    schema: Value,
    hints: ToolHints,
    peer: Peer<RoleClient>,
    label: Arc<str>,
    call_timeout: Duration,
    broken: Arc<AtomicBool>,
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    fn hints(&self) -> ToolHints {
        self.hints
    }

    fn handle<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        input: &'a str,
    ) -> BoxFuture<'a, Result<String, ToolError>> {
        Box::pin(async move {
            let arguments = parse_arguments(input)?;
            let mut params = CallToolRequestParams::new(self.remote.clone());
            params.arguments = arguments;
            let label = &self.label;
            let timeout = self.call_timeout;
            let result = match tokio::time::timeout(timeout, self.peer.call_tool(params)).await {
                Ok(Ok(result)) => result,
                Ok(Err(err)) => {
                    let doing = format!("calling tool `{}`", self.remote);
                    let err = service_error(label, err, &doing);
                    if err.kind() == ToolErrorKind::Unavailable {
                        self.broken.store(true, Ordering::SeqCst);
                    }
                    return Err(err);
                }
                Err(_) => {
                    return Err(ToolError::timed_out(format!(
                        "MCP tool `{}` of server `{label}` did not answer within {timeout:?}",
                        self.remote
                    )));
                }
            };
            let text = result_text(&result);
            if result.is_error == Some(true) {
                let message = if text.is_empty() {
                    format!("MCP tool `{}` failed without a message", self.remote)
                } else {
                    text
                };
                return Err(ToolError::failed(message));
            }
            Ok(text)
        })
    }
}

fn parse_arguments(input: &str) -> Result<Option<serde_json::Map<String, Value>>, ToolError> {
    match serde_json::from_str::<Value>(tinyagent::tools::normalize_arguments(input)) {
        Ok(Value::Object(map)) => Ok(Some(map)),
        Ok(Value::Null) => Ok(Some(serde_json::Map::new())),
        Ok(other) => Err(ToolError::invalid_input(format!(
            "invalid arguments: expected a JSON object, got {}",
            kind_of(&other)
        ))),
        Err(e) => Err(ToolError::invalid_input(format!(
            "invalid arguments: the arguments are not valid JSON: {e}"
        ))
        .with_source(e)),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The name a server's tool is offered under: the prefix and the name, made valid (characters
/// outside `[a-zA-Z0-9_-]` become `_`, cut to 64 characters); `None` if nothing valid is left.
fn exposed_name(prefix: &str, remote: &str) -> Option<String> {
    let name = format!("{prefix}{remote}");
    if validate_tool_name(&name).is_ok() {
        return Some(name);
    }
    let sanitized: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    let meaningful = sanitized.chars().any(|c| c.is_ascii_alphanumeric());
    (meaningful && validate_tool_name(&sanitized).is_ok()).then_some(sanitized)
}

/// Splits a command line on whitespace; single and double quotes group, a backslash escapes
/// the next character outside single quotes.
fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => current.push(c),
                        None => return Err("a single quote is not closed".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => current.push(c),
                            None => return Err("it ends with a backslash".to_owned()),
                        },
                        Some(c) => current.push(c),
                        None => return Err("a double quote is not closed".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => current.push(c),
                    None => return Err("it ends with a backslash".to_owned()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_like_a_shell() {
        assert_eq!(
            split_command_line(r#"python3  "my server.py" --name 'a b' c\ d"#).unwrap(),
            ["python3", "my server.py", "--name", "a b", "c d"]
        );
        assert_eq!(split_command_line("x ''").unwrap(), ["x", ""]);
        assert!(split_command_line("x \"y").is_err());
        assert!(split_command_line("").unwrap().is_empty());
    }

    #[test]
    fn names_are_prefixed_and_sanitized() {
        assert_eq!(exposed_name("fs_", "read").as_deref(), Some("fs_read"));
        assert_eq!(
            exposed_name("", "files.read v2").as_deref(),
            Some("files_read_v2")
        );
        assert_eq!(exposed_name("", "...").as_deref(), None);
        assert_eq!(exposed_name("", "").as_deref(), None);
        assert_eq!(exposed_name("", &"a".repeat(80)).map(|n| n.len()), Some(64));
        assert_eq!(exposed_name("", "天气").as_deref(), None);
    }

    #[test]
    fn arguments_must_be_a_json_object() {
        assert!(parse_arguments("").unwrap().unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap().unwrap()["a"], 1);
        let err = parse_arguments("[1]").unwrap_err();
        assert_eq!(err.kind(), tinyagent::ToolErrorKind::InvalidInput);
        assert!(err.message().contains("an array"), "{err}");
        let err = parse_arguments("{").unwrap_err();
        assert!(err.message().contains("not valid JSON"), "{err}");
    }
}
