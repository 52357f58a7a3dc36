//! Locks that hold across processes: a lease in the database, taken after the process's own
//! per-session lock, renewed while held, released when dropped, expiring if its process dies.

use std::sync::Arc;
use std::time::Duration;

use tinyagent_core::BoxFuture;
use tinyagent_core::store::{SessionLock, SessionLocks, StoreError};

/// How long a lease lasts unless renewed; it is renewed every third of it while its run goes
/// on, so a process that dies frees its sessions after at most this long.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The longest pause between two tries for a busy lease.
const MAX_POLL: Duration = Duration::from_millis(200);

/// What a store does to take, keep and give back a lease.
pub(crate) trait LeaseBackend: Send + Sync + 'static {
    /// Takes the lease of `id` for `token` until `until`, if it is free or expired.
    fn try_acquire<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Extends the lease, if `token` still holds it.
    fn renew<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Gives the lease back, if `token` still holds it.
    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// The end of a lease taken now for `ttl`, in microseconds since the epoch.
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn lease_end(ttl: Duration) -> i64 {
    tinyagent_core::store::micros(std::time::SystemTime::now() + ttl)
}

struct LeaseGuard<B: LeaseBackend> {
    backend: Arc<B>,
    id: String,
    token: String,
    renewer: tokio::task::AbortHandle,
    // Dropped after the lease is given back (fields drop in order).
    _local: SessionLock,
}

impl<B: LeaseBackend> Drop for LeaseGuard<B> {
    fn drop(&mut self) {
        self.renewer.abort();
        let backend = self.backend.clone();
        let id = std::mem::take(&mut self.id);
        let token = std::mem::take(&mut self.token);
        // Without a runtime the lease simply expires.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(err) = backend.release(&id, &token).await {
                    tracing::warn!(session = %id, "could not release a session lease: {err}");
                }
            });
        }
    }
}

/// Locks `id`: first in this process, then across processes with a lease of `ttl`.
pub(crate) async fn lock<B: LeaseBackend>(
    backend: &Arc<B>,
    locals: &SessionLocks,
    id: &str,
    wait: Option<Duration>,
    ttl: Duration,
) -> Result<SessionLock, StoreError> {
    let started = tokio::time::Instant::now();
    let local = locals.lock(id, wait).await?;
    let token = tinyagent_core::store::new_id("lease");
    let mut pause = Duration::from_millis(5);
    while !backend.try_acquire(id, &token, ttl).await? {
        let waited = started.elapsed();
        match wait {
            Some(wait) if waited < wait => {
                let jitter = Duration::from_micros(fastrand::u64(0..=pause.as_micros() as u64 / 2));
                tokio::time::sleep((pause + jitter).min(wait - waited)).await;
                pause = (pause * 2).min(MAX_POLL);
            }
            _ => {
                return Err(StoreError::Busy {
                    session: id.to_owned(),
                    waited: wait.map(|_| waited),
                });
            }
        }
    }
    let renewer = {
        let backend = backend.clone();
        let id = id.to_owned();
        let token = token.clone();
        tokio::spawn(async move {
            let every = (ttl / 3).max(Duration::from_millis(10));
            loop {
                tokio::time::sleep(every).await;
                match backend.renew(&id, &token, ttl).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(session = %id, "a session lease was lost before its run ended");
                        return;
                    }
                    Err(err) => tracing::warn!(session = %id, "could not renew a session lease: {err}"),
                }
            }
        })
        .abort_handle()
    };
    Ok(SessionLock::new(
        id,
        LeaseGuard {
            backend: backend.clone(),
            id: id.to_owned(),
            token,
            renewer,
            _local: local,
        },
    ))
}
