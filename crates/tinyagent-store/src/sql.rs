//! What the SQL stores share besides their operations (those are [`SqlStore`](crate::SqlStore)'s,
//! in `sql_store`): the schema and its migrations, and the row helpers.
//!
//! Tables (times in microseconds since the Unix epoch):
//!
//! - `tinyagent_schema (version)`: the schema version, one row;
//! - `tinyagent_sessions (id, version, message_count, created_at, updated_at, expires_at,
//!   ttl_us, owner)`: `ttl_us` is the session's own TTL (`NULL`: the store's; `-1`: never);
//!   `owner` the tenant the session belongs to (`''`: none; schema version 2);
//! - `tinyagent_messages (session_id, seq, body)`: `body` is a [`Message`](tinyagent_core::Message)
//!   as JSON text in its serde shape, `seq` counts from 0;
//! - `tinyagent_state (session_id, key, value)`: `value` is JSON text;
//! - `tinyagent_locks (id, token, until_us)`: the leases of [`SessionStore::lock`](tinyagent_core::store::SessionStore::lock).

use std::time::Duration;

use tinyagent_core::BoxFuture;
use tinyagent_core::store::{SessionInfo, StoreError, from_micros};

use crate::lease::LeaseBackend;

/// The schema, one migration per version: migration *n* (counting from 1) takes the schema
/// from version *n − 1* to *n*. Applied in order on connect, each in the transaction that
/// records its version, so connecting again (or from several processes at once) applies
/// nothing twice. Migrations are only ever added, never edited.
pub(crate) const MIGRATIONS: &[&[&str]] = &[
    &[
        "CREATE TABLE tinyagent_sessions (
        id TEXT PRIMARY KEY,
        version BIGINT NOT NULL,
        message_count BIGINT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        expires_at BIGINT,
        ttl_us BIGINT
    )",
        "CREATE INDEX tinyagent_sessions_recency ON tinyagent_sessions (updated_at DESC, id)",
        "CREATE TABLE tinyagent_messages (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )",
        "CREATE TABLE tinyagent_state (
        session_id TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (session_id, key)
    )",
        "CREATE TABLE tinyagent_locks (
        id TEXT PRIMARY KEY,
        token TEXT NOT NULL,
        until_us BIGINT NOT NULL
    )",
    ],
    &[
        // Sessions belong to the tenant that created them. Rows written before this migration
        // get the empty owner: no tenant's, so only an unscoped reader (an admin, or a server
        // without keys) sees them.
        "ALTER TABLE tinyagent_sessions ADD COLUMN owner TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX tinyagent_sessions_owner ON tinyagent_sessions (owner, updated_at DESC, id)",
    ],
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// The `ttl_us` column for a session's own TTL.
pub(crate) fn own_ttl_column(ttl: Option<std::time::Duration>) -> i64 {
    ttl.map_or(-1, crate::codec::ttl_micros)
}

/// When a session written at `now` expires: its own TTL (the `ttl_us` column) or the store's.
pub(crate) fn expiry(
    now: i64,
    own: Option<i64>,
    store: Option<std::time::Duration>,
) -> Option<i64> {
    let ttl = match own {
        Some(-1) => return None,
        Some(us) => us,
        None => crate::codec::ttl_micros(store?),
    };
    Some(now.saturating_add(ttl))
}

/// The time now, in the tables' microseconds.
pub(crate) fn now_micros() -> i64 {
    tinyagent_core::store::micros(std::time::SystemTime::now())
}

/// The columns of a session row: version, message_count, created_at, updated_at,
/// expires_at, ttl_us, owner.
pub(crate) type Row = (i64, i64, i64, i64, Option<i64>, Option<i64>, String);

/// Whether a session row has not expired at `now`.
pub(crate) fn live(row: &Row, now: i64) -> bool {
    row.4.is_none_or(|at| at > now)
}

/// A non-negative count column as `u64`, or the session is corrupt.
pub(crate) fn count(session: &str, what: &str, n: i64) -> Result<u64, StoreError> {
    u64::try_from(n)
        .map_err(|_| StoreError::corrupt(session, format!("its {what} is negative ({n})")))
}

/// A session's listing entry from its row.
pub(crate) fn info(id: &str, row: &Row) -> Result<SessionInfo, StoreError> {
    let mut stored = tinyagent_core::store::StoredSession::empty(id);
    stored.version = count(id, "version", row.0)?;
    stored.created_at = from_micros(row.2);
    stored.updated_at = from_micros(row.3);
    stored.expires_at = row.4.map(from_micros);
    stored.owner = row.6.clone();
    let mut info = stored.info();
    info.message_count = count(id, "message count", row.1)?;
    Ok(info)
}

/// A database the SQL store runs on: [`sqlx::Sqlite`] (with the `sqlite` feature) or
/// [`sqlx::Postgres`] (with `postgres`). What differs between them is said here; the
/// operations are [`SqlStore`](crate::SqlStore)'s. Sealed: the store's SQL is written for these two.
pub trait Dialect: sqlx::Database + sealed::Sealed {
    /// The store's name in errors and logs (`"sqlite"`, `"postgres"`).
    const STORE: &'static str;
    /// How a writing transaction begins (SQLite takes its write lock at once).
    const BEGIN_WRITE: &'static str;
    /// How a reading transaction begins (one consistent snapshot of the session).
    const BEGIN_READ: &'static str;
    /// The session row, locked for the writing transaction where the database locks rows.
    const SELECT_SESSION_FOR_WRITE: &'static str;
    /// A statement run before the migrations, in their transaction, so that processes
    /// migrating at once take turns (empty: none needed).
    const SERIALIZE_MIGRATIONS: &'static str;

    /// How many rows a statement changed.
    fn rows_affected(result: &Self::QueryResult) -> u64;
}

mod sealed {
    pub trait Sealed {}
}

#[cfg(feature = "sqlite")]
impl sealed::Sealed for sqlx::Sqlite {}

#[cfg(feature = "sqlite")]
impl Dialect for sqlx::Sqlite {
    const STORE: &'static str = "sqlite";
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const BEGIN_READ: &'static str = "BEGIN";
    // `BEGIN IMMEDIATE` already holds the database's write lock.
    const SELECT_SESSION_FOR_WRITE: &'static str = "SELECT version, message_count, created_at, \
         updated_at, expires_at, ttl_us, owner FROM tinyagent_sessions WHERE id = $1";
    const SERIALIZE_MIGRATIONS: &'static str = "";

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(feature = "postgres")]
impl sealed::Sealed for sqlx::Postgres {}

#[cfg(feature = "postgres")]
impl Dialect for sqlx::Postgres {
    const STORE: &'static str = "postgres";
    const BEGIN_WRITE: &'static str = "BEGIN";
    const BEGIN_READ: &'static str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    const SELECT_SESSION_FOR_WRITE: &'static str = "SELECT version, message_count, created_at, \
         updated_at, expires_at, ttl_us, owner FROM tinyagent_sessions WHERE id = $1 FOR UPDATE";
    // Replicas starting at once migrate one after the other ("tinyagent" in ASCII).
    const SERIALIZE_MIGRATIONS: &'static str = "SELECT pg_advisory_xact_lock(7596550301622969716)";

    fn rows_affected(result: &Self::QueryResult) -> u64 {
        result.rows_affected()
    }
}

/// A database error as the store's error, naming the store.
pub(crate) fn db_err<DB: Dialect>(err: sqlx::Error) -> StoreError {
    StoreError::backend(DB::STORE, err)
}

/// Applies the migrations this database has not seen yet.
pub(crate) async fn migrate<DB: Dialect>(pool: &sqlx::Pool<DB>) -> Result<(), StoreError>
where
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    Option<i64>: for<'q> sqlx::Encode<'q, DB>,
    String: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> &'q str: sqlx::Type<DB> + sqlx::Encode<'q, DB>,
{
    let mut tx = pool
        .begin_with(DB::BEGIN_WRITE)
        .await
        .map_err(db_err::<DB>)?;
    if !DB::SERIALIZE_MIGRATIONS.is_empty() {
        sqlx::query(DB::SERIALIZE_MIGRATIONS)
            .execute(&mut *tx)
            .await
            .map_err(db_err::<DB>)?;
    }
    sqlx::query("CREATE TABLE IF NOT EXISTS tinyagent_schema (version BIGINT NOT NULL)")
        .execute(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
    let found: Option<(i64,)> = sqlx::query_as("SELECT version FROM tinyagent_schema")
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
    let current = match found {
        Some((v,)) => v,
        None => {
            sqlx::query("INSERT INTO tinyagent_schema (version) VALUES (0)")
                .execute(&mut *tx)
                .await
                .map_err(db_err::<DB>)?;
            0
        }
    };
    if current > SCHEMA_VERSION {
        return Err(StoreError::backend(
            DB::STORE,
            format!(
                "the database's session schema is at version {current}, newer than the \
                 {SCHEMA_VERSION} this build of tinyagent-store knows; upgrade it"
            ),
        ));
    }
    for (n, statements) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        for statement in *statements {
            sqlx::query(statement)
                .execute(&mut *tx)
                .await
                .map_err(db_err::<DB>)?;
        }
        sqlx::query("UPDATE tinyagent_schema SET version = $1")
            .bind(n as i64 + 1)
            .execute(&mut *tx)
            .await
            .map_err(db_err::<DB>)?;
        tracing::info!(
            store = DB::STORE,
            version = n + 1,
            "session schema migrated"
        );
    }
    tx.commit().await.map_err(db_err::<DB>)
}

/// The pool, for the leases' renewal task.
pub(crate) struct SqlLeases<DB: Dialect> {
    pub(crate) pool: sqlx::Pool<DB>,
}

impl<DB: Dialect> LeaseBackend for SqlLeases<DB>
where
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    Option<i64>: for<'q> sqlx::Encode<'q, DB>,
    String: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> &'q str: sqlx::Type<DB> + sqlx::Encode<'q, DB>,
{
    fn try_acquire<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let done = sqlx::query(
                "INSERT INTO tinyagent_locks (id, token, until_us) VALUES ($1, $2, $3) \
                 ON CONFLICT (id) DO UPDATE SET token = excluded.token, \
                 until_us = excluded.until_us WHERE tinyagent_locks.until_us < $4",
            )
            .bind(id)
            .bind(token)
            .bind(crate::lease::lease_end(ttl))
            .bind(now_micros())
            .execute(&self.pool)
            .await
            .map_err(db_err::<DB>)?;
            Ok(DB::rows_affected(&done) == 1)
        })
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let done = sqlx::query(
                "UPDATE tinyagent_locks SET until_us = $3 WHERE id = $1 AND token = $2",
            )
            .bind(id)
            .bind(token)
            .bind(crate::lease::lease_end(ttl))
            .execute(&self.pool)
            .await
            .map_err(db_err::<DB>)?;
            Ok(DB::rows_affected(&done) == 1)
        })
    }

    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            sqlx::query("DELETE FROM tinyagent_locks WHERE id = $1 AND token = $2")
                .bind(id)
                .bind(token)
                .execute(&self.pool)
                .await
                .map_err(db_err::<DB>)?;
            Ok(())
        })
    }
}
