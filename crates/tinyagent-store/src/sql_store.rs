//! The SQL stores' operations, written once over a [`Dialect`]: the SQL is the same for SQLite
//! and PostgreSQL but for how a transaction begins and how a row is locked.

use std::sync::Arc;
use std::time::Duration;

use tinyagent_core::BoxFuture;
use tinyagent_core::store::{
    Changes, Cursor, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession, check_session_id,
};

use crate::codec::{EncodedChanges, decode_message, decode_state, decode_value, session_of};
use crate::keeping::Keeping;
use crate::sql::{
    Dialect, Row, SqlLeases, count, db_err, expiry, info, live, migrate, now_micros, own_ttl_column,
};

/// Sessions in an SQL database: [`SqliteStore`](crate::SqliteStore) and
/// [`PostgresStore`](crate::PostgresStore) are this store on their [`Dialect`]s; their pages
/// say how each opens, locks and migrates.
pub struct SqlStore<DB: Dialect> {
    pool: sqlx::Pool<DB>,
    keeping: Keeping,
    leases: Arc<SqlLeases<DB>>,
}

impl<DB: Dialect> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            keeping: self.keeping.clone(),
            leases: self.leases.clone(),
        }
    }
}

impl<DB: Dialect> std::fmt::Debug for SqlStore<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("dialect", &DB::STORE)
            .field("ttl", &self.keeping.ttl)
            .field("lease", &self.keeping.lease)
            .finish_non_exhaustive()
    }
}

impl<DB: Dialect> SqlStore<DB> {
    /// Sets the time to live of sessions that have none of their own: a session not written
    /// for this long vanishes.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.keeping.ttl = Some(ttl);
        self
    }

    /// Sets how long a [`lock`](SessionStore::lock)'s lease lasts without renewal.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.keeping.set_lease(lease);
        self
    }

    /// The connection pool.
    pub fn pool(&self) -> &sqlx::Pool<DB> {
        &self.pool
    }
}

impl<DB: Dialect> SqlStore<DB>
where
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    Option<i64>: for<'q> sqlx::Encode<'q, DB>,
    String: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> &'q str: sqlx::Type<DB> + sqlx::Encode<'q, DB>,
{
    /// A store on a pool the application made (its options are the application's), after
    /// migrating the schema.
    pub async fn from_pool(pool: sqlx::Pool<DB>) -> Result<Self, StoreError> {
        migrate(&pool).await?;
        Ok(Self {
            leases: Arc::new(SqlLeases { pool: pool.clone() }),
            pool,
            keeping: Keeping::default(),
        })
    }

    /// The schema version of the database (after the migrations ran on connect).
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        let (v,): (i64,) = sqlx::query_as("SELECT version FROM tinyagent_schema")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err::<DB>)?;
        Ok(v)
    }

    async fn load_now(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        check_session_id(id)?;
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_READ)
            .await
            .map_err(db_err::<DB>)?;
        let row: Option<Row> = sqlx::query_as(
            "SELECT version, message_count, created_at, updated_at, expires_at, ttl_us, \
             owner FROM tinyagent_sessions WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
        let Some(row) = row.filter(|row| live(row, now_micros())) else {
            return Ok(None);
        };
        let info = info(id, &row)?;
        let bodies: Vec<(i64, String)> = sqlx::query_as(
            "SELECT seq, body FROM tinyagent_messages WHERE session_id = $1 AND seq < $2 \
             ORDER BY seq",
        )
        .bind(id)
        .bind(row.1)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
        let mut messages = Vec::with_capacity(bodies.len());
        for (k, (seq, body)) in bodies.iter().enumerate() {
            if *seq != k as i64 {
                return Err(StoreError::corrupt(
                    id,
                    format!("message #{k} of {} is missing", info.message_count),
                ));
            }
            messages.push(decode_message(id, k as u64, body)?);
        }
        if messages.len() as u64 != info.message_count {
            return Err(StoreError::corrupt(
                id,
                format!(
                    "it has {} messages of the {} its row counts",
                    messages.len(),
                    info.message_count
                ),
            ));
        }
        let values: Vec<(String, String)> = sqlx::query_as(
            "SELECT key, value FROM tinyagent_state WHERE session_id = $1 ORDER BY key",
        )
        .bind(id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
        let state = decode_state(id, values.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
        tx.commit().await.map_err(db_err::<DB>)?;
        let mut stored = session_of(info);
        stored.messages = messages;
        stored.state = state;
        Ok(Some(stored))
    }

    /// Commits; with [`Changes::must_exist`], a session that does not exist is
    /// [`StoreError::NotFound`] instead of being created.
    async fn commit_now(
        &self,
        id: &str,
        expected: Option<u64>,
        changes: &Changes,
    ) -> Result<u64, StoreError> {
        check_session_id(id)?;
        let encoded = EncodedChanges::new(DB::STORE, changes)?;
        let now = now_micros();
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db_err::<DB>)?;
        let row = Self::row_to_write(&mut tx, id, expected, changes, now).await?;
        let version = count(id, "version", row.0)?;
        if let Some(expected) = expected {
            if version != expected {
                return Err(StoreError::Conflict {
                    session: id.to_owned(),
                    expected,
                    actual: version,
                });
            }
        }
        Self::write_changes(&mut tx, id, row.1, &encoded).await?;
        let new_version = version + u64::from(!encoded.messages.is_empty());
        sqlx::query(
            "UPDATE tinyagent_sessions SET version = $2, message_count = $3, \
             updated_at = $4, expires_at = $5 WHERE id = $1",
        )
        .bind(id)
        .bind(new_version as i64)
        .bind(row.1 + encoded.messages.len() as i64)
        .bind(now)
        .bind(expiry(now, row.5, self.keeping.ttl))
        .execute(&mut *tx)
        .await
        .map_err(db_err::<DB>)?;
        tx.commit().await.map_err(db_err::<DB>)?;
        Ok(new_version)
    }

    /// The row of the session a commit writes, locked in `tx`: an expired one is deleted, a
    /// missing one created (unless the commit needs it to exist), and one the commit's owner
    /// may not write is [`StoreError::NotFound`], as if it were not there.
    async fn row_to_write(
        tx: &mut sqlx::Transaction<'static, DB>,
        id: &str,
        expected: Option<u64>,
        changes: &Changes,
        now: i64,
    ) -> Result<Row, StoreError> {
        let not_found = || StoreError::NotFound {
            session: id.to_owned(),
        };
        let select = DB::SELECT_SESSION_FOR_WRITE;
        let mut row: Option<Row> = sqlx::query_as(select)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_err::<DB>)?;
        if row.as_ref().is_some_and(|row| !live(row, now)) {
            Self::delete_rows(tx, id).await?;
            row = None;
        }
        let row = match row {
            Some(row) => row,
            None => {
                if changes.must_exist || expected.is_some_and(|v| v > 0) {
                    return Err(not_found());
                }
                sqlx::query(
                    "INSERT INTO tinyagent_sessions (id, version, message_count, \
                     created_at, updated_at, expires_at, ttl_us, owner) \
                     VALUES ($1, 0, 0, $2, $2, NULL, NULL, $3) ON CONFLICT (id) DO NOTHING",
                )
                .bind(id)
                .bind(now)
                .bind(changes.owner.as_deref().unwrap_or(""))
                .execute(&mut **tx)
                .await
                .map_err(db_err::<DB>)?;
                sqlx::query_as(select)
                    .bind(id)
                    .fetch_one(&mut **tx)
                    .await
                    .map_err(db_err::<DB>)?
            }
        };
        if changes.may_write(&row.6) {
            Ok(row)
        } else {
            Err(not_found())
        }
    }

    /// Appends the new messages after the `first` kept ones and writes the state's keys, in
    /// the caller's transaction.
    async fn write_changes(
        tx: &mut sqlx::Transaction<'static, DB>,
        id: &str,
        first: i64,
        encoded: &EncodedChanges<'_>,
    ) -> Result<(), StoreError> {
        for (k, body) in encoded.messages.iter().enumerate() {
            sqlx::query(
                "INSERT INTO tinyagent_messages (session_id, seq, body) VALUES ($1, $2, $3)",
            )
            .bind(id)
            .bind(first + k as i64)
            .bind(body.as_str())
            .execute(&mut **tx)
            .await
            .map_err(db_err::<DB>)?;
        }
        for (key, value) in &encoded.state {
            let query = match value {
                Some(value) => sqlx::query(
                    "INSERT INTO tinyagent_state (session_id, key, value) VALUES ($1, $2, $3) \
                     ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                )
                .bind(id)
                .bind(*key)
                .bind(value.as_str()),
                None => {
                    sqlx::query("DELETE FROM tinyagent_state WHERE session_id = $1 AND key = $2")
                        .bind(id)
                        .bind(*key)
                }
            };
            query.execute(&mut **tx).await.map_err(db_err::<DB>)?;
        }
        Ok(())
    }

    /// Deletes a session's rows, in the caller's transaction.
    async fn delete_rows(
        tx: &mut sqlx::Transaction<'static, DB>,
        id: &str,
    ) -> Result<(), StoreError> {
        for statement in [
            "DELETE FROM tinyagent_messages WHERE session_id = $1",
            "DELETE FROM tinyagent_state WHERE session_id = $1",
            "DELETE FROM tinyagent_sessions WHERE id = $1",
        ] {
            sqlx::query(statement)
                .bind(id)
                .execute(&mut **tx)
                .await
                .map_err(db_err::<DB>)?;
        }
        Ok(())
    }
}

impl<DB: Dialect> SessionStore for SqlStore<DB>
where
    for<'c> &'c mut <DB as sqlx::Database>::Connection: sqlx::Executor<'c, Database = DB>,
    for<'q> <DB as sqlx::Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
    usize: sqlx::ColumnIndex<DB::Row>,
    i64: sqlx::Type<DB> + for<'q> sqlx::Encode<'q, DB> + for<'r> sqlx::Decode<'r, DB>,
    Option<i64>: for<'q> sqlx::Encode<'q, DB>,
    String: sqlx::Type<DB> + for<'r> sqlx::Decode<'r, DB>,
    for<'q> &'q str: sqlx::Type<DB> + sqlx::Encode<'q, DB>,
{
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        Box::pin(self.load_now(id))
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let now = now_micros();
            let mut tx = self
                .pool
                .begin_with(DB::BEGIN_WRITE)
                .await
                .map_err(db_err::<DB>)?;
            let select = DB::SELECT_SESSION_FOR_WRITE;
            let row: Option<Row> = sqlx::query_as(select)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err::<DB>)?;
            match row {
                Some(row) if live(&row, now) => {
                    return Err(StoreError::AlreadyExists {
                        session: id.to_owned(),
                    });
                }
                Some(_) => Self::delete_rows(&mut tx, id).await?,
                None => {}
            }
            let row: Row = (
                0,
                0,
                now,
                now,
                expiry(now, None, self.keeping.ttl),
                None,
                String::new(),
            );
            let inserted = sqlx::query(
                "INSERT INTO tinyagent_sessions (id, version, message_count, created_at, \
                 updated_at, expires_at, ttl_us) VALUES ($1, 0, 0, $2, $2, $3, NULL) \
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(id)
            .bind(now)
            .bind(row.4)
            .execute(&mut *tx)
            .await
            .map_err(db_err::<DB>)?;
            if DB::rows_affected(&inserted) == 0 {
                return Err(StoreError::AlreadyExists {
                    session: id.to_owned(),
                });
            }
            tx.commit().await.map_err(db_err::<DB>)?;
            info(id, &row)
        })
    }

    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(self.commit_now(id, expected, changes))
    }

    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        Box::pin(async move {
            let after = options.cursor.as_deref().map(Cursor::parse).transpose()?;
            let limit = options.limit.max(1);
            let fetch = i64::try_from(limit).unwrap_or(i64::MAX - 1) + 1;
            let now = now_micros();
            type ListRow = (String, i64, i64, i64, i64, Option<i64>, Option<i64>, String);
            // The owner's own condition comes first so that the index on
            // (owner, updated_at, id) serves a tenant's list.
            let (owner_sql, after_sql) = match (&options.owner, &after) {
                (Some(_), Some(_)) => (
                    "owner = $5 AND ",
                    "AND (updated_at < $3 OR (updated_at = $3 AND id > $4)) ",
                ),
                (Some(_), None) => ("owner = $3 AND ", ""),
                (None, Some(_)) => (
                    "",
                    "AND (updated_at < $3 OR (updated_at = $3 AND id > $4)) ",
                ),
                (None, None) => ("", ""),
            };
            let sql = format!(
                "SELECT id, version, message_count, created_at, updated_at, \
                 expires_at, ttl_us, owner FROM tinyagent_sessions \
                 WHERE {owner_sql}(expires_at IS NULL OR expires_at > $1) {after_sql}\
                 ORDER BY updated_at DESC, id ASC LIMIT $2"
            );
            let mut query = sqlx::query_as::<_, ListRow>(&sql).bind(now).bind(fetch);
            if let Some(after) = &after {
                query = query.bind(after.updated_micros).bind(after.id.as_str());
            }
            if let Some(owner) = &options.owner {
                query = query.bind(owner.as_str());
            }
            let rows: Vec<ListRow> = query.fetch_all(&self.pool).await.map_err(db_err::<DB>)?;
            let more = rows.len() > limit;
            let mut sessions = Vec::with_capacity(limit);
            let mut last = None;
            for (id, v, n, created, updated, expires, ttl, owner) in rows.into_iter().take(limit) {
                // One unreadable row must not hide every other session: it is left
                // out of the list (and logged); loading it reports what is wrong.
                match info(&id, &(v, n, created, updated, expires, ttl, owner)) {
                    Ok(info) => sessions.push(info),
                    Err(err) => {
                        tracing::warn!(store = DB::STORE, "session left out of a list: {err}")
                    }
                }
                last = Some(Cursor {
                    updated_micros: updated,
                    id,
                });
            }
            let next = if more { last.map(|c| c.encode()) } else { None };
            Ok(SessionPage::new(sessions, next))
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let mut tx = self
                .pool
                .begin_with(DB::BEGIN_WRITE)
                .await
                .map_err(db_err::<DB>)?;
            let expires: Option<(Option<i64>,)> =
                sqlx::query_as("SELECT expires_at FROM tinyagent_sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err::<DB>)?;
            let now = now_micros();
            let existed = expires.is_some_and(|(at,)| at.is_none_or(|at| at > now));
            Self::delete_rows(&mut tx, id).await?;
            tx.commit().await.map_err(db_err::<DB>)?;
            Ok(existed)
        })
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let now = now_micros();
            let own = own_ttl_column(ttl);
            let done = sqlx::query(
                "UPDATE tinyagent_sessions SET ttl_us = $2, expires_at = $3 \
                 WHERE id = $1 AND (expires_at IS NULL OR expires_at > $4)",
            )
            .bind(id)
            .bind(own)
            .bind(expiry(now, Some(own), self.keeping.ttl))
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(db_err::<DB>)?;
            if DB::rows_affected(&done) == 0 {
                return Err(StoreError::NotFound {
                    session: id.to_owned(),
                });
            }
            Ok(())
        })
    }

    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
        Box::pin(self.keeping.lock(&self.leases, id, wait))
    }

    fn get_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<serde_json::Value>, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let value: Option<(String,)> = sqlx::query_as(
                "SELECT st.value FROM tinyagent_state st JOIN tinyagent_sessions s \
                 ON s.id = st.session_id WHERE st.session_id = $1 AND st.key = $2 \
                 AND (s.expires_at IS NULL OR s.expires_at > $3)",
            )
            .bind(id)
            .bind(key)
            .bind(now_micros())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err::<DB>)?;
            value.map(|(v,)| decode_value(id, key, &v)).transpose()
        })
    }
}
