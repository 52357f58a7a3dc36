//! [`SessionStore`]: conversations kept outside the process, behind one object-safe async trait.
//!
//! A store keeps, per session id, the history (a list of [`Message`]s in their documented
//! serde shape), the state map and a *version*. Writes go through [`SessionStore::commit`]:
//! a batch of new messages and state changes applied atomically, guarded by the version the
//! writer last saw (optimistic concurrency). [`MemoryStore`](super::MemoryStore) is the
//! in-process store; the `tinyagent-store` crate has SQLite, PostgreSQL and Redis.

use std::any::Any;
use std::fmt;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use super::changes::Changes;
use super::session::{Session, State};
use crate::error::BoxError;
use crate::message::Message;
use crate::util::BoxFuture;

/// The longest session id a store accepts, in bytes.
pub const MAX_SESSION_ID_LEN: usize = 256;

/// The page size of [`ListOptions`] when none is set.
pub const DEFAULT_LIST_LIMIT: usize = 50;

/// A session as a store holds it: history, state and version.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StoredSession {
    /// The session's id, its key in the store.
    pub id: String,
    /// The history, oldest first.
    pub messages: Vec<Message>,
    /// The state map.
    pub state: State,
    /// The version: 0 for a session whose history was never written, then one more for every
    /// commit that appended messages. A writer passes the version it loaded to
    /// [`SessionStore::commit`], which refuses the write if another writer got there first.
    pub version: u64,
    /// When the session was created.
    pub created_at: SystemTime,
    /// When the session was last written (history or state).
    pub updated_at: SystemTime,
    /// When the session vanishes unless written again; `None` when it never expires.
    pub expires_at: Option<SystemTime>,
    /// Who the session belongs to: the name of the tenant (a server's API key) whose commit
    /// created it; empty for a session created without an owner, and for sessions stored
    /// before stores kept owners. See [`Changes::owner`].
    pub owner: String,
}

impl StoredSession {
    /// An empty session, version 0, created now: what a store holds for an id it never saw.
    pub fn empty(id: impl Into<String>) -> Self {
        let now = SystemTime::now();
        Self {
            id: id.into(),
            messages: Vec::new(),
            state: State::new(),
            version: 0,
            created_at: now,
            updated_at: now,
            expires_at: None,
            owner: String::new(),
        }
    }

    /// The session's summary (what [`SessionStore::list`] returns).
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            id: self.id.clone(),
            version: self.version,
            message_count: self.messages.len() as u64,
            created_at: self.created_at,
            updated_at: self.updated_at,
            expires_at: self.expires_at,
            owner: self.owner.clone(),
        }
    }

    /// An in-memory [`Session`] holding a copy of this history and state, for an agent run.
    pub fn to_session(&self) -> Session {
        let session = Session::from_id(self.id.clone());
        session.append(self.messages.iter().cloned());
        *session.state() = self.state.clone();
        session
    }
}

/// A session's summary, without its history and state.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// The session's id.
    pub id: String,
    /// Its version (see [`StoredSession::version`]).
    pub version: u64,
    /// How many messages its history holds.
    pub message_count: u64,
    /// When it was created.
    pub created_at: SystemTime,
    /// When it was last written.
    pub updated_at: SystemTime,
    /// When it vanishes unless written again; `None` when it never expires.
    pub expires_at: Option<SystemTime>,
    /// Who it belongs to (see [`StoredSession::owner`]); empty for no owner.
    pub owner: String,
}

/// Which page of sessions [`SessionStore::list`] returns: most recently written first.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListOptions {
    /// At most this many sessions (at least 1; [`DEFAULT_LIST_LIMIT`] by default).
    pub limit: usize,
    /// The [`SessionPage::next`] cursor of the previous page; `None` for the first page.
    pub cursor: Option<String>,
    /// Only the sessions of this owner (the empty string: the sessions without one);
    /// `None` (the default) lists every session.
    pub owner: Option<String>,
}

impl Default for ListOptions {
    fn default() -> Self {
        Self {
            limit: DEFAULT_LIST_LIMIT,
            cursor: None,
            owner: None,
        }
    }
}

impl ListOptions {
    /// The first page, of [`DEFAULT_LIST_LIMIT`] sessions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the page size (0 is taken as 1).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// Continues after a previous page.
    #[must_use]
    pub fn cursor(mut self, cursor: impl Into<String>) -> Self {
        self.cursor = Some(cursor.into());
        self
    }

    /// Lists only the sessions of this owner (see [`StoredSession::owner`]).
    #[must_use]
    pub fn owner(mut self, owner: impl Into<String>) -> Self {
        self.owner = Some(owner.into());
        self
    }

    /// Whether a session of `owner` belongs on the page.
    pub fn includes(&self, owner: &str) -> bool {
        self.owner.as_deref().is_none_or(|o| o == owner)
    }
}

/// One page of [`SessionStore::list`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SessionPage {
    /// The sessions, most recently written first.
    pub sessions: Vec<SessionInfo>,
    /// The cursor of the next page, when there may be one.
    pub next: Option<String>,
}

impl SessionPage {
    /// A page.
    pub fn new(sessions: Vec<SessionInfo>, next: Option<String>) -> Self {
        Self { sessions, next }
    }
}

/// Why a store refused or failed an operation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another writer changed the session's history since the writer loaded it.
    #[error(
        "session {session:?} changed while this run was in flight: it was loaded at version \
         {expected} and is now at version {actual}; load it again and retry"
    )]
    Conflict {
        /// The session's id.
        session: String,
        /// The version the writer expected.
        expected: u64,
        /// The version the store holds.
        actual: u64,
    },
    /// Another run holds the session (see [`SessionStore::lock`]).
    #[error("session {session:?} is busy: another run on it is in flight{}", waited_text(*waited))]
    Busy {
        /// The session's id.
        session: String,
        /// How long the caller waited for it; `None` when it did not wait.
        waited: Option<Duration>,
    },
    /// The session does not exist (never created, deleted, or expired).
    #[error("session {session:?} does not exist (it was never created, was deleted, or expired)")]
    NotFound {
        /// The session's id.
        session: String,
    },
    /// [`SessionStore::create`] was asked for an id that is taken.
    #[error("session {session:?} already exists")]
    AlreadyExists {
        /// The session's id.
        session: String,
    },
    /// The caller passed something the store cannot take (an empty or overlong id, a cursor
    /// that no list returned).
    #[error("invalid {what}: {reason}")]
    InvalidInput {
        /// What was wrong: `"session id"`, `"cursor"`...
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// What the store holds for the session cannot be read (a corrupt row, a message that is
    /// not in the serde shape of [`Message`]). Nothing was changed.
    #[error("session {session:?} holds data that cannot be read: {detail}")]
    Corrupt {
        /// The session's id.
        session: String,
        /// What is wrong, and where.
        detail: String,
    },
    /// The database or server failed (connection lost, disk full, timeout...).
    #[error("the {store} session store failed: {source}")]
    Backend {
        /// Which store: `"sqlite"`, `"postgres"`, `"redis"`...
        store: &'static str,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
}

fn waited_text(waited: Option<Duration>) -> String {
    match waited {
        Some(d) => format!(" (waited {} ms for it)", d.as_millis()),
        None => String::new(),
    }
}

impl StoreError {
    /// A [`StoreError::Backend`] of this store wrapping an error.
    pub fn backend(store: &'static str, source: impl Into<BoxError>) -> Self {
        Self::Backend {
            store,
            source: source.into(),
        }
    }

    /// A [`StoreError::Corrupt`] for this session.
    pub fn corrupt(session: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::Corrupt {
            session: session.into(),
            detail: detail.into(),
        }
    }

    /// Whether trying the same thing again may succeed: conflicts, busy sessions and backend
    /// failures may pass on a later try; the rest will not.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::Conflict { .. } | Self::Busy { .. } | Self::Backend { .. }
        )
    }
}

/// Checks a session id: 1 to [`MAX_SESSION_ID_LEN`] bytes, no control characters. Every
/// store calls it before touching its backend.
///
/// ```
/// use tinyagent::store::check_session_id;
/// assert!(check_session_id("ses_1").is_ok());
/// assert!(check_session_id("").is_err());
/// assert!(check_session_id("a\nb").is_err());
/// ```
pub fn check_session_id(id: &str) -> Result<(), StoreError> {
    let reason = if id.is_empty() {
        "it is empty".to_owned()
    } else if id.len() > MAX_SESSION_ID_LEN {
        format!(
            "it is {} bytes long; at most {MAX_SESSION_ID_LEN} are allowed",
            id.len()
        )
    } else if id.chars().any(char::is_control) {
        "it contains control characters".to_owned()
    } else {
        return Ok(());
    };
    Err(StoreError::InvalidInput {
        what: "session id",
        reason,
    })
}

/// Holds a session for one run; dropping it lets the next run in. See [`SessionStore::lock`].
pub struct SessionLock {
    session: String,
    _guard: Box<dyn Any + Send + Sync>,
}

impl fmt::Debug for SessionLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionLock")
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

impl SessionLock {
    /// A lock on `session` that lasts as long as `guard` lives: whatever the guard's `Drop`
    /// does releases it.
    pub fn new(session: impl Into<String>, guard: impl Any + Send + Sync) -> Self {
        Self {
            session: session.into(),
            _guard: Box::new(guard),
        }
    }

    /// The id of the session held.
    pub fn session(&self) -> &str {
        &self.session
    }
}

/// Where sessions live between runs: in memory, a file, a database or a cache server.
///
/// Object safe (`Arc<dyn SessionStore>`); every method returns a boxed future, like
/// [`Model`](crate::Model). Implementations must make [`commit`](Self::commit) atomic and
/// version-checked, treat an expired session as absent everywhere, and report data they
/// cannot read as [`StoreError::Corrupt`], never by panicking.
///
/// **Versions and concurrency.** A writer loads a session (version *v*), works, and commits
/// its changes with `expected = Some(v)`; if another commit appended messages meanwhile the
/// store answers [`StoreError::Conflict`] and writes nothing. So two runs on one session
/// never lose or interleave each other's messages. To make the second run *wait* instead of
/// failing, runs take the session's [`lock`](Self::lock) first (the
/// `SessionRunner` does).
///
/// **State** keys are written one by one (the last write of a key wins) and do not change the
/// version; a commit's state changes are applied with its messages.
///
/// **Expiry.** A store may have a time to live (TTL), and a session its own
/// ([`set_ttl`](Self::set_ttl)). A session expires when it has not been written for its TTL;
/// an expired session is gone from [`load`](Self::load) and [`list`](Self::list), and a
/// commit to it starts a new session.
///
/// Two writers that loaded the same version: the first commit wins, the second gets a
/// conflict and nothing of it is written.
///
/// ```
/// use tinyagent::{Message, store::{MemoryStore, SessionStore}};
/// use tinyagent::store::StoreError;
///
/// # tokio_test::block_on(async {
/// let store = MemoryStore::new();
/// let v1 = store.append("ses_1", 0, vec![Message::user("hi"), Message::assistant("hello")]).await?;
/// assert_eq!(v1, 1);
///
/// // Two writers load version 1; the first commit wins.
/// let loaded = store.load("ses_1").await?.expect("the session exists");
/// assert_eq!((loaded.version, loaded.messages.len()), (1, 2));
/// store.append("ses_1", loaded.version, vec![Message::user("first")]).await?;
/// let late = store.append("ses_1", loaded.version, vec![Message::user("second")]).await;
/// assert!(matches!(late, Err(StoreError::Conflict { expected: 1, actual: 2, .. })), "{late:?}");
///
/// // State keys are written one by one and do not move the version.
/// store.set_state("ses_1", "role", "admin".into()).await?;
/// let now = store.load("ses_1").await?.unwrap();
/// assert_eq!((now.version, now.messages.len()), (2, 3));
/// assert_eq!(now.state.get("role").and_then(|v| v.as_str()), Some("admin"));
/// # Ok::<(), StoreError>(())
/// # }).unwrap();
/// ```
pub trait SessionStore: Send + Sync {
    /// The session, or `None` when it does not exist (or expired).
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>>;

    /// Creates an empty session (version 0); [`StoreError::AlreadyExists`] if the id is taken.
    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>>;

    /// Applies `changes` atomically and returns the session's new version.
    ///
    /// With `expected = Some(v)`, the write happens only if the session is at version `v`
    /// (`Some(0)` also accepts a session that does not exist yet), else
    /// [`StoreError::Conflict`], or [`StoreError::NotFound`] when `v > 0` and the session is
    /// gone. With `None` the write is unconditional. A session that does not exist is
    /// created. The version goes up by one when `changes` has messages.
    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>>;

    /// Sessions, most recently written first, one page at a time.
    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>>;

    /// Deletes a session: history, state and all; returns whether it existed.
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>>;

    /// Sets the session's own time to live, counted from now and from each later write,
    /// overriding the store's; `None` makes it never expire.
    /// [`StoreError::NotFound`] if it does not exist.
    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// Takes the session for one run. With `wait = None` it fails at once with
    /// [`StoreError::Busy`] when another run holds it; with `Some(d)` it waits up to `d`.
    /// The lock is released when the returned guard is dropped.
    ///
    /// What the lock covers depends on the store (in-process for memory and SQLite, across
    /// processes for PostgreSQL and Redis); see each store's docs. Correctness never rests on
    /// it alone: commits are version-checked.
    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<SessionLock, StoreError>>;

    /// Appends messages if the session is at version `expected`; returns the new version.
    fn append<'a>(
        &'a self,
        id: &'a str,
        expected: u64,
        messages: Vec<Message>,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let changes = Changes::new().append(messages);
            self.commit(id, Some(expected), &changes).await
        })
    }

    /// The value of a state key; `None` when the key or the session does not exist.
    fn get_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
        Box::pin(async move { Ok(self.load(id).await?.and_then(|mut s| s.state.remove(key))) })
    }

    /// Sets a state key (creating the session if needed).
    fn set_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
        value: Value,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let changes = Changes::new().set(key, value);
            self.commit(id, None, &changes).await.map(drop)
        })
    }

    /// Removes a state key; a session that does not exist stays so (one commit with
    /// [`Changes::must_exist`]).
    fn remove_state<'a>(
        &'a self,
        id: &'a str,
        key: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let changes = Changes::new().remove(key).must_exist(true);
            match self.commit(id, None, &changes).await {
                Err(StoreError::NotFound { .. }) => Ok(()),
                other => other.map(drop),
            }
        })
    }

    /// Whether what the store holds outlives its process (a file, a database, a server):
    /// runs keep a journal only in such a store, since a journal lost with the process finishes
    /// nothing (see `SessionRunner::journal`). `true` unless the store says otherwise; a
    /// [`MemoryStore`](crate::store::MemoryStore) says `false`.
    fn is_durable(&self) -> bool {
        true
    }
}

macro_rules! forward_store {
    ($($ptr:ty),*) => {$(
        impl<S: SessionStore + ?Sized> SessionStore for $ptr {
            fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
                (**self).load(id)
            }
            fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
                (**self).create(id)
            }
            fn commit<'a>(&'a self, id: &'a str, expected: Option<u64>, changes: &'a Changes) -> BoxFuture<'a, Result<u64, StoreError>> {
                (**self).commit(id, expected, changes)
            }
            fn list<'a>(&'a self, options: &'a ListOptions) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
                (**self).list(options)
            }
            fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
                (**self).delete(id)
            }
            fn set_ttl<'a>(&'a self, id: &'a str, ttl: Option<Duration>) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).set_ttl(id, ttl)
            }
            fn lock<'a>(&'a self, id: &'a str, wait: Option<Duration>) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
                (**self).lock(id, wait)
            }
            fn get_state<'a>(&'a self, id: &'a str, key: &'a str) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
                (**self).get_state(id, key)
            }
            fn set_state<'a>(&'a self, id: &'a str, key: &'a str, value: Value) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).set_state(id, key, value)
            }
            fn remove_state<'a>(&'a self, id: &'a str, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
                (**self).remove_state(id, key)
            }
            fn is_durable(&self) -> bool {
                (**self).is_durable()
            }
        }
    )*};
}

forward_store!(std::sync::Arc<S>, Box<S>, &S);
