//! The client's handler: rmcp's [`ClientHandler`] for a toolset's connection. It notices when
//! the server's tool list changes, passes resource updates on, and hands what the server
//! asks during a call (progress, logs, sampling, elicitation) to the [`Bridge`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ProtocolVersion};
use rmcp::service::NotificationContext;
use rmcp::{ClientHandler, RoleClient};
use tokio::sync::broadcast;

use super::bridge::Bridge;

/// The client half of the connection: notices when the server's tool list changes, and
/// passes what the server asks during a call to the [`Bridge`].
#[derive(Clone)]
pub(super) struct ToolsetClient {
    stale: Arc<AtomicBool>,
    label: String,
    bridge: Arc<Bridge>,
    updates: broadcast::Sender<String>,
}

impl ToolsetClient {
    /// The handler of a connection to server `label`: `stale` is set when the server's tool
    /// list changes, `updates` gets the URIs of updated resources.
    pub(super) fn new(
        label: &str,
        stale: Arc<AtomicBool>,
        bridge: Arc<Bridge>,
        updates: broadcast::Sender<String>,
    ) -> Self {
        Self {
            stale,
            label: label.to_owned(),
            bridge,
            updates,
        }
    }
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
