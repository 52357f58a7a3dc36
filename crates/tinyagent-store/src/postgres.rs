//! [`PostgresStore`]: sessions in PostgreSQL.

use std::time::Duration;

use sqlx::postgres::PgPoolOptions;
use tinyagent_core::store::StoreError;

#[cfg(doc)]
use crate::lease::DEFAULT_LEASE;
use crate::sql::db_err;
use crate::sql_store::SqlStore;

/// Sessions in PostgreSQL: for several processes (or machines) serving the same
/// conversations. A server in front of agents stays stateless: any replica loads the
/// session, runs the agent and commits the run's messages.
///
/// The schema (tables `tinyagent_*`) is migrated on [`connect`](Self::connect), under a
/// transaction-scoped advisory lock so that replicas starting together migrate once.
/// Commits lock the session's row (`SELECT … FOR UPDATE`) and check its version.
///
/// [`lock`](tinyagent_core::store::SessionStore::lock) takes an in-process lock, then a lease row
/// (`tinyagent_locks`, `INSERT … ON CONFLICT DO UPDATE … WHERE` the old lease ran out): a run
/// on another replica waits for it (polling, with back-off up to 200 ms) or fails at once.
/// Leases are renewed while their run goes on and last [`DEFAULT_LEASE`] without renewal, so
/// a killed replica frees its sessions after at most that long. Lease times come from the
/// replicas' clocks: keep them in sync (NTP), as for any lease.
pub type PostgresStore = SqlStore<sqlx::Postgres>;

impl SqlStore<sqlx::Postgres> {
    /// Connects to `url` (`postgres://user:password@host:port/database`) with a pool of up
    /// to 10 connections, and migrates the schema.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(10)
            .acquire_timeout(Duration::from_secs(30))
            .connect(url)
            .await
            .map_err(db_err::<sqlx::Postgres>)?;
        Self::from_pool(pool).await
    }
}
