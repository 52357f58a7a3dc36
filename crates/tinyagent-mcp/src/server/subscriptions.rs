//! Who is subscribed to which resource of an [`McpServer`](crate::McpServer): the clients of
//! its sessions (`resources/subscribe`, over the initialize handshake) and of its
//! `subscriptions/listen` requests (protocol 2026-07-28 and later), told when a resource
//! changes. A subscriber that disconnects is forgotten; the first subscription to a URI and
//! the end of the last one run the resource's hooks.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::SubscriptionSink;
use rmcp::{Peer, RoleServer};
use tinyagent::ToolError;

use super::resource::{Hook, Watch};

/// Where a subscriber is told.
#[derive(Clone)]
pub(crate) enum Sink {
    /// A session of the initialize handshake.
    Session(Peer<RoleServer>),
    /// One `subscriptions/listen` request.
    Listen(SubscriptionSink),
    /// A subscriber that is gone (for the tests of the bookkeeping).
    #[cfg(test)]
    Gone,
}

impl Sink {
    /// Tells the subscriber that `uri` changed; false when it is gone.
    async fn send(&self, uri: &str) -> bool {
        match self {
            Self::Session(peer) => peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
                .is_ok(),
            Self::Listen(sink) => sink.notify_resource_updated(uri).await.is_ok(),
            #[cfg(test)]
            Self::Gone => false,
        }
    }
}

/// The subscribers of one URI, and what runs when the last one leaves.
struct Entry {
    sinks: HashMap<u64, Sink>,
    on_unsubscribe: Option<Hook>,
}

/// The subscriptions of a server, over all its sessions.
#[derive(Default)]
pub(crate) struct Subscriptions {
    /// By URI. An async lock: the first subscription's hook runs under it, so that a second
    /// client subscribing meanwhile waits for it.
    by_uri: tokio::sync::Mutex<HashMap<String, Entry>>,
    next: AtomicU64,
}

impl Subscriptions {
    /// A new subscriber's number.
    pub(crate) fn new_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Subscribes `id` to `uri`, told through `sink`; the first subscriber runs `watch`'s
    /// subscribe hook, whose error refuses the subscription.
    pub(crate) async fn subscribe(
        &self,
        id: u64,
        uri: &str,
        sink: Sink,
        watch: &Watch,
    ) -> Result<(), ToolError> {
        let mut by_uri = self.by_uri.lock().await;
        if let Some(entry) = by_uri.get_mut(uri) {
            entry.sinks.insert(id, sink);
            return Ok(());
        }
        if let Some(hook) = &watch.on_subscribe {
            hook(uri.to_owned()).await?;
        }
        by_uri.insert(
            uri.to_owned(),
            Entry {
                sinks: HashMap::from([(id, sink)]),
                on_unsubscribe: watch.on_unsubscribe.clone(),
            },
        );
        Ok(())
    }

    /// Ends `id`'s subscription to `uri`; the last subscriber runs the unsubscribe hook.
    pub(crate) async fn unsubscribe(&self, id: u64, uri: &str) {
        let hook = {
            let mut by_uri = self.by_uri.lock().await;
            let Some(entry) = by_uri.get_mut(uri) else {
                return;
            };
            entry.sinks.remove(&id);
            if !entry.sinks.is_empty() {
                return;
            }
            by_uri.remove(uri).and_then(|e| e.on_unsubscribe)
        };
        run_unsubscribe(hook, uri.to_owned()).await;
    }

    /// Ends every subscription of `id` (its client is gone).
    pub(crate) async fn forget(&self, id: u64) {
        let ended: Vec<(String, Option<Hook>)> = {
            let mut by_uri = self.by_uri.lock().await;
            let mut ended = Vec::new();
            by_uri.retain(|uri, entry| {
                if entry.sinks.remove(&id).is_some() && entry.sinks.is_empty() {
                    ended.push((uri.clone(), entry.on_unsubscribe.take()));
                    false
                } else {
                    true
                }
            });
            ended
        };
        for (uri, hook) in ended {
            run_unsubscribe(hook, uri).await;
        }
    }

    /// Tells every subscriber of `uri` that it changed: how many were told. One that is gone
    /// is forgotten.
    pub(crate) async fn notify(&self, uri: &str) -> usize {
        let sinks: Vec<(u64, Sink)> = {
            let by_uri = self.by_uri.lock().await;
            by_uri
                .get(uri)
                .map(|e| e.sinks.iter().map(|(id, s)| (*id, s.clone())).collect())
                .unwrap_or_default()
        };
        let mut told = 0;
        for (id, sink) in sinks {
            if sink.send(uri).await {
                told += 1;
            } else {
                tracing::debug!(%uri, subscriber = id, "subscriber gone; unsubscribed");
                self.unsubscribe(id, uri).await;
            }
        }
        told
    }

    /// How many subscribers `uri` has.
    #[cfg(test)]
    async fn count(&self, uri: &str) -> usize {
        self.by_uri
            .lock()
            .await
            .get(uri)
            .map_or(0, |e| e.sinks.len())
    }
}

async fn run_unsubscribe(hook: Option<Hook>, uri: String) {
    if let Some(hook) = hook
        && let Err(err) = hook(uri.clone()).await
    {
        tracing::warn!(%uri, error = %err, "ending the subscription failed");
    }
}

/// One session's subscriber number: when the session's last handle is dropped (the client
/// disconnected), its subscriptions end.
pub(crate) struct SessionToken {
    pub(crate) id: u64,
    registry: Arc<Subscriptions>,
}

impl SessionToken {
    pub(crate) fn new(registry: &Arc<Subscriptions>) -> Self {
        Self {
            id: registry.new_id(),
            registry: Arc::clone(registry),
        }
    }
}

impl Drop for SessionToken {
    fn drop(&mut self) {
        let (registry, id) = (Arc::clone(&self.registry), self.id);
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { registry.forget(id).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn recording(log: &Arc<Mutex<Vec<String>>>) -> Watch {
        let (on, off) = (Arc::clone(log), Arc::clone(log));
        let on: Hook = Arc::new(move |uri| {
            on.lock().unwrap().push(format!("+{uri}"));
            Box::pin(std::future::ready(Ok(())))
        });
        let off: Hook = Arc::new(move |uri| {
            off.lock().unwrap().push(format!("-{uri}"));
            Box::pin(std::future::ready(Ok(())))
        });
        Watch {
            subscribable: true,
            on_subscribe: Some(on),
            on_unsubscribe: Some(off),
        }
    }

    fn closed_sink() -> Sink {
        Sink::Gone
    }

    #[tokio::test]
    async fn the_first_and_last_subscribers_run_the_hooks_once() {
        let registry = Subscriptions::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let watch = recording(&log);
        let (a, b) = (registry.new_id(), registry.new_id());
        registry
            .subscribe(a, "x://1", closed_sink(), &watch)
            .await
            .unwrap();
        registry
            .subscribe(b, "x://1", closed_sink(), &watch)
            .await
            .unwrap();
        assert_eq!(registry.count("x://1").await, 2);
        registry.unsubscribe(a, "x://1").await;
        assert_eq!(*log.lock().unwrap(), ["+x://1"]);
        registry.forget(b).await;
        assert_eq!(*log.lock().unwrap(), ["+x://1", "-x://1"]);
        assert_eq!(registry.count("x://1").await, 0);
    }

    #[tokio::test]
    async fn a_subscriber_that_is_gone_is_not_counted_and_is_dropped() {
        let registry = Subscriptions::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let id = registry.new_id();
        registry
            .subscribe(id, "x://2", closed_sink(), &recording(&log))
            .await
            .unwrap();
        assert_eq!(registry.notify("x://2").await, 0);
        assert_eq!(registry.count("x://2").await, 0);
        assert_eq!(*log.lock().unwrap(), ["+x://2", "-x://2"]);
    }

    #[tokio::test]
    async fn a_failing_subscribe_hook_refuses_the_subscription() {
        let registry = Subscriptions::default();
        let refuse: Hook = Arc::new(|_| {
            Box::pin(std::future::ready(Err(ToolError::unavailable(
                "upstream down",
            ))))
        });
        let watch = Watch {
            subscribable: true,
            on_subscribe: Some(refuse),
            on_unsubscribe: None,
        };
        let err = registry
            .subscribe(registry.new_id(), "x://3", closed_sink(), &watch)
            .await
            .unwrap_err();
        assert!(err.message().contains("upstream down"));
        assert_eq!(registry.count("x://3").await, 0);
    }
}
