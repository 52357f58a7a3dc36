//! [`McpHealth`]: whether a toolset's server is reachable, watched as it changes.

use std::time::Duration;

use tokio::sync::watch;

use super::McpToolset;

/// Whether an [`McpToolset`]'s server is reachable, as the toolset last found it; watch it
/// with [`McpToolset::health`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpHealth {
    /// No connection was made yet (the toolset connects on first use).
    NotConnected,
    /// Connected: the handshake and the tool listing succeeded.
    Connected,
    /// The connection was lost (the process exited, the HTTP session ended); the next
    /// invocation reconnects.
    Lost,
    /// Connecting failed `failures` times in a row; invocations fail at once until the next
    /// attempt, `retry_in` after the last failure.
    Unreachable {
        /// Failed attempts in a row.
        failures: u32,
        /// How long after the last failure the next attempt may start.
        retry_in: Duration,
        /// Why the last attempt failed.
        error: String,
    },
}

/// The health of one toolset's server, and its watchers.
#[derive(Debug)]
pub(super) struct HealthCell(watch::Sender<McpHealth>);

impl Default for HealthCell {
    fn default() -> Self {
        Self(watch::Sender::new(McpHealth::NotConnected))
    }
}

impl HealthCell {
    /// Sets the health; watchers are told when it changes.
    pub(super) fn set(&self, health: McpHealth) {
        self.0.send_if_modified(|now| {
            let changed = *now != health;
            *now = health;
            changed
        });
    }
}

impl McpToolset {
    /// The server's health, watched: `borrow()` for now, `changed().await` for the next
    /// change (a connection made, lost, or failing). Reconnects happen on the next
    /// invocation, with back-off while the server cannot be reached.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// use tinyagent_mcp::{McpHealth, McpToolset};
    ///
    /// let toolset = McpToolset::http("http://127.0.0.1:8000/mcp");
    /// let mut health = toolset.health();
    /// tokio::spawn(async move {
    ///     while health.changed().await.is_ok() {
    ///         if let McpHealth::Unreachable { failures, .. } = &*health.borrow() {
    ///             eprintln!("MCP server down ({failures} attempts)");
    ///         }
    ///     }
    /// });
    /// # }
    /// ```
    pub fn health(&self) -> watch::Receiver<McpHealth> {
        self.inner.health.0.subscribe()
    }
}
