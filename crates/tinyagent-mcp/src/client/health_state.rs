//! [`McpHealth`]: whether a toolset's server is reachable, and the cell its watchers watch.

use std::time::Duration;

use tokio::sync::watch;

/// Whether an [`McpToolset`](crate::McpToolset)'s server is reachable, as the toolset last
/// found it; watch it with [`McpToolset::health`](crate::McpToolset::health).
///
/// A server that goes away is connected again by the toolset itself (a stdio server's process
/// is started again): [`Lost`](Self::Lost), then [`Restarting`](Self::Restarting), then
/// [`Connected`](Self::Connected), or [`Unreachable`](Self::Unreachable) while attempts fail.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpHealth {
    /// No connection was made yet (the toolset connects on first use).
    NotConnected,
    /// Connected: the handshake and the tool listing succeeded.
    Connected,
    /// The connection was lost (the process exited, the HTTP session ended); a restart is
    /// planned at once ([`Restarting`](Self::Restarting)).
    Lost,
    /// The connection was lost and a new one is on its way: the `restart`-th in a row (a
    /// connection that stays up 30 s ends the series), starting `retry_in` after this state was
    /// set (zero: at once; a server that keeps dying soon after it starts is waited for 1 s,
    /// then 2 s, 4 s … at most 64 s). A stdio server's process is started again; an HTTP
    /// server is connected to again.
    Restarting {
        /// Which restart in a row this is (1 for the first).
        restart: u32,
        /// How long after this state was set the attempt starts.
        retry_in: Duration,
    },
    /// Connecting failed `failures` times in a row; calls fail at once until the next
    /// attempt, `retry_in` after the last failure (1 s, doubling, at most 64 s). After a
    /// connection was lost, the toolset makes that attempt itself; otherwise the next call or
    /// invocation does.
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
    /// A new watcher.
    pub(super) fn subscribe(&self) -> watch::Receiver<McpHealth> {
        self.0.subscribe()
    }

    /// The health now.
    pub(super) fn now(&self) -> McpHealth {
        self.0.borrow().clone()
    }

    /// Sets the health; watchers are told when it changes.
    pub(super) fn set(&self, health: McpHealth) {
        self.0.send_if_modified(|now| {
            let changed = *now != health;
            *now = health;
            changed
        });
    }
}
