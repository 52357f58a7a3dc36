//! Subscribing to a server's resources through an [`McpToolset`]: `resources/subscribe`, and
//! the server's `notifications/resources/updated` as a stream of URIs.

use rmcp::model::{SubscribeRequestParams, UnsubscribeRequestParams};
use tinyagent::ToolError;
use tokio::sync::broadcast;

use super::McpToolset;

impl McpToolset {
    /// Subscribes to the resource at `uri` (`resources/subscribe`): the server then says when
    /// it changes, which [`resource_updates`](Self::resource_updates) gives. The subscription
    /// outlives the connection: a server that is connected again (a stdio server started
    /// again) is subscribed again.
    ///
    /// ```no_run
    /// use tinyagent_mcp::McpToolset;
    ///
    /// # async fn demo() -> Result<(), tinyagent::ToolError> {
    /// let toolset = McpToolset::http("http://127.0.0.1:8000/mcp");
    /// let mut updates = toolset.resource_updates();
    /// toolset.subscribe("file:///notes.md").await?;
    /// while let Ok(uri) = updates.recv().await {
    ///     println!("{uri} changed: {:?}", toolset.read_resource(&uri).await?);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn subscribe(&self, uri: &str) -> Result<(), ToolError> {
        let (peer, generation) = self.inner.live_peer().await?;
        #[allow(deprecated)] // rmcp marks it legacy (2026-07-28 has subscriptions/listen).
        let sent = peer.subscribe(SubscribeRequestParams::new(uri));
        match tokio::time::timeout(self.inner.call_timeout, sent).await {
            Ok(Ok(())) => {
                self.inner.subscribed().insert(uri.to_owned());
                Ok(())
            }
            Ok(Err(err)) => Err(self.failed(generation, err, &format!("subscribing to {uri:?}"))),
            Err(_) => Err(ToolError::timed_out(format!(
                "MCP server `{}` did not answer the subscription to {uri:?} within {:?}",
                self.name(),
                self.inner.call_timeout
            ))),
        }
    }

    /// Ends the subscription to the resource at `uri` (`resources/unsubscribe`). When the
    /// server is not connected now, there is nothing to tell it: the next connection is not
    /// subscribed.
    pub async fn unsubscribe(&self, uri: &str) -> Result<(), ToolError> {
        self.inner.subscribed().remove(uri);
        let live = {
            let state = self.inner.state.lock().await;
            state
                .as_ref()
                .map(|c| (c.service.peer().clone(), c.generation))
        };
        let Some((peer, generation)) = live else {
            return Ok(());
        };
        #[allow(deprecated)] // rmcp marks it legacy (2026-07-28 has subscriptions/listen).
        let sent = peer.unsubscribe(UnsubscribeRequestParams::new(uri));
        match tokio::time::timeout(self.inner.call_timeout, sent).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(err)) => {
                Err(self.failed(generation, err, &format!("unsubscribing from {uri:?}")))
            }
            Err(_) => Err(ToolError::timed_out(format!(
                "MCP server `{}` did not answer the end of the subscription to {uri:?} within {:?}",
                self.name(),
                self.inner.call_timeout
            ))),
        }
    }

    /// The URIs of the server's `notifications/resources/updated`, as they arrive, on every
    /// connection (a reader that falls more than 256 behind misses the oldest, and is told
    /// so by [`Lagged`](broadcast::error::RecvError::Lagged)).
    pub fn resource_updates(&self) -> broadcast::Receiver<String> {
        self.inner.updates.subscribe()
    }
}
