//! Connecting to the server (over stdio, a child process or HTTP, with the configured headers
//! and timeouts) and noticing when its tool list changes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{broadcast, oneshot};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tinyagent::{Tool, ToolError};
use tokio::sync::Mutex;

use super::bridge::{Bridge, Watched};
use super::endpoint::Endpoint;
use super::health_state::{HealthCell, McpHealth};
use crate::errors::{AuthProblem, init_auth_problem, init_error_text};
use crate::remote_tool::McpToolInfo;
use crate::stdio::ChildOutput;

/// How long a server that wrote something other than MCP on its standard output gets to
/// finish the handshake anyway before connecting fails, naming what it wrote.
pub(super) const GARBAGE_GRACE: Duration = Duration::from_secs(2);

pub(super) type NameFilter = Arc<dyn Fn(&str) -> bool + Send + Sync>;

pub(super) struct Inner {
    pub(super) label: String,
    pub(super) endpoint: Endpoint,
    pub(super) prefix: String,
    pub(super) filter: Option<NameFilter>,
    pub(super) call_timeout: Duration,
    pub(super) connect_timeout: Duration,
    pub(super) max_result_bytes: usize,
    pub(super) headers: Vec<(String, Secret)>,
    pub(super) oauth: Option<crate::oauth::McpOAuth>,
    pub(super) bridge: Arc<Bridge>,
    pub(super) state: Mutex<Option<Connection>>,
    /// Failed connection attempts in a row, and when the next may start.
    pub(super) outage: std::sync::Mutex<Outage>,
    /// The server's health, for [`McpToolset::health`](super::McpToolset::health).
    pub(super) health: HealthCell,
    /// The number of the last connection made (a lost connection is reported with its own,
    /// so that a loss is handled once).
    pub(super) generation: AtomicU64,
    /// The resources subscribed to: subscribed again on every new connection.
    pub(super) subscribed: std::sync::Mutex<BTreeSet<String>>,
    /// `notifications/resources/updated` from the server: the URIs.
    pub(super) updates: broadcast::Sender<String>,
}

/// A server that could not be reached: how many attempts failed in a row, and when the next
/// one may start.
#[derive(Debug, Default)]
pub(super) struct Outage {
    pub(super) failures: u32,
    pub(super) retry_at: Option<tokio::time::Instant>,
    /// Connections lost in a row, each soon after it was made (see `restart_delay`).
    pub(super) restarts: u32,
}

/// How long a toolset waits before trying again after `failures` failed attempts in a row:
/// 1 s, doubling, at most 64 s.
pub(super) fn reconnect_delay(failures: u32) -> Duration {
    Duration::from_secs(1 << failures.saturating_sub(1).min(6))
}

/// A header value or token: kept out of `Debug` output and logs.
#[derive(Clone)]
pub(super) struct Secret(pub(super) Arc<str>);

pub(super) struct Connection {
    pub(super) service: RunningService<RoleClient, ToolsetClient>,
    /// Which connection of the toolset this is.
    pub(super) generation: u64,
    /// When it was made.
    pub(super) since: tokio::time::Instant,
    /// Fires when the server closes the connection (its messages end); taken by the watcher.
    pub(super) ended: Option<oneshot::Receiver<()>>,
    /// The server process (killed when dropped), for stdio.
    pub(super) child: Option<tokio::process::Child>,
    /// What the server process wrote, for stdio.
    pub(super) output: Option<Arc<ChildOutput>>,
    /// Every listed tool, offered or not.
    pub(super) infos: Vec<McpToolInfo>,
    /// Set when the server says its tool list changed.
    pub(super) stale: Arc<AtomicBool>,
    pub(super) tools: Option<Vec<Arc<dyn Tool>>>,
}

impl Inner {
    pub(super) fn outage(&self) -> std::sync::MutexGuard<'_, Outage> {
        self.outage
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Fails at once while a server that could not be reached (or that keeps dying) is
    /// waited out, saying when the next attempt will be.
    pub(super) fn check_outage(&self) -> Result<(), ToolError> {
        let outage = self.outage();
        let Some(at) = outage.retry_at else {
            return Ok(());
        };
        let now = tokio::time::Instant::now();
        if now >= at {
            return Ok(());
        }
        let why = if outage.failures > 0 {
            format!(
                "could not be reached ({} attempts in a row failed)",
                outage.failures
            )
        } else {
            format!(
                "closed its connection soon after it was made, {} times in a row",
                outage.restarts
            )
        };
        Err(ToolError::unavailable(format!(
            "MCP server `{}` {why}; the next attempt is in {:.1?}",
            self.label,
            at - now
        )))
    }

    /// How long until the next attempt may start, when it may not start now.
    pub(super) fn wait_left(&self) -> Option<Duration> {
        let at = self.outage().retry_at?;
        let now = tokio::time::Instant::now();
        (now < at).then(|| at - now)
    }

    /// Notes a failed attempt: the next waits longer.
    pub(super) fn connect_failed(&self, err: &ToolError) {
        let mut outage = self.outage();
        outage.failures += 1;
        let delay = reconnect_delay(outage.failures);
        outage.retry_at = Some(tokio::time::Instant::now() + delay);
        tracing::warn!(server = %self.label, failures = outage.failures, retry_in = ?delay,
            error = %err, "MCP server unreachable");
        self.health.set(McpHealth::Unreachable {
            failures: outage.failures,
            retry_in: delay,
            error: err.message().to_owned(),
        });
    }

    /// Notes a connection made: the server is back, if it was away.
    pub(super) fn connected(&self) {
        let mut outage = self.outage();
        let was = self.health.now();
        if outage.failures > 0 || matches!(was, McpHealth::Restarting { .. } | McpHealth::Lost) {
            tracing::warn!(server = %self.label, failures = outage.failures,
                restarts = outage.restarts, "MCP server is back");
        }
        outage.failures = 0;
        outage.retry_at = None;
        self.health.set(McpHealth::Connected);
    }

    pub(super) async fn connect(&self) -> Result<Connection, ToolError> {
        let stale = Arc::new(AtomicBool::new(false));
        let client = ToolsetClient {
            stale: Arc::clone(&stale),
            label: self.label.clone(),
            bridge: Arc::clone(&self.bridge),
            updates: self.updates.clone(),
        };
        let (ended_tx, ended) = oneshot::channel();
        let label = &self.label;
        let failed = |text: String| {
            ToolError::unavailable(format!("could not connect to MCP server `{label}`: {text}"))
        };
        match &self.endpoint {
            Endpoint::Command {
                program,
                args,
                envs,
                cwd,
            } => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                for (key, value) in envs {
                    match value {
                        Some(value) => command.env(key, value),
                        None => command.env_remove(key),
                    };
                }
                if let Some(cwd) = cwd {
                    command.current_dir(cwd);
                }
                let spawned = crate::stdio::spawn(command).map_err(|e| {
                    ToolError::unavailable(format!(
                        "MCP server `{label}` could not be started: {e}"
                    ))
                    .with_source(e)
                })?;
                let crate::stdio::ChildTransport {
                    sink,
                    stream,
                    mut child,
                    output,
                } = spawned;
                let mut garbage = output.garbage.subscribe();
                let bridge = Arc::clone(&self.bridge);
                let stream = futures::StreamExt::inspect(stream, move |m| bridge.on_wire(m));
                let stream = futures::StreamExt::chain(stream, end_marker(ended_tx));
                let serve = client.serve((sink, stream));
                tokio::pin!(serve);
                let served = tokio::select! {
                    served = &mut serve => served,
                    () = async { drop(garbage.wait_for(Option::is_some).await) } => {
                        match tokio::time::timeout(GARBAGE_GRACE, &mut serve).await {
                            Ok(served) => served,
                            Err(_) => {
                                let line = output.garbage.borrow().clone().unwrap_or_default();
                                return Err(failed(format!(
                                    "it does not speak MCP on its standard output: it wrote `{line}` \
                                     (an MCP server must write only JSON-RPC messages there; logs \
                                     belong on standard error)"
                                )));
                            }
                        }
                    }
                };
                let service = match served {
                    Ok(service) => service,
                    Err(e) => {
                        let mut text = init_error_text(&e);
                        // Give the process a moment to be reaped, to report its exit.
                        let status =
                            tokio::time::timeout(Duration::from_millis(500), child.wait()).await;
                        if let Ok(Ok(status)) = status {
                            text = format!(
                                "the process exited ({status}) before the MCP handshake finished"
                            );
                        }
                        if let Some(line) = output.garbage.borrow().clone() {
                            text.push_str(&format!(
                                "; it wrote `{line}` on its standard output, which is not MCP"
                            ));
                        }
                        return Err(failed(text).with_source(e));
                    }
                };
                tracing::debug!(server = %label, "connected to MCP server");
                Ok(self.connection(service, stale, ended, Some(child), Some(output)))
            }
            Endpoint::Http { url } => {
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
                for (name, Secret(value)) in &self.headers {
                    let header_name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| {
                            ToolError::invalid_input(format!(
                                "MCP server `{label}`: `{name}` is not a valid HTTP header name"
                            ))
                        })?;
                    let mut header_value =
                        reqwest::header::HeaderValue::from_str(value).map_err(|_| {
                            ToolError::invalid_input(format!(
                                "MCP server `{label}`: the value of header `{name}` is not a \
                                 valid HTTP header value"
                            ))
                        })?;
                    header_value.set_sensitive(true);
                    config.custom_headers.insert(header_name, header_value);
                }
                let served = match &self.oauth {
                    None => {
                        let transport = StreamableHttpClientTransport::from_config(config);
                        client.serve(self.watched(transport).ending(ended_tx)).await
                    }
                    Some(oauth) => 'served: {
                        // With a stored token, use it; without one, ask the user only when the
                        // server turns out to require authorization.
                        let manager = match oauth.stored(url, label).await? {
                            Some(manager) => manager,
                            None => {
                                let probe = ToolsetClient {
                                    stale: Arc::clone(&stale),
                                    label: self.label.clone(),
                                    bridge: Arc::clone(&self.bridge),
                                    updates: self.updates.clone(),
                                };
                                let plain = self.watched(
                                    StreamableHttpClientTransport::from_config(config.clone()),
                                );
                                match probe.serve(plain).await {
                                    Err(e)
                                        if matches!(
                                            init_auth_problem(&e),
                                            Some(AuthProblem::Unauthorized)
                                        ) =>
                                    {
                                        oauth.authorize(url, label).await?
                                    }
                                    // No authorization needed, or a failure of another kind.
                                    other => break 'served other,
                                }
                            }
                        };
                        let http = AuthClient::new(reqwest::Client::new(), manager);
                        let transport = StreamableHttpClientTransport::with_client(http, config);
                        client.serve(self.watched(transport).ending(ended_tx)).await
                    }
                };
                let service = served.map_err(|e| {
                    let text = match init_auth_problem(&e) {
                        Some(AuthProblem::Unauthorized) => format!(
                            "the server answered 401 Unauthorized: it needs credentials{}",
                            if self.oauth.is_some() {
                                ", and it refused the OAuth token (its grant may have been revoked)"
                            } else if self.headers.is_empty() {
                                ", and none were sent (set a bearer token or header, or use OAuth)"
                            } else {
                                ", and the ones sent were refused"
                            }
                        ),
                        Some(AuthProblem::Forbidden) => {
                            "the server answered 403 Forbidden: the credentials sent do not \
                             give access (or the request's origin is refused)"
                                .to_owned()
                        }
                        None => init_error_text(&e),
                    };
                    let error = failed(text);
                    match init_auth_problem(&e) {
                        Some(_) => ToolError::denied(error.message().to_owned()).with_source(e),
                        None => error.with_source(e),
                    }
                })?;
                tracing::debug!(server = %label, "connected to MCP server");
                Ok(self.connection(service, stale, ended, None, None))
            }
        }
    }

    /// `transport`, its messages seen by the bridge as they arrive.
    fn watched<T>(&self, transport: T) -> Watched<T> {
        Watched::new(transport, Arc::clone(&self.bridge))
    }

    fn connection(
        &self,
        service: RunningService<RoleClient, ToolsetClient>,
        stale: Arc<AtomicBool>,
        ended: oneshot::Receiver<()>,
        child: Option<tokio::process::Child>,
        output: Option<Arc<ChildOutput>>,
    ) -> Connection {
        Connection {
            service,
            generation: self.generation.fetch_add(1, Ordering::SeqCst) + 1,
            since: tokio::time::Instant::now(),
            ended: Some(ended),
            child,
            output,
            infos: Vec::new(),
            stale,
            tools: None,
        }
    }
}

/// The client half of the connection: notices when the server's tool list changes, and
/// passes what the server asks during a call to the [`Bridge`].
pub(super) struct ToolsetClient {
    stale: Arc<AtomicBool>,
    label: String,
    bridge: Arc<Bridge>,
    updates: broadcast::Sender<String>,
}

/// A stream with no items that tells `ended` when it is polled: chained after a server's
/// messages, it says that they ended (the server closed the connection). When the connection
/// is dropped first, `ended` is dropped unsent.
fn end_marker<T>(ended: oneshot::Sender<()>) -> impl futures::Stream<Item = T> + Send + Unpin
where
    T: Send,
{
    let told = futures::future::lazy(move |_| ended.send(()));
    futures::StreamExt::filter_map(futures::stream::once(told), |_| std::future::ready(None))
}

impl ClientHandler for ToolsetClient {
    fn get_info(&self) -> ClientConfig {
        // 2025-11-25 keeps the initialize handshake and unsolicited notifications
        // (`notifications/tools/list_changed`), which servers of every era understand.
        // Elicitation is always answered (declined when no one else does); sampling by the
        // toolset's model or the calling tool's host (a gateway's client), else refused with
        // a clear error.
        let capabilities = serde_json::json!({"elicitation": {"form": {}}, "sampling": {}});
        ClientConfig::new(
            serde_json::from_value::<ClientCapabilities>(capabilities).unwrap_or_default(),
            Implementation::new("tinyagent-mcp", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.bridge.on_progress(params).await;
    }

    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); servers use it.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.bridge.on_log(&self.label, params).await;
    }

    #[allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); servers use it.
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.bridge.sample(params).await
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        Ok(self.bridge.elicit(request).await)
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        tracing::debug!(server = %self.label, uri = %params.uri, "MCP resource updated");
        // No receiver: no one listens for updates now; nothing to do.
        let _ = self.updates.send(params.uri);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        tracing::debug!(server = %self.label, "MCP server's tool list changed");
        self.stale.store(true, Ordering::SeqCst);
    }
}
