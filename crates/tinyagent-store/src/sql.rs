//! What the SQL stores share: the schema and its migrations, the row helpers, and (in `sql_store`) the
//! store's operations, written once as a macro over the sqlx driver (the SQL is the same for
//! SQLite and PostgreSQL but for locking clauses).
//!
//! Tables (times in microseconds since the Unix epoch):
//!
//! - `tinyagent_schema (version)`: the schema version, one row;
//! - `tinyagent_sessions (id, version, message_count, created_at, updated_at, expires_at,
//!   ttl_us, owner)`: `ttl_us` is the session's own TTL (`NULL`: the store's; `-1`: never);
//!   `owner` the tenant the session belongs to (`''`: none; schema version 2);
//! - `tinyagent_messages (session_id, seq, body)`: `body` is a [`Message`](tinyagent::Message)
//!   as JSON text in its serde shape, `seq` counts from 0;
//! - `tinyagent_state (session_id, key, value)`: `value` is JSON text;
//! - `tinyagent_locks (id, token, until_us)`: the leases of [`SessionStore::lock`](tinyagent::store::SessionStore::lock).

use tinyagent::store::{SessionInfo, StoreError, from_micros};

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
    tinyagent::store::micros(std::time::SystemTime::now())
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
    let mut stored = tinyagent::store::StoredSession::empty(id);
    stored.version = count(id, "version", row.0)?;
    stored.created_at = from_micros(row.2);
    stored.updated_at = from_micros(row.3);
    stored.expires_at = row.4.map(from_micros);
    stored.owner = row.6.clone();
    let mut info = stored.info();
    info.message_count = count(id, "message count", row.1)?;
    Ok(info)
}
