//! [`McpToolset::health`]: whether a toolset's server is reachable, watched as it changes.

use tokio::sync::watch;

use super::McpToolset;
use super::health_state::McpHealth;

impl McpToolset {
    /// The server's health, watched: `borrow()` for now, `changed().await` for the next
    /// change (a connection made, lost, restarting, or failing). A lost server is connected
    /// again by the toolset (see [`McpHealth`]); calls made meanwhile wait for the attempt in
    /// progress, or fail at once saying when the next one is.
    ///
    /// ```no_run
    /// # async fn demo() {
    /// use tinyagent_mcp::{McpHealth, McpToolset};
    ///
    /// let toolset = McpToolset::http("http://127.0.0.1:8000/mcp");
    /// let mut health = toolset.health();
    /// tokio::spawn(async move {
    ///     while health.changed().await.is_ok() {
    ///         match &*health.borrow() {
    ///             McpHealth::Restarting { restart, retry_in, .. } => {
    ///                 eprintln!("MCP server lost; restart {restart} in {retry_in:?}")
    ///             }
    ///             McpHealth::Unreachable { failures, .. } => {
    ///                 eprintln!("MCP server down ({failures} attempts)")
    ///             }
    ///             _ => {}
    ///         }
    ///     }
    /// });
    /// # }
    /// ```
    pub fn health(&self) -> watch::Receiver<McpHealth> {
        self.inner.health.subscribe()
    }
}
