//! [`PostgresStore`]: sessions in PostgreSQL.

use std::sync::Arc;

use sqlx::postgres::{PgPool, PgPoolOptions};
use tinyagent::store::SessionLocks;

use crate::lease::DEFAULT_LEASE;

/// Sessions in PostgreSQL: for several processes (or machines) serving the same
/// conversations. A server in front of agents stays stateless: any replica loads the
/// session, runs the agent and commits the run's messages.
///
/// The schema (tables `tinyagent_*`) is migrated on [`connect`](Self::connect), under a
/// transaction-scoped advisory lock so that replicas starting together migrate once.
/// Commits lock the session's row (`SELECT … FOR UPDATE`) and check its version.
///
/// [`lock`](tinyagent::store::SessionStore::lock) takes an in-process lock, then a lease row
/// (`tinyagent_locks`, `INSERT … ON CONFLICT DO UPDATE … WHERE` the old lease ran out): a run
/// on another replica waits for it (polling, with back-off up to 200 ms) or fails at once.
/// Leases are renewed while their run goes on and last [`DEFAULT_LEASE`] without renewal, so
/// a killed replica frees its sessions after at most that long. Lease times come from the
/// replicas' clocks: keep them in sync (NTP), as for any lease.
#[derive(Clone)]
pub struct PostgresStore {
    pool: PgPool,
    ttl: Option<std::time::Duration>,
    lease: std::time::Duration,
    locks: SessionLocks,
    leases: Arc<PostgresLeases>,
}

/// The pool, for the leases' renewal task.
pub(crate) struct PostgresLeases {
    pool: PgPool,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("ttl", &self.ttl)
            .field("lease", &self.lease)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/database`) with a pool of up
    /// to 10 connections, and migrates the schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(30))
            .connect(url)
            .await
            .map_err(db_err)?;
        Self::from_pool(pool).await
    }

    /// A store on a pool the application made, after migrating the schema.
    pub async fn from_pool(pool: PgPool) -> Result<Self, StoreError> {
        migrate(&pool).await?;
        Ok(Self {
            leases: Arc::new(PostgresLeases { pool: pool.clone() }),
            pool,
            ttl: None,
            lease: DEFAULT_LEASE,
            locks: SessionLocks::new(),
        })
    }

    /// Sets the time to live of sessions that have none of their own: a session not written
    /// for this long vanishes.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Sets how long a [`lock`](tinyagent::store::SessionStore::lock)'s lease lasts without renewal.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// The connection pool.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }
}

crate::sql_store::sql_store! {
    store: PostgresStore,
    leases: PostgresLeases,
    db: sqlx::Postgres,
    name: "postgres",
    begin_write: "BEGIN",
    begin_read: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    for_update: " FOR UPDATE",
    // Replicas starting at once migrate one after the other ("tinyagent" in ASCII).
    serialize_migrations: "SELECT pg_advisory_xact_lock(7596550301622969716)",
}
