//! tinyagent tools served over MCP: [`McpServer`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult,
    Implementation, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    SubscriptionFilter, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServiceExt};
use serde_json::Value;
use tinyagent::tools::ToolInput;
use tinyagent::tools::schema::SchemaValidator;
use tinyagent::{Tool, ToolContext, ToolError};

use crate::catalog::{Catalog, value_text};
use crate::content::{error_result, success_result};
pub use crate::errors::McpServeError;
use crate::errors::custom_request_error;
use crate::input_required::Waiting;
use crate::subscriptions::{SessionToken, Subscriptions};
use tracing::Instrument as _;

use crate::server_host::{SessionLogLevel, log_level};

use tinyagent_http::serve::ConnLimits;

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
/// `McpServer` implements rmcp's [`ServerHandler`], so it can be served over any rmcp
/// transport too. Nothing is written to standard output except MCP messages on stdio: logs
/// go through `tracing`, and it is the program's subscriber that chooses where (stderr).
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

    /// Serves MCP over this process's standard input and output until the client closes the
    /// connection. Write logs to standard error only: standard output carries MCP. A line
    /// that is not a JSON-RPC message is answered with a JSON-RPC parse error (-32700) or
    /// invalid-request error (-32600) and the session goes on.
    ///
    /// When standard input and output are pipes or sockets (as an MCP client that starts
    /// this program makes them), they are switched to non-blocking mode and read and written
    /// by the runtime's reactor, with no thread hand-off per message, and put back in blocking
    /// mode when serving ends; needs a runtime with I/O enabled (`#[tokio::main]` enables it).
    /// A terminal or a file is read and written through tokio's standard streams.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        let (input, output) = crate::std_streams::std_streams();
        let served = self.serve_io(input, output).await;
        crate::std_streams::restore_blocking();
        served
    }

    /// Serves MCP over any byte streams, newline-delimited as on stdio (see
    /// [`serve_stdio`](Self::serve_stdio)), until `input` ends.
    pub async fn serve_io(
        self,
        input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
        output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
    ) -> Result<(), McpServeError> {
        let (sink, stream, writer) = crate::stdio::server_transport(input, output);
        // A session of its own: its subscriptions end with it, even while other handles of
        // this server live on.
        let running = self
            .new_session()
            .serve((sink, stream))
            .await
            .map_err(|e| McpServeError::Handshake(crate::errors::chain_text(&e)))?;
        let ended = running.waiting().await;
        // Let the writer send what is queued (the answer to the last request).
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
        ended.map_err(|e| McpServeError::Task(e.to_string()))?;
        Ok(())
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

pub(crate) fn request_id_text(id: &rmcp::model::RequestId) -> String {
    match id {
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
        rmcp::model::NumberOrString::String(s) => s.to_string(),
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

impl ServerHandler for McpServer {
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients use it.
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_logging()
            .build();
        let catalog = &self.inner.catalog;
        if !catalog.prompts.is_empty() {
            capabilities.prompts = Some(Default::default());
        }
        if catalog.completes() {
            capabilities.completions = Some(Default::default());
        }
        if !catalog.resources.is_empty() || !catalog.templates.is_empty() {
            let mut resources = rmcp::model::ResourcesCapability::default();
            resources.subscribe = catalog.subscribable().then_some(true);
            capabilities.resources = Some(resources);
        }
        let config =
            ServerConfig::new(capabilities).with_server_info(self.inner.implementation.clone());
        match &self.inner.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.inner.tools.iter().map(|t| t.listed.clone()).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.inner
            .by_name
            .get(name)
            .map(|&i| self.inner.tools[i].listed.clone())
    }

    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log_level.set(log_level(request.level));
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, ErrorData> {
        Ok(self.inner.catalog.list_prompts())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, ErrorData> {
        let arguments = request.arguments.unwrap_or_default().into_iter();
        let arguments = arguments.map(|(k, v)| (k, value_text(v))).collect();
        self.inner
            .catalog
            .get_prompt(&request.name, arguments)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, ErrorData> {
        if !self.inner.catalog.completes() {
            return Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "Method not found: completion/complete (this server completes no argument)",
                None,
            ));
        }
        self.inner.catalog.complete(&request).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourcesResult, ErrorData> {
        Ok(self.inner.catalog.list_resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, ErrorData> {
        Ok(self.inner.catalog.list_templates())
    }

    async fn read_resource(
        &self,
        request: rmcp::model::ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ReadResourceResponse, ErrorData> {
        self.inner.catalog.read(&request.uri).await.map(Into::into)
    }

    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session_subscribe(&request.uri, context.peer).await
    }

    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session_unsubscribe(&request.uri).await
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(self.listen_filter(requested))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        self.listen_to(context).await;
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        Err(custom_request_error(&request))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let id = request_id_text(&context.id);
        let span = crate::telemetry::server_span(&request, &context.meta, &id);
        let answer = self
            .answer_call(request, context)
            .instrument(span.clone())
            .await;
        crate::telemetry::end_response(&span, &answer);
        answer
    }
}
