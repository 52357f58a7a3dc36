//! [`Keeping`]: what every backend store keeps besides its connection — the time to live of
//! sessions that have none of their own, and the per-session locks (in-process, then a lease
//! in the database).

use std::sync::Arc;
use std::time::Duration;

use tinyagent_core::store::{SessionLock, SessionLocks, StoreError, check_session_id};

use crate::lease::{DEFAULT_LEASE, LeaseBackend};

/// The shortest lease a store accepts: shorter ones would expire between renewals.
const MIN_LEASE: Duration = Duration::from_millis(30);

/// A store's expiry and locking settings, and its in-process locks.
#[derive(Clone, Debug)]
pub(crate) struct Keeping {
    /// The time to live of sessions that have none of their own.
    pub(crate) ttl: Option<Duration>,
    /// How long a lock's lease lasts without renewal.
    pub(crate) lease: Duration,
    /// The locks taken by this process, before its leases.
    locks: SessionLocks,
}

impl Default for Keeping {
    fn default() -> Self {
        Self {
            ttl: None,
            lease: DEFAULT_LEASE,
            locks: SessionLocks::new(),
        }
    }
}

impl Keeping {
    /// Sets the lease, no shorter than the shortest a store accepts.
    pub(crate) fn set_lease(&mut self, lease: Duration) {
        self.lease = lease.max(MIN_LEASE);
    }

    /// Locks session `id`: the in-process lock, then a lease through `backend`, waiting up to
    /// `wait` (forever for `None`).
    pub(crate) async fn lock<B: LeaseBackend>(
        &self,
        backend: &Arc<B>,
        id: &str,
        wait: Option<Duration>,
    ) -> Result<SessionLock, StoreError> {
        check_session_id(id)?;
        crate::lease::lock(backend, &self.locks, id, wait, self.lease).await
    }
}
