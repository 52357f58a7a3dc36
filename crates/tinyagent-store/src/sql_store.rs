//! The operations of the SQL stores, written once for SQLite and PostgreSQL: `sql_store!`
//! expands to the store's `SessionStore` and lease implementations over its sqlx driver.

/// Writes `impl SessionStore` and the lease backend for a store type with fields `pool`,
/// `ttl`, `lease`, `locks` and `leases` (an `Arc` of a type holding the pool).
macro_rules! sql_store {
    (
        store: $Store:ident,
        leases: $Leases:ident,
        db: $Db:ty,
        name: $name:literal,
        begin_write: $begin_write:literal,
        begin_read: $begin_read:literal,
        for_update: $for_update:literal,
        serialize_migrations: $serialize:literal $(,)?
    ) => {
        use std::time::Duration;

        use tinyagent::store::{
            Changes, Cursor, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore,
            StoreError, StoredSession, check_session_id,
        };
        use tinyagent::BoxFuture;

        use crate::codec::{decode_message, decode_value, encode_message, encode_value};
        use crate::sql::{MIGRATIONS, Row, SCHEMA_VERSION, count, expiry, info, live, now_micros, own_ttl_column};

        fn db_err(err: sqlx::Error) -> StoreError {
            StoreError::backend($name, err)
        }

        /// Applies the migrations this database has not seen yet.
        async fn migrate(pool: &sqlx::Pool<$Db>) -> Result<(), StoreError> {
            let mut tx = pool.begin_with($begin_write).await.map_err(db_err)?;
            if !$serialize.is_empty() {
                sqlx::query($serialize).execute(&mut *tx).await.map_err(db_err)?;
            }
            sqlx::query("CREATE TABLE IF NOT EXISTS tinyagent_schema (version BIGINT NOT NULL)")
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            let found: Option<(i64,)> = sqlx::query_as("SELECT version FROM tinyagent_schema")
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
            let current = match found {
                Some((v,)) => v,
                None => {
                    sqlx::query("INSERT INTO tinyagent_schema (version) VALUES (0)")
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    0
                }
            };
            if current > SCHEMA_VERSION {
                return Err(StoreError::backend(
                    $name,
                    format!(
                        "the database's session schema is at version {current}, newer than the \
                         {SCHEMA_VERSION} this build of tinyagent-store knows; upgrade it"
                    ),
                ));
            }
            for (n, statements) in MIGRATIONS.iter().enumerate().skip(current as usize) {
                for statement in *statements {
                    sqlx::query(statement).execute(&mut *tx).await.map_err(db_err)?;
                }
                sqlx::query("UPDATE tinyagent_schema SET version = $1")
                    .bind(n as i64 + 1)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                tracing::info!(store = $name, version = n + 1, "session schema migrated");
            }
            tx.commit().await.map_err(db_err)
        }

        impl $Store {
            /// The schema version of the database (after the migrations ran on connect).
            pub async fn schema_version(&self) -> Result<i64, StoreError> {
                let (v,): (i64,) = sqlx::query_as("SELECT version FROM tinyagent_schema")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db_err)?;
                Ok(v)
            }

            async fn load_now(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
                check_session_id(id)?;
                let mut tx = self.pool.begin_with($begin_read).await.map_err(db_err)?;
                let row: Option<Row> = sqlx::query_as(
                    "SELECT version, message_count, created_at, updated_at, expires_at, ttl_us, \
                     owner FROM tinyagent_sessions WHERE id = $1",
                )
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(db_err)?;
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
                .map_err(db_err)?;
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
                .map_err(db_err)?;
                let mut state = tinyagent::store::State::new();
                for (key, value) in values {
                    let value = decode_value(id, &key, &value)?;
                    state.insert(key, value);
                }
                tx.commit().await.map_err(db_err)?;
                let mut stored = StoredSession::empty(id);
                stored.messages = messages;
                stored.state = state;
                stored.version = info.version;
                stored.created_at = info.created_at;
                stored.updated_at = info.updated_at;
                stored.expires_at = info.expires_at;
                stored.owner = info.owner;
                Ok(Some(stored))
            }

            /// Commits; with `create = false`, a session that does not exist is
            /// [`StoreError::NotFound`] instead of being created.
            async fn commit_now(
                &self,
                id: &str,
                expected: Option<u64>,
                changes: &Changes,
                create: bool,
            ) -> Result<u64, StoreError> {
                check_session_id(id)?;
                // Encode first: nothing is written if a message cannot be.
                let bodies = changes
                    .messages
                    .iter()
                    .map(|m| encode_message($name, m))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut state = Vec::with_capacity(changes.state.len());
                for (key, value) in &changes.state {
                    state.push((key, value.as_ref().map(|v| encode_value($name, v)).transpose()?));
                }
                let now = now_micros();
                let mut tx = self.pool.begin_with($begin_write).await.map_err(db_err)?;
                const SELECT: &str = concat!(
                    "SELECT version, message_count, created_at, updated_at, expires_at, ttl_us, \
                     owner FROM tinyagent_sessions WHERE id = $1",
                    $for_update
                );
                let mut row: Option<Row> = sqlx::query_as(SELECT)
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(db_err)?;
                if row.as_ref().is_some_and(|row| !live(row, now)) {
                    delete_rows(&mut tx, id).await?;
                    row = None;
                }
                let row = match row {
                    Some(row) if !changes.may_write(&row.6) => {
                        return Err(StoreError::NotFound {
                            session: id.to_owned(),
                        });
                    }
                    Some(row) => row,
                    None => {
                        if !create || expected.is_some_and(|v| v > 0) {
                            return Err(StoreError::NotFound {
                                session: id.to_owned(),
                            });
                        }
                        sqlx::query(
                            "INSERT INTO tinyagent_sessions (id, version, message_count, \
                             created_at, updated_at, expires_at, ttl_us, owner) \
                             VALUES ($1, 0, 0, $2, $2, NULL, NULL, $3) ON CONFLICT (id) DO NOTHING",
                        )
                        .bind(id)
                        .bind(now)
                        .bind(changes.owner.as_deref().unwrap_or(""))
                        .execute(&mut *tx)
                        .await
                        .map_err(db_err)?;
                        let row: Row = sqlx::query_as(SELECT)
                            .bind(id)
                            .fetch_one(&mut *tx)
                            .await
                            .map_err(db_err)?;
                        if !changes.may_write(&row.6) {
                            return Err(StoreError::NotFound {
                                session: id.to_owned(),
                            });
                        }
                        row
                    }
                };
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
                for (k, body) in bodies.iter().enumerate() {
                    sqlx::query(
                        "INSERT INTO tinyagent_messages (session_id, seq, body) VALUES ($1, $2, $3)",
                    )
                    .bind(id)
                    .bind(row.1 + k as i64)
                    .bind(body)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
                }
                for (key, value) in &state {
                    let query = match value {
                        Some(value) => sqlx::query(
                            "INSERT INTO tinyagent_state (session_id, key, value) VALUES ($1, $2, $3) \
                             ON CONFLICT (session_id, key) DO UPDATE SET value = excluded.value",
                        )
                        .bind(id)
                        .bind(key.as_str())
                        .bind(value.as_str()),
                        None => sqlx::query(
                            "DELETE FROM tinyagent_state WHERE session_id = $1 AND key = $2",
                        )
                        .bind(id)
                        .bind(key.as_str()),
                    };
                    query.execute(&mut *tx).await.map_err(db_err)?;
                }
                let new_version = version + u64::from(!bodies.is_empty());
                sqlx::query(
                    "UPDATE tinyagent_sessions SET version = $2, message_count = $3, \
                     updated_at = $4, expires_at = $5 WHERE id = $1",
                )
                .bind(id)
                .bind(new_version as i64)
                .bind(row.1 + bodies.len() as i64)
                .bind(now)
                .bind(expiry(now, row.5, self.ttl))
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
                tx.commit().await.map_err(db_err)?;
                Ok(new_version)
            }
        }

        async fn delete_rows(
            tx: &mut sqlx::Transaction<'static, $Db>,
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
                    .map_err(db_err)?;
            }
            Ok(())
        }

        impl SessionStore for $Store {
            fn load<'a>(
                &'a self,
                id: &'a str,
            ) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
                Box::pin(self.load_now(id))
            }

            fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
                Box::pin(async move {
                    check_session_id(id)?;
                    let now = now_micros();
                    let mut tx = self.pool.begin_with($begin_write).await.map_err(db_err)?;
                    const SELECT: &str = concat!(
                        "SELECT version, message_count, created_at, updated_at, expires_at, \
                         ttl_us, owner FROM tinyagent_sessions WHERE id = $1",
                        $for_update
                    );
                    let row: Option<Row> = sqlx::query_as(SELECT)
                        .bind(id)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(db_err)?;
                    match row {
                        Some(row) if live(&row, now) => {
                            return Err(StoreError::AlreadyExists {
                                session: id.to_owned(),
                            });
                        }
                        Some(_) => delete_rows(&mut tx, id).await?,
                        None => {}
                    }
                    let row: Row = (0, 0, now, now, expiry(now, None, self.ttl), None, String::new());
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
                    .map_err(db_err)?;
                    if inserted.rows_affected() == 0 {
                        return Err(StoreError::AlreadyExists {
                            session: id.to_owned(),
                        });
                    }
                    tx.commit().await.map_err(db_err)?;
                    info(id, &row)
                })
            }

            fn commit<'a>(
                &'a self,
                id: &'a str,
                expected: Option<u64>,
                changes: &'a Changes,
            ) -> BoxFuture<'a, Result<u64, StoreError>> {
                Box::pin(self.commit_now(id, expected, changes, true))
            }

            fn remove_state<'a>(
                &'a self,
                id: &'a str,
                key: &'a str,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(async move {
                    let changes = Changes::new().remove(key);
                    match self.commit_now(id, None, &changes, false).await {
                        Err(StoreError::NotFound { .. }) => Ok(()),
                        other => other.map(drop),
                    }
                })
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
                        (Some(_), Some(_)) => ("owner = $5 AND ", "AND (updated_at < $3 OR (updated_at = $3 AND id > $4)) "),
                        (Some(_), None) => ("owner = $3 AND ", ""),
                        (None, Some(_)) => ("", "AND (updated_at < $3 OR (updated_at = $3 AND id > $4)) "),
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
                    let rows: Vec<ListRow> = query.fetch_all(&self.pool).await.map_err(db_err)?;
                    let more = rows.len() > limit;
                    let mut sessions = Vec::with_capacity(limit);
                    let mut last = None;
                    for (id, v, n, created, updated, expires, ttl, owner) in rows.into_iter().take(limit) {
                        // One unreadable row must not hide every other session: it is left
                        // out of the list (and logged); loading it reports what is wrong.
                        match info(&id, &(v, n, created, updated, expires, ttl, owner)) {
                            Ok(info) => sessions.push(info),
                            Err(err) => tracing::warn!(store = $name, "session left out of a list: {err}"),
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
                    let mut tx = self.pool.begin_with($begin_write).await.map_err(db_err)?;
                    let expires: Option<(Option<i64>,)> =
                        sqlx::query_as("SELECT expires_at FROM tinyagent_sessions WHERE id = $1")
                            .bind(id)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(db_err)?;
                    let now = now_micros();
                    let existed = expires.is_some_and(|(at,)| at.is_none_or(|at| at > now));
                    delete_rows(&mut tx, id).await?;
                    tx.commit().await.map_err(db_err)?;
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
                    .bind(expiry(now, Some(own), self.ttl))
                    .bind(now)
                    .execute(&self.pool)
                    .await
                    .map_err(db_err)?;
                    if done.rows_affected() == 0 {
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
                Box::pin(async move {
                    check_session_id(id)?;
                    crate::lease::lock(&self.leases, &self.locks, id, wait, self.lease).await
                })
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
                    .map_err(db_err)?;
                    value.map(|(v,)| decode_value(id, key, &v)).transpose()
                })
            }
        }

        impl crate::lease::LeaseBackend for $Leases {
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
                    .map_err(db_err)?;
                    Ok(done.rows_affected() == 1)
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
                    .map_err(db_err)?;
                    Ok(done.rows_affected() == 1)
                })
            }

            fn release<'a>(
                &'a self,
                id: &'a str,
                token: &'a str,
            ) -> BoxFuture<'a, Result<(), StoreError>> {
                Box::pin(async move {
                    sqlx::query("DELETE FROM tinyagent_locks WHERE id = $1 AND token = $2")
                        .bind(id)
                        .bind(token)
                        .execute(&self.pool)
                        .await
                        .map_err(db_err)?;
                    Ok(())
                })
            }
        }
    };
}

pub(crate) use sql_store;
