//! Keeping a toolset connected: a lost connection is made again by the toolset itself (a
//! stdio server's process is started again), at once the first time, then with back-off
//! while the server keeps dying soon after it starts; calls take the live connection.

use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::SubscribeRequestParams;
use rmcp::{Peer, RoleClient};
use tinyagent::{BoxFuture, ToolError, ToolErrorKind};

use super::connection::{Connection, Inner, reconnect_delay};
use super::health_state::McpHealth;
use super::remote_tool::PeerSource;

/// A connection that stays up this long ends a series of restarts: the next loss is
/// restarted at once again.
pub(super) const STABLE_UPTIME: Duration = Duration::from_secs(30);

/// How long a lost process gets to be reaped, for its exit status in the log.
const REAP_GRACE: Duration = Duration::from_millis(200);

/// How long to wait before the `restart`-th restart in a row: nothing before the first, then
/// 1 s, doubling, at most 64 s.
pub(super) fn restart_delay(restart: u32) -> Duration {
    if restart <= 1 {
        Duration::ZERO
    } else {
        reconnect_delay(restart - 1)
    }
}

/// Whether a connection still works, as far as can be told without asking the server.
fn alive(connection: &Connection) -> bool {
    !connection.service.is_closed() && !connection.service.is_transport_closed()
}

impl Inner {
    /// Makes sure `state` holds a live connection: connects when there is none (a dead one is
    /// handled as lost first), unless a server that could not be reached, or that keeps
    /// dying, is being waited out (then it fails at once, saying when the next attempt is).
    pub(super) async fn ensure_connected(
        self: &Arc<Self>,
        state: &mut Option<Connection>,
    ) -> Result<(), ToolError> {
        if let Some(connection) = state.as_ref() {
            if alive(connection) {
                return Ok(());
            }
            let generation = connection.generation;
            if self
                .take_lost(state, generation, "the connection closed")
                .await
            {
                // Should this attempt fail, the toolset tries again by itself.
                tokio::spawn(keep_restarting(Arc::downgrade(self)));
            }
        }
        self.check_outage()?;
        let connection = tokio::time::timeout(self.connect_timeout, self.connect())
            .await
            .unwrap_or_else(|_| {
                Err(ToolError::timed_out(format!(
                    "MCP server `{}` did not finish connecting within {:?}",
                    self.label, self.connect_timeout
                )))
            })
            .inspect_err(|e| self.connect_failed(e))?;
        let connection = self.watch(connection);
        let peer = connection.service.peer().clone();
        *state = Some(connection);
        self.connected();
        self.resubscribe(&peer).await;
        Ok(())
    }

    /// The live connection's peer and number, connecting first if needed.
    pub(super) async fn live_peer(self: &Arc<Self>) -> Result<(Peer<RoleClient>, u64), ToolError> {
        let mut state = self.state.lock().await;
        self.ensure_connected(&mut state).await?;
        state
            .as_ref()
            .map(|c| (c.service.peer().clone(), c.generation))
            .ok_or_else(|| {
                ToolError::unavailable(format!("MCP server `{}` is not connected", self.label))
            })
    }

    /// Connection `generation` was found gone (`why`): it is made again, on a task of its
    /// own. A connection already replaced, or already known lost, is left alone.
    pub(super) fn lost(self: &Arc<Self>, generation: u64, why: String) {
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            let taken = {
                let mut state = inner.state.lock().await;
                inner.take_lost(&mut state, generation, &why).await
            };
            if taken {
                keep_restarting(Arc::downgrade(&inner)).await;
            }
        });
    }

    /// Notes that `err`, which a request on connection `generation` failed with, says the
    /// connection is gone.
    pub(super) fn check_error(self: &Arc<Self>, generation: u64, err: &ToolError) {
        if err.kind() == ToolErrorKind::Unavailable {
            self.lost(generation, err.message().to_owned());
        }
    }

    /// Takes connection `generation` out of `state` as lost, when it is still there: reports
    /// it (with the process's exit status, when there is one) and plans the restart.
    async fn take_lost(&self, state: &mut Option<Connection>, generation: u64, why: &str) -> bool {
        if state.as_ref().is_none_or(|c| c.generation != generation) {
            return false;
        }
        let Some(mut connection) = state.take() else {
            return false;
        };
        let uptime = connection.since.elapsed();
        let mut why = why.to_owned();
        if let Some(child) = connection.child.as_mut()
            && let Ok(Ok(status)) = tokio::time::timeout(REAP_GRACE, child.wait()).await
        {
            why = format!("the process exited ({status})");
        }
        drop(connection);
        let (restart, delay) = {
            let mut outage = self.outage();
            if uptime >= STABLE_UPTIME {
                outage.restarts = 0;
            }
            outage.restarts += 1;
            let delay = restart_delay(outage.restarts);
            outage.retry_at = (!delay.is_zero()).then(|| tokio::time::Instant::now() + delay);
            (outage.restarts, delay)
        };
        tracing::warn!(server = %self.label, reason = %why, up_for = ?uptime, restart,
            retry_in = ?delay, "MCP server lost; connecting again");
        self.health.set(McpHealth::Lost);
        self.health.set(McpHealth::Restarting {
            restart,
            retry_in: delay,
        });
        true
    }

    /// `connection`, watched: when the server closes it, it is reported lost.
    fn watch(self: &Arc<Self>, mut connection: Connection) -> Connection {
        if let Some(ended) = connection.ended.take() {
            let inner = Arc::downgrade(self);
            let generation = connection.generation;
            tokio::spawn(async move {
                // An error: the connection was dropped here first, not lost.
                if ended.await.is_ok()
                    && let Some(inner) = inner.upgrade()
                {
                    inner.lost(generation, "the server closed the connection".to_owned());
                }
            });
        }
        connection
    }

    /// Subscribes the new connection to the resources subscribed to before.
    async fn resubscribe(&self, peer: &Peer<RoleClient>) {
        let uris: Vec<String> = self.subscribed().iter().cloned().collect();
        for uri in uris {
            #[allow(deprecated)] // rmcp marks it legacy (2026-07-28 has subscriptions/listen).
            let sent = peer.subscribe(SubscribeRequestParams::new(uri.as_str()));
            let sent = tokio::time::timeout(self.connect_timeout, sent).await;
            match sent {
                Ok(Ok(())) => tracing::debug!(server = %self.label, %uri, "subscribed again"),
                Ok(Err(e)) => tracing::warn!(server = %self.label, %uri, error = %e,
                    "could not subscribe to the resource again"),
                Err(_) => tracing::warn!(server = %self.label, %uri,
                    "the server did not answer the subscription in time"),
            }
        }
    }

    /// The resources subscribed to.
    pub(super) fn subscribed(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<String>> {
        self.subscribed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Connects again until a connection is made or the toolset is dropped: each attempt when
/// the wait planned for it has passed (a call may make it first). (Boxed: connecting may
/// start another of these.)
fn keep_restarting(inner: Weak<Inner>) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        loop {
            let Some(strong) = inner.upgrade() else {
                return;
            };
            let wait = {
                let mut state = strong.state.lock().await;
                if state.is_some() {
                    // A call connected first (a dead connection there has a restart of its own).
                    return;
                }
                match strong.wait_left() {
                    Some(wait) => wait,
                    None => match strong.ensure_connected(&mut state).await {
                        Ok(()) => return,
                        Err(_) => strong.wait_left().unwrap_or(Duration::from_secs(1)),
                    },
                }
            };
            drop(strong);
            tokio::time::sleep(wait).await;
        }
    })
}

/// A tool's way to its toolset's live connection; it does not keep the toolset alive.
pub(super) struct Link {
    inner: Weak<Inner>,
    label: Arc<str>,
}

impl Link {
    pub(super) fn new(inner: &Arc<Inner>) -> Self {
        Self {
            inner: Arc::downgrade(inner),
            label: Arc::from(inner.label.as_str()),
        }
    }
}

impl PeerSource for Link {
    fn peer(&self) -> BoxFuture<'_, Result<(Peer<RoleClient>, u64), ToolError>> {
        Box::pin(async move {
            let inner = self.inner.upgrade().ok_or_else(|| {
                ToolError::unavailable(format!(
                    "MCP server `{}` is no longer connected: its toolset was dropped",
                    self.label
                ))
                .retryable(false)
            })?;
            inner.live_peer().await
        })
    }

    fn lost(&self, generation: u64, why: &str) {
        if let Some(inner) = self.inner.upgrade() {
            inner.lost(generation, why.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restarts_are_at_once_then_backed_off_and_bounded() {
        let delays: Vec<u64> = (1..=10).map(|n| restart_delay(n).as_secs()).collect();
        assert_eq!(delays, [0, 1, 2, 4, 8, 16, 32, 64, 64, 64]);
        assert_eq!(restart_delay(u32::MAX), Duration::from_secs(64));
    }
}
