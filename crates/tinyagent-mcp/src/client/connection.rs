//! A toolset's connection to its server: the settings it is made with, the connection made
//! (over a child process's stdio or HTTP, see `stdio` and `http`), and the outage that keeps
//! it from being made again too soon.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::service::RunningService;
use tinyagent::{Tool, ToolError};
use tokio::sync::Mutex;
use tokio::sync::{broadcast, oneshot};

use super::bridge::Bridge;
use super::endpoint::{Endpoint, Secret};
use super::handler::ToolsetClient;
use super::health_state::{HealthCell, McpHealth};
use super::http::HttpTarget;
use super::oauth::McpOAuth;
use super::remote_tool::McpToolInfo;
use super::stdio::{self, ChildOutput};

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
    pub(super) oauth: Option<McpOAuth>,
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

    /// Connects to the server: starts it and makes the handshake over its standard input and
    /// output, or over HTTP.
    pub(super) async fn connect(&self) -> Result<Connection, ToolError> {
        let stale = Arc::new(AtomicBool::new(false));
        let client = ToolsetClient::new(
            &self.label,
            Arc::clone(&stale),
            Arc::clone(&self.bridge),
            self.updates.clone(),
        );
        let (ended_tx, ended) = oneshot::channel();
        let connection = match &self.endpoint {
            Endpoint::Command {
                program,
                args,
                envs,
                cwd,
            } => {
                let command = stdio::command(program, args, envs, cwd.as_deref());
                let started =
                    stdio::connect(&self.label, command, client, &self.bridge, ended_tx).await?;
                let (child, output) = (Some(started.child), Some(started.output));
                self.connection(started.service, stale, ended, child, output)
            }
            Endpoint::Http { url } => {
                let target = HttpTarget {
                    label: &self.label,
                    url,
                    headers: &self.headers,
                    oauth: self.oauth.as_ref(),
                    bridge: &self.bridge,
                };
                let service = target.connect(client, ended_tx).await?;
                self.connection(service, stale, ended, None, None)
            }
        };
        tracing::debug!(server = %self.label, "connected to MCP server");
        Ok(connection)
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
