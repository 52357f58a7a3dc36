//! Which resources of an [`McpServer`] a client may subscribe to (`resources/subscribe`,
//! `subscriptions/listen`), and how subscribers are told that one changed.

use rmcp::model::SubscriptionFilter;
use rmcp::service::SubscriptionContext;
use rmcp::{ErrorData, Peer, RoleServer};

use super::McpServer;
use super::resource::Watch;
use super::subscriptions::Sink;

impl McpServer {
    /// Tells every client subscribed to the resource at `uri` that it changed
    /// (`notifications/resources/updated`), over every session and `subscriptions/listen`
    /// request; returns how many were told. A client that is gone is unsubscribed.
    ///
    /// Keep a clone of the server to call this while it serves (clones share their
    /// subscriptions).
    ///
    /// ```no_run
    /// use tinyagent_mcp::{McpResource, McpServer};
    ///
    /// # async fn demo() -> Result<(), tinyagent_mcp::McpServeError> {
    /// let server = McpServer::new([])
    ///     .resource(McpResource::text("file:///status", "status", "text/plain", "ok"));
    /// let notifier = server.clone();
    /// tokio::spawn(async move {
    ///     loop {
    ///         tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    ///         notifier.resource_updated("file:///status").await;
    ///     }
    /// });
    /// server.serve_stdio().await
    /// # }
    /// ```
    pub async fn resource_updated(&self, uri: &str) -> usize {
        self.inner.subscriptions.notify(uri).await
    }

    /// How subscriptions to `uri` are handled: an error for a URI the server does not have,
    /// or whose resource takes no subscriptions.
    fn watch_of(&self, uri: &str) -> Result<&Watch, ErrorData> {
        match self.inner.catalog.watch_of(uri) {
            Some(watch) if watch.subscribable => Ok(watch),
            Some(_) => Err(ErrorData::invalid_params(
                format!("the resource {uri:?} takes no subscriptions"),
                None,
            )),
            None => Err(ErrorData::new(
                rmcp::model::ErrorCode::RESOURCE_NOT_FOUND,
                format!("no resource has the URI {uri:?}"),
                None,
            )),
        }
    }

    /// `resources/subscribe` of this session's client.
    pub(crate) async fn session_subscribe(
        &self,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), ErrorData> {
        let watch = self.watch_of(uri)?;
        self.inner
            .subscriptions
            .subscribe(self.session.id, uri, Sink::Session(peer), watch)
            .await
            .map_err(|e| {
                ErrorData::internal_error(
                    format!("could not subscribe to {uri:?}: {}", e.message()),
                    None,
                )
            })
    }

    /// `resources/unsubscribe` of this session's client.
    pub(crate) async fn session_unsubscribe(&self, uri: &str) -> Result<(), ErrorData> {
        self.watch_of(uri)?;
        self.inner
            .subscriptions
            .unsubscribe(self.session.id, uri)
            .await;
        Ok(())
    }

    /// What a `subscriptions/listen` request gets: the resources it names that the server
    /// has and that take subscriptions (no list-changed notifications: the lists are fixed).
    pub(crate) fn listen_filter(&self, requested: &SubscriptionFilter) -> SubscriptionFilter {
        let mut accepted = SubscriptionFilter::new();
        accepted.resource_subscriptions = requested.resource_subscriptions.as_ref().map(|uris| {
            uris.iter()
                .filter(|uri| self.watch_of(uri).is_ok())
                .cloned()
                .collect()
        });
        accepted
    }

    /// Serves one `subscriptions/listen` request until the client cancels it.
    pub(crate) async fn listen_to(&self, context: SubscriptionContext) {
        let registry = &self.inner.subscriptions;
        let id = registry.new_id();
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        for uri in &uris {
            let Ok(watch) = self.watch_of(uri) else {
                continue;
            };
            let sink = Sink::Listen(context.sink().clone());
            if let Err(err) = registry.subscribe(id, uri, sink, watch).await {
                tracing::warn!(%uri, error = %err, "subscription not made");
            }
        }
        context.cancelled().await;
        registry.forget(id).await;
    }
}
