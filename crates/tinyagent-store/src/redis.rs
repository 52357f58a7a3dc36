//! [`RedisStore`]: sessions in Redis.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use redis::aio::ConnectionManager;
use tinyagent_core::BoxFuture;
use tinyagent_core::store::{
    Changes, Cursor, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession, check_session_id, from_micros, micros,
};

use crate::codec::{
    EncodedChanges, decode_message, decode_state, decode_value, session_of, ttl_millis,
};
use crate::keeping::Keeping;
use crate::lease::LeaseBackend;
use crate::redis_scripts::scripts;

/// Sessions in Redis: for several processes serving the same conversations, with expiry by
/// Redis's own key TTLs.
///
/// Keys, under a prefix (`tinyagent` by default): `PREFIX:meta:ID` (a hash: version, count,
/// created, updated, expires, ttl, owner; times in milliseconds since the epoch),
/// `PREFIX:msgs:ID` (a list of messages as JSON text in their serde shape), `PREFIX:state:ID`
/// (a hash of JSON texts), `PREFIX:index` (a sorted set of ids by last write, for lists),
/// `PREFIX:index:OWNER` (the same for one owner's sessions) and `PREFIX:lock:ID`. Sessions
/// written before owners were kept have no `owner` field: they belong to no tenant (the
/// empty owner) and are listed from `PREFIX:index`. Every operation is one Lua script, so it is atomic; a session's keys
/// expire together (`PEXPIREAT`). One Redis server (or a primary with replicas), not Redis
/// Cluster: a commit touches the index and the session's keys at once.
///
/// [`lock`](tinyagent_core::store::SessionStore::lock) takes an in-process lock, then a lease
/// (`SET PREFIX:lock:ID TOKEN NX PX …`), renewed while the run goes on, released by a script
/// that deletes it only if it still holds the token; it lasts [`DEFAULT_LEASE`] without
/// renewal, so a killed process frees its sessions after at most that long.
///
/// [`DEFAULT_LEASE`]: crate::DEFAULT_LEASE
#[derive(Clone)]
pub struct RedisStore {
    conn: ConnectionManager,
    prefix: Arc<str>,
    keeping: Keeping,
    leases: Arc<RedisLeases>,
}

/// The connection, for the leases' renewal task.
pub(crate) struct RedisLeases {
    conn: ConnectionManager,
    prefix: Arc<str>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .field("ttl", &self.keeping.ttl)
            .field("lease", &self.keeping.lease)
            .finish_non_exhaustive()
    }
}

fn db_err(err: redis::RedisError) -> StoreError {
    StoreError::backend("redis", err)
}

fn now_millis() -> i64 {
    micros(SystemTime::now()).div_euclid(1000)
}

/// A session's summary from its meta fields: version, count, created, updated, expires.
fn info(id: &str, meta: &[String]) -> Result<SessionInfo, StoreError> {
    let int = |k: usize, what: &str| -> Result<i64, StoreError> {
        meta.get(k)
            .and_then(|v| v.parse::<i64>().ok())
            .ok_or_else(|| StoreError::corrupt(id, format!("its {what} is not a number")))
    };
    let count = |k: usize, what: &str| -> Result<u64, StoreError> {
        u64::try_from(int(k, what)?)
            .map_err(|_| StoreError::corrupt(id, format!("its {what} is negative")))
    };
    let ms = |k: usize, what: &str| -> Result<SystemTime, StoreError> {
        Ok(from_micros(int(k, what)?.saturating_mul(1000)))
    };
    let mut stored = StoredSession::empty(id);
    stored.version = count(0, "version")?;
    stored.created_at = ms(2, "creation time")?;
    stored.updated_at = ms(3, "write time")?;
    stored.expires_at = match meta.get(4).map(String::as_str) {
        None | Some("") => None,
        Some(_) => Some(ms(4, "expiry time")?),
    };
    stored.owner = meta.get(5).cloned().unwrap_or_default();
    let mut info = stored.info();
    info.message_count = count(1, "message count")?;
    Ok(info)
}

impl RedisStore {
    /// How long [`RedisStore::connect`]'s connection waits for the answer to one command.
    pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);

    /// How long [`RedisStore::connect`] waits for a connection to the server.
    pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(5);

    /// Connects to `url` (`redis://host:port/db`, `rediss://` for TLS is not built in) with a
    /// connection manager that reconnects by itself. Its commands wait up to
    /// [`Self::RESPONSE_TIMEOUT`] for an answer: all of a process's commands share one multiplexed
    /// connection, and under a burst (a thousand conversations finishing at once) the
    /// client's default of 500 ms lost turns.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url).map_err(db_err)?;
        let config = redis::aio::ConnectionManagerConfig::new()
            .set_response_timeout(Some(Self::RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(Self::CONNECTION_TIMEOUT));
        let conn = client
            .get_connection_manager_with_config(config)
            .await
            .map_err(db_err)?;
        Ok(Self::from_connection(conn))
    }

    /// A store on a connection the application made.
    pub fn from_connection(conn: ConnectionManager) -> Self {
        let prefix: Arc<str> = Arc::from("tinyagent");
        Self {
            leases: Arc::new(RedisLeases {
                conn: conn.clone(),
                prefix: prefix.clone(),
            }),
            conn,
            prefix,
            keeping: Keeping::default(),
        }
    }

    /// Sets the prefix of the store's keys (`tinyagent` by default), to keep several stores in
    /// one Redis database.
    #[must_use]
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.prefix = Arc::from(prefix);
        self.leases = Arc::new(RedisLeases {
            conn: self.conn.clone(),
            prefix: self.prefix.clone(),
        });
        self
    }

    /// Sets the time to live of sessions that have none of their own: a session not written
    /// for this long vanishes (Redis deletes its keys).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.keeping.ttl = Some(ttl);
        self
    }

    /// Sets how long a [`lock`](tinyagent_core::store::SessionStore::lock)'s lease lasts without renewal.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.keeping.set_lease(lease);
        self
    }

    /// The connection.
    pub fn connection(&self) -> &ConnectionManager {
        &self.conn
    }

    /// The key of a session's `kind` (`meta`, `msgs`, `state`, `lock`).
    pub fn key(&self, kind: &str, id: &str) -> String {
        format!("{}:{kind}:{id}", self.prefix)
    }

    fn session_keys(&self, id: &str) -> [String; 4] {
        [
            self.key("meta", id),
            self.key("msgs", id),
            self.key("state", id),
            format!("{}:index", self.prefix),
        ]
    }

    fn store_ttl(&self) -> String {
        self.keeping
            .ttl
            .map(|t| ttl_millis(t).to_string())
            .unwrap_or_default()
    }

    async fn load_now(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        check_session_id(id)?;
        let [meta, msgs, state, _] = self.session_keys(id);
        let out: Vec<String> = scripts()
            .load
            .key(meta)
            .key(msgs)
            .key(state)
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(db_err)?;
        if out.len() < 7 {
            return Ok(None);
        }
        let info = info(id, &out[..6])?;
        // The script returns the list's length, then the list: both from one atomic read.
        let n: usize = out[6].parse().map_err(|_| {
            StoreError::corrupt(id, "the length of its message list is not a number")
        })?;
        if n as u64 != info.message_count {
            return Err(StoreError::corrupt(
                id,
                format!(
                    "it has {n} messages of the {} its meta counts",
                    info.message_count
                ),
            ));
        }
        let bodies = out
            .get(7..7 + n)
            .ok_or_else(|| StoreError::corrupt(id, "its message list is cut short"))?;
        let mut stored = session_of(info);
        for (k, body) in bodies.iter().enumerate() {
            stored.messages.push(decode_message(id, k as u64, body)?);
        }
        let pairs = out[7 + n..].chunks_exact(2);
        stored.state = decode_state(id, pairs.map(|p| (p[0].as_str(), p[1].as_str())))?;
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
        let encoded = EncodedChanges::new("redis", changes)?;
        let mut invocation = scripts().commit.prepare_invoke();
        for key in self.session_keys(id) {
            invocation.key(key);
        }
        invocation
            .arg(id)
            .arg(now_millis())
            .arg(self.store_ttl())
            .arg(format!(
                "{}{}",
                if changes.must_exist { "!" } else { "" },
                expected.map(|v| v.to_string()).unwrap_or_default()
            ))
            .arg(match &changes.owner {
                Some(owner) => format!("={owner}"),
                None => "*".to_owned(),
            })
            .arg(changes.messages.len());
        for body in &encoded.messages {
            invocation.arg(body);
        }
        for (key, value) in &encoded.state {
            match value {
                Some(value) => invocation.arg("s").arg(*key).arg(value),
                None => invocation.arg("d").arg(*key),
            };
        }
        let out: Vec<String> = invocation
            .invoke_async(&mut self.conn.clone())
            .await
            .map_err(db_err)?;
        match out.first().map(String::as_str) {
            Some("ok") => out
                .get(1)
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| StoreError::corrupt(id, "its version is not a number")),
            Some("notfound") => Err(StoreError::NotFound {
                session: id.to_owned(),
            }),
            Some("conflict") => Err(StoreError::Conflict {
                session: id.to_owned(),
                expected: expected.unwrap_or_default(),
                actual: out.get(1).and_then(|v| v.parse().ok()).unwrap_or_default(),
            }),
            Some("corrupt") => Err(StoreError::corrupt(
                id,
                out.get(1).cloned().unwrap_or_default(),
            )),
            _ => Err(StoreError::backend(
                "redis",
                format!("unexpected reply from the commit script: {out:?}"),
            )),
        }
    }
}

impl SessionStore for RedisStore {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        Box::pin(self.load_now(id))
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let now = now_millis();
            let mut invocation = scripts().create.prepare_invoke();
            for key in self.session_keys(id) {
                invocation.key(key);
            }
            let out: Vec<String> = invocation
                .arg(id)
                .arg(now)
                .arg(self.store_ttl())
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            if out.first().map(String::as_str) == Some("exists") {
                return Err(StoreError::AlreadyExists {
                    session: id.to_owned(),
                });
            }
            let mut stored = StoredSession::empty(id);
            stored.created_at = from_micros(now * 1000);
            stored.updated_at = stored.created_at;
            stored.expires_at = out
                .get(1)
                .and_then(|v| v.parse::<i64>().ok())
                .map(|ms| from_micros(ms * 1000));
            Ok(stored.info())
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
            let (score, after_id) = match &after {
                Some(c) => ((c.updated_micros / 1000).to_string(), c.id.clone()),
                None => ("+inf".to_owned(), String::new()),
            };
            // An owner's sessions have an index of their own; those of no owner are found
            // in the index of all sessions.
            let index = match options.owner.as_deref() {
                Some(owner) if !owner.is_empty() => format!("{}:index:{owner}", self.prefix),
                _ => format!("{}:index", self.prefix),
            };
            let out: Vec<String> = scripts()
                .list
                .key(index)
                .arg(score)
                .arg(after_id)
                .arg(limit + 1)
                .arg(format!("{}:meta:", self.prefix))
                .arg(match &options.owner {
                    Some(owner) => format!("={owner}"),
                    None => "*".to_owned(),
                })
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            let more = out.len() / 8 > limit;
            let mut sessions = Vec::with_capacity(limit);
            let mut last = None;
            for row in out.chunks(8).take(limit) {
                let [id, score, meta @ ..] = row else {
                    continue;
                };
                // One unreadable session must not hide every other: it is left out of the
                // list (and logged); loading it reports what is wrong.
                match info(id, meta) {
                    Ok(info) => sessions.push(info),
                    Err(err) => {
                        tracing::warn!(store = "redis", "session left out of a list: {err}")
                    }
                }
                last = Some(Cursor {
                    updated_micros: score
                        .parse::<i64>()
                        .unwrap_or_default()
                        .saturating_mul(1000),
                    id: id.clone(),
                });
            }
            let next = if more { last.map(|c| c.encode()) } else { None };
            Ok(SessionPage::new(sessions, next))
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let mut invocation = scripts().delete.prepare_invoke();
            for key in self.session_keys(id) {
                invocation.key(key);
            }
            let existed: i64 = invocation
                .arg(id)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            Ok(existed == 1)
        })
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let mut invocation = scripts().set_ttl.prepare_invoke();
            for key in self.session_keys(id) {
                invocation.key(key);
            }
            let out: Vec<String> = invocation
                .arg(id)
                .arg(now_millis())
                .arg(self.store_ttl())
                .arg(ttl.map_or(-1, ttl_millis))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            match out.first().map(String::as_str) {
                Some("ok") => Ok(()),
                _ => Err(StoreError::NotFound {
                    session: id.to_owned(),
                }),
            }
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
            let value: Option<String> = redis::cmd("HGET")
                .arg(self.key("state", id))
                .arg(key)
                .query_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            value.map(|v| decode_value(id, key, &v)).transpose()
        })
    }
}

impl LeaseBackend for RedisLeases {
    fn try_acquire<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let set: Option<String> = redis::cmd("SET")
                .arg(format!("{}:lock:{id}", self.prefix))
                .arg(token)
                .arg("NX")
                .arg("PX")
                .arg(ttl_millis(ttl))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            Ok(set.is_some())
        })
    }

    fn renew<'a>(
        &'a self,
        id: &'a str,
        token: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let renewed: i64 = scripts()
                .renew
                .key(format!("{}:lock:{id}", self.prefix))
                .arg(token)
                .arg(ttl_millis(ttl))
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            Ok(renewed == 1)
        })
    }

    fn release<'a>(&'a self, id: &'a str, token: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let _: i64 = scripts()
                .release
                .key(format!("{}:lock:{id}", self.prefix))
                .arg(token)
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(db_err)?;
            Ok(())
        })
    }
}
