//! tinyagent tools served over MCP: [`McpServer`], the type and its settings. What it serves
//! and how sit beside it in `server/`: the requests' handler (`handler`), a `tools/call`
//! answered (`tool_call`, with `host` and, on protocol 2026-07-28, `input_required`), the
//! prompts and resources (`catalog`, `prompt`, `resource`, `subscribe`, `subscriptions`),
//! and the transports (`stdio`, `http`), mirroring the client's folder.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, Implementation, ToolAnnotations};
use serde_json::Value;
use tinyagent::tools::ToolInput;
use tinyagent::tools::schema::SchemaValidator;
use tinyagent::{Tool, ToolContext, ToolError};
use tinyagent_http::serve::ConnLimits;

mod catalog;
mod errors;
mod handler;
mod host;
mod http;
mod input_required;
mod log_filter;
mod prompt;
mod resource;
mod std_streams;
mod stdio;
mod subscribe;
mod subscriptions;
mod tool_call;

use crate::protocol::content::{error_result, success_result};
use catalog::Catalog;
pub use errors::McpServeError;
pub use http::{HttpServerHandle, MCP_HTTP_PATH, McpHttpService};
use input_required::Waiting;
use log_filter::SessionLogLevel;
pub use prompt::McpPrompt;
pub use resource::{McpResource, McpResourceTemplate, ResourceBody};
use subscriptions::{SessionToken, Subscriptions};

/// How long a client of [`McpServer::serve_http`] may take to send a request's headers by
/// default (also how long a kept-alive connection may stay idle): 10 seconds.
pub const DEFAULT_HTTP_HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// How many connections [`McpServer::serve_http`] keeps open at once by default.
pub const DEFAULT_HTTP_MAX_CONNECTIONS: usize = 1024;

/// Serves a set of tinyagent tools, agent tools included, to MCP clients over stdio
/// ([`serve_stdio`](Self::serve_stdio)) or streamable HTTP ([`serve_http`](Self::serve_http),
/// [`http_service`](Self::http_service)).
///
/// Each tool is listed with its name, description and input schema as generated, and its
/// [`ToolHints`](tinyagent::ToolHints) as MCP annotations. A call's arguments are checked
/// against the schema first; invalid arguments and a tool's own error come back as a result
/// flagged `isError` whose text is the error message, so the calling model can read it and
/// correct itself. Only a call to an unknown tool is a protocol error. A tool that panics
/// gives an `isError` result, not a dead server.
///
/// `McpServer` implements rmcp's [`ServerHandler`](rmcp::handler::server::ServerHandler), so
/// it can be served over any rmcp transport too. Nothing is written to standard output except
/// MCP messages on stdio: logs go through `tracing`, and it is the program's subscriber that
/// chooses where (stderr).
///
/// ```no_run
/// use tinyagent_mcp::McpServer;
///
/// # async fn demo() -> Result<(), tinyagent_mcp::McpServeError> {
/// McpServer::new(tinyagent_demo::all_tools())
///     .server_name("demo-tools")
///     .serve_stdio()
///     .await
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    pub(crate) inner: Arc<ServerInner>,
    /// The session's `logging/setLevel` (each HTTP session gets its own).
    pub(crate) log_level: SessionLogLevel,
    /// The session's subscriptions end when its last handle is dropped.
    pub(crate) session: Arc<SessionToken>,
}

/// Who may call the endpoint.
#[derive(Clone, Default)]
pub(crate) struct Access {
    /// Origins allowed besides loopback ones (`scheme://host[:port]`, `*` for any).
    pub origins: Vec<String>,
    /// The bearer token a request must carry, if any.
    pub bearer_token: Option<Arc<str>>,
    /// The `Host` check of [`McpServer::serve_http`](crate::McpServer::serve_http), which
    /// knows the address each connection arrived at: the listed hosts (`name`, `name:port`,
    /// `*`), the address connected to, and loopback names on a loopback address only. `None`
    /// when mounted elsewhere (rmcp's check applies then).
    pub hosts: Option<Vec<String>>,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field("origins", &self.origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("hosts", &self.hosts)
            .finish()
    }
}

pub(crate) struct ServerInner {
    pub(crate) implementation: Implementation,
    pub(crate) instructions: Option<String>,
    pub(crate) access: Access,
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) allow_unauthenticated: bool,
    pub(crate) http_limits: ConnLimits,
    pub(crate) tools: Vec<ServedTool>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) catalog: Catalog,
    /// Calls waiting for their clients' answers (protocol 2026-07-28 and later).
    pub(crate) waiting: Waiting,
    /// Who is subscribed to which resource, over all sessions.
    pub(crate) subscriptions: Arc<Subscriptions>,
}

pub(crate) struct ServedTool {
    tool: Arc<dyn Tool>,
    listed: rmcp::model::Tool,
    validator: Option<SchemaValidator>,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.inner.implementation.name)
            .field(
                "tools",
                &self
                    .inner
                    .tools
                    .iter()
                    .map(|t| t.tool.name())
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server offering `tools`. When two tools share a name, the first one is served and the
    /// other is skipped with a warning.
    ///
    /// ```
    /// use tinyagent_mcp::McpServer;
    ///
    /// let server = McpServer::new(tinyagent_demo::all_tools());
    /// assert_eq!(server.tool_names().count(), 4);
    /// ```
    pub fn new(tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        let mut served = Vec::new();
        let mut by_name = HashMap::new();
        for tool in tools {
            let name = tool.name().to_owned();
            if by_name.contains_key(&name) {
                tracing::warn!(tool = %name, "two tools share this name; serving the first");
                continue;
            }
            let schema = match tool.input_schema() {
                Value::Object(map) => map.clone(),
                other => {
                    tracing::warn!(tool = %name, schema = %other,
                        "input schema is not an object; serving an empty object schema");
                    serde_json::Map::from_iter([("type".to_owned(), Value::from("object"))])
                }
            };
            let validator = match SchemaValidator::new(tool.input_schema()) {
                Ok(v) => Some(v),
                Err(e) => {
                    tracing::warn!(tool = %name, error = %e,
                        "input schema does not compile; arguments are passed unchecked");
                    None
                }
            };
            let hints = tool.hints();
            let annotations = ToolAnnotations::new()
                .read_only(hints.read_only)
                .destructive(hints.destructive)
                .idempotent(hints.idempotent)
                .open_world(hints.open_world);
            let mut listed = rmcp::model::Tool::new(
                name.clone(),
                tool.description().to_owned(),
                Arc::new(schema),
            )
            .with_annotations(annotations);
            if let Some(title) = tool.title() {
                listed = listed.with_title(title);
            }
            match tool.output_schema() {
                Some(Value::Object(schema)) => {
                    listed = listed.with_raw_output_schema(Arc::new(schema.clone()));
                }
                Some(other) => {
                    tracing::warn!(tool = %name, schema = %other,
                        "output schema is not an object; not listed");
                }
                None => {}
            }
            by_name.insert(name, served.len());
            served.push(ServedTool {
                tool,
                listed,
                validator,
            });
        }
        let subscriptions = Arc::new(Subscriptions::default());
        Self {
            session: Arc::new(SessionToken::new(&subscriptions)),
            inner: Arc::new(ServerInner {
                implementation: Implementation::new("tinyagent", env!("CARGO_PKG_VERSION")),
                instructions: None,
                access: Access::default(),
                allowed_hosts: None,
                allow_unauthenticated: false,
                http_limits: ConnLimits::new(
                    DEFAULT_HTTP_HEADER_TIMEOUT,
                    DEFAULT_HTTP_MAX_CONNECTIONS,
                ),
                tools: served,
                by_name,
                catalog: Catalog::default(),
                waiting: Waiting::default(),
                subscriptions,
            }),
            log_level: SessionLogLevel::default(),
        }
    }

    pub(crate) fn configure(self, f: impl FnOnce(&mut ServerInner)) -> Self {
        let mut inner = take_inner(self.inner);
        f(&mut inner);
        Self {
            inner: Arc::new(inner),
            log_level: self.log_level,
            session: self.session,
        }
    }

    /// The server's name as told to clients (default `tinyagent`).
    #[must_use]
    pub fn server_name(self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.configure(|inner| inner.implementation.name = name)
    }

    /// The server's version as told to clients (default: this crate's version).
    #[must_use]
    pub fn version(self, version: impl Into<String>) -> Self {
        let version = version.into();
        self.configure(|inner| inner.implementation.version = version)
    }

    /// Instructions a client may show its model.
    #[must_use]
    pub fn instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.configure(|inner| inner.instructions = Some(instructions))
    }

    /// Adds a prompt (see [`McpPrompt`](crate::McpPrompt)); clients list it, get it rendered
    /// and complete its arguments.
    #[must_use]
    pub fn prompt(self, prompt: McpPrompt) -> Self {
        self.configure(|inner| inner.catalog.prompts.push(prompt))
    }

    /// Adds a resource (see [`McpResource`](crate::McpResource)); clients list, read and
    /// subscribe to it.
    #[must_use]
    pub fn resource(self, resource: McpResource) -> Self {
        self.configure(|inner| inner.catalog.resources.push(resource))
    }

    /// Adds resources under a URI template (see
    /// [`McpResourceTemplate`](crate::McpResourceTemplate)).
    #[must_use]
    pub fn resource_template(self, template: McpResourceTemplate) -> Self {
        self.configure(|inner| inner.catalog.templates.push(template))
    }

    /// The names of the served tools, in order.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.inner.tools.iter().map(|t| t.tool.name())
    }

    /// Calls a tool as an MCP client would, returning the MCP result: what `tools/call`
    /// answers. An unknown tool is an error.
    ///
    /// ```
    /// use tinyagent_mcp::McpServer;
    ///
    /// # tokio_test::block_on(async {
    /// let server = McpServer::new(tinyagent_demo::all_tools());
    /// let args = serde_json::json!({"operation": "divide", "a": 1, "b": 0});
    /// let result = server.call("calculator", args.as_object().cloned()).await.unwrap();
    /// assert_eq!(result.is_error, Some(true));
    /// # });
    /// ```
    pub async fn call(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.call_with(name, arguments, ToolContext::new()).await
    }

    pub(crate) async fn call_with(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        ctx: ToolContext,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(served) = self.inner.by_name.get(name).map(|&i| &self.inner.tools[i]) else {
            let known: Vec<&str> = self.tool_names().collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`; the tools are: {}", known.join(", ")),
                None,
            ));
        };
        let arguments = Value::Object(arguments.unwrap_or_default());
        if let Some(validator) = &served.validator
            && let Err(e) = validator.validate(&arguments)
        {
            return Ok(error_result(&e));
        }
        // The value checked travels to the tool: a typed tool decodes it without reading text.
        let input = ToolInput::from_value(arguments);
        Ok(
            match tinyagent::tools::call_catching_panics(served.tool.as_ref(), &ctx, input).await {
                Ok(output) if output.is_error() => {
                    error_result(&ToolError::failed(output.into_text()))
                }
                Ok(output) => success_result(output),
                Err(e) => error_result(&e),
            },
        )
    }
}

/// The inner state, taken when not shared, rebuilt otherwise (a validator is not `Clone`).
fn take_inner(this: Arc<ServerInner>) -> ServerInner {
    {
        match Arc::try_unwrap(this) {
            Ok(inner) => inner,
            Err(shared) => ServerInner {
                implementation: shared.implementation.clone(),
                instructions: shared.instructions.clone(),
                access: shared.access.clone(),
                allowed_hosts: shared.allowed_hosts.clone(),
                allow_unauthenticated: shared.allow_unauthenticated,
                http_limits: shared.http_limits,
                catalog: shared.catalog.clone(),
                waiting: shared.waiting.clone(),
                subscriptions: Arc::clone(&shared.subscriptions),
                tools: shared
                    .tools
                    .iter()
                    .map(|t| ServedTool {
                        tool: Arc::clone(&t.tool),
                        listed: t.listed.clone(),
                        validator: SchemaValidator::new(t.tool.input_schema()).ok(),
                    })
                    .collect(),
                by_name: shared.by_name.clone(),
            },
        }
    }
}

impl McpServer {
    /// The server for a new session: the same tools, a log level of its own.
    pub(crate) fn new_session(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
            log_level: SessionLogLevel::default(),
            session: Arc::new(SessionToken::new(&self.inner.subscriptions)),
        }
    }
}
