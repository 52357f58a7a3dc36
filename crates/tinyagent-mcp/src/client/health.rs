//! [`McpToolset::health`]: whether a toolset's server is reachable, watched as it changes.

use tokio::sync::watch;

use super::McpToolset;
use super::connection::McpHealth;

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
        self.inner.health.subscribe()
    }
}
