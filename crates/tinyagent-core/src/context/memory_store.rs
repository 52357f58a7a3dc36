//! [`MemoryStore`]: the in-process [`SessionStore`], and [`SessionLocks`], the per-session
//! locks of one process that stores share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::changes::Changes;
use super::store::{
    ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError, StoredSession,
    check_session_id,
};
use crate::util::{BoxFuture, lock};

/// Per session id: its mutex, and how many holders and waiters it has.
type LockMap = Arc<Mutex<HashMap<String, (Arc<tokio::sync::Mutex<()>>, usize)>>>;

/// Per-session locks within one process: what [`SessionStore::lock`] does for stores whose
/// sessions only this process writes (memory), and the first step of the stores whose locks
/// hold across processes.
///
/// Waiters are served in the order they came (tokio's fair mutex). An entry lives only while
/// the lock is held or awaited, so the map does not grow with the number of sessions.
#[derive(Debug, Clone, Default)]
pub struct SessionLocks {
    map: LockMap,
}

/// One holder or waiter of a session's lock: the entry goes when the last one does.
struct Registration {
    map: LockMap,
    id: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut map = lock(&self.map);
        if let Some(entry) = map.get_mut(&self.id) {
            entry.1 -= 1;
            if entry.1 == 0 {
                map.remove(&self.id);
            }
        }
    }
}

struct LocalGuard {
    // Fields drop in order: the lock is released, then the entry may go.
    _guard: tokio::sync::OwnedMutexGuard<()>,
    _registration: Registration,
}

impl SessionLocks {
    /// No session locked.
    pub fn new() -> Self {
        Self::default()
    }

    /// Locks `id`: at once or [`StoreError::Busy`] with `wait = None`, else waiting up to
    /// `wait`.
    pub async fn lock(&self, id: &str, wait: Option<Duration>) -> Result<SessionLock, StoreError> {
        let (mutex, registration) = {
            let mut map = lock(&self.map);
            let entry = map.entry(id.to_owned()).or_default();
            entry.1 += 1;
            let registration = Registration {
                map: self.map.clone(),
                id: id.to_owned(),
            };
            (entry.0.clone(), registration)
        };
        let busy = |waited| StoreError::Busy {
            session: id.to_owned(),
            waited,
        };
        // A failed or cancelled wait drops the registration, and with it the entry if it was
        // the last.
        let guard = match wait {
            None => mutex.try_lock_owned().map_err(|_| busy(None))?,
            Some(d) => tokio::time::timeout(d, mutex.lock_owned())
                .await
                .map_err(|_| busy(Some(d)))?,
        };
        Ok(SessionLock::new(
            id,
            LocalGuard {
                _guard: guard,
                _registration: registration,
            },
        ))
    }

    /// How many sessions are locked or awaited now.
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Whether no session is locked or awaited.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct Entry {
    session: StoredSession,
    /// The session's own time to live: `None` when it follows the store's.
    ttl: Option<Option<Duration>>,
}

impl Entry {
    fn new(id: &str, now: SystemTime) -> Self {
        let mut session = StoredSession::empty(id);
        session.created_at = now;
        session.updated_at = now;
        Self { session, ttl: None }
    }

    fn expired(&self, now: SystemTime) -> bool {
        self.session.expires_at.is_some_and(|at| at <= now)
    }
}

/// Sessions in this process's memory: fast, shared by clones, gone when the process ends.
///
/// ```
/// use tinyagent::Message;
/// use tinyagent::store::{MemoryStore, SessionStore};
///
/// # tokio_test::block_on(async {
/// let store = MemoryStore::new();
/// let v1 = store.append("ses_1", 0, vec![Message::user("hi")]).await.unwrap();
/// assert_eq!(v1, 1);
/// // A writer that loaded version 0 is too late now.
/// assert!(store.append("ses_1", 0, vec![Message::user("hi again")]).await.is_err());
/// let session = store.load("ses_1").await.unwrap().unwrap();
/// assert_eq!(session.messages.len(), 1);
/// # });
/// ```
#[derive(Clone, Default)]
pub struct MemoryStore {
    sessions: Arc<Mutex<HashMap<String, Entry>>>,
    locks: SessionLocks,
    ttl: Option<Duration>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore")
            .field("sessions", &lock(&self.sessions).len())
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl MemoryStore {
    /// An empty store whose sessions never expire.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the time to live of sessions that have none of their own: a session not written
    /// for this long vanishes.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    fn live<'m>(
        map: &'m mut HashMap<String, Entry>,
        id: &str,
        now: SystemTime,
    ) -> Option<&'m mut Entry> {
        if map.get(id).is_some_and(|e| e.expired(now)) {
            map.remove(id);
        }
        map.get_mut(id)
    }

    fn touch(&self, entry: &mut Entry, now: SystemTime) {
        entry.session.updated_at = now;
        entry.session.expires_at = entry.ttl.unwrap_or(self.ttl).map(|ttl| now + ttl);
    }

    /// Commits; with [`Changes::must_exist`], a session that does not exist is
    /// [`StoreError::NotFound`] instead of being created.
    fn commit_now(
        &self,
        id: &str,
        expected: Option<u64>,
        changes: &Changes,
    ) -> Result<u64, StoreError> {
        check_session_id(id)?;
        let now = SystemTime::now();
        let mut map = lock(&self.sessions);
        let entry = match Self::live(&mut map, id, now) {
            Some(entry) if !changes.may_write(&entry.session.owner) => {
                return Err(StoreError::NotFound {
                    session: id.to_owned(),
                });
            }
            Some(entry) => entry,
            None => {
                if changes.must_exist || expected.is_some_and(|v| v > 0) {
                    return Err(StoreError::NotFound {
                        session: id.to_owned(),
                    });
                }
                let entry = map
                    .entry(id.to_owned())
                    .or_insert_with(|| Entry::new(id, now));
                entry.session.owner = changes.owner.clone().unwrap_or_default();
                entry
            }
        };
        if let Some(expected) = expected {
            if entry.session.version != expected {
                return Err(StoreError::Conflict {
                    session: id.to_owned(),
                    expected,
                    actual: entry.session.version,
                });
            }
        }
        if !changes.messages.is_empty() {
            entry.session.version += 1;
            entry
                .session
                .messages
                .extend(changes.messages.iter().cloned());
        }
        for (key, value) in &changes.state {
            match value {
                Some(value) => entry.session.state.insert(key.clone(), value.clone()),
                None => entry.session.state.remove(key),
            };
        }
        let version = entry.session.version;
        self.touch(entry, now);
        Ok(version)
    }
}

impl SessionStore for MemoryStore {
    fn is_durable(&self) -> bool {
        false
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let mut map = lock(&self.sessions);
            Ok(Self::live(&mut map, id, SystemTime::now()).map(|e| e.session.clone()))
        })
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let now = SystemTime::now();
            let mut map = lock(&self.sessions);
            if Self::live(&mut map, id, now).is_some() {
                return Err(StoreError::AlreadyExists {
                    session: id.to_owned(),
                });
            }
            let mut entry = Entry::new(id, now);
            self.touch(&mut entry, now);
            let info = entry.session.info();
            map.insert(id.to_owned(), entry);
            Ok(info)
        })
    }

    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move { self.commit_now(id, expected, changes) })
    }

    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        Box::pin(async move {
            let after = options.cursor.as_deref().map(Cursor::parse).transpose()?;
            let now = SystemTime::now();
            let mut map = lock(&self.sessions);
            map.retain(|_, e| !e.expired(now));
            let mut all: Vec<(Cursor, SessionInfo)> = map
                .values()
                .filter(|e| options.includes(&e.session.owner))
                .map(|e| (Cursor::of(&e.session), e.session.info()))
                .collect();
            drop(map);
            all.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(Cursor::page(all, after.as_ref(), options.limit.max(1)))
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let mut map = lock(&self.sessions);
            let live = Self::live(&mut map, id, SystemTime::now()).is_some();
            map.remove(id);
            Ok(live)
        })
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            check_session_id(id)?;
            let now = SystemTime::now();
            let mut map = lock(&self.sessions);
            let entry = Self::live(&mut map, id, now).ok_or_else(|| StoreError::NotFound {
                session: id.to_owned(),
            })?;
            entry.ttl = Some(ttl);
            entry.session.expires_at = ttl.map(|ttl| now + ttl);
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
            self.locks.lock(id, wait).await
        })
    }
}

/// The position of a session in a list: most recently written first, then by id.
///
/// Written as `<updated_at in µs since the epoch>:<id>`, it is the cursor of the stores that
/// page by position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    /// When the session was last written, in microseconds since the Unix epoch.
    pub updated_micros: i64,
    /// The session's id.
    pub id: String,
}

impl PartialOrd for Cursor {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Cursor {
    /// Most recent first, then by id.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other
            .updated_micros
            .cmp(&self.updated_micros)
            .then_with(|| self.id.cmp(&other.id))
    }
}

impl Cursor {
    /// The position of a session.
    pub fn of(session: &StoredSession) -> Self {
        Self {
            updated_micros: micros(session.updated_at),
            id: session.id.clone(),
        }
    }

    /// Reads a cursor written by [`Cursor::encode`].
    pub fn parse(text: &str) -> Result<Self, StoreError> {
        let bad = || StoreError::InvalidInput {
            what: "cursor",
            reason: format!("{:?} is not a cursor a session list returned", clip(text)),
        };
        let (micros, id) = text.split_once(':').ok_or_else(bad)?;
        Ok(Self {
            updated_micros: micros.parse().map_err(|_| bad())?,
            id: id.to_owned(),
        })
    }

    /// The cursor's text.
    pub fn encode(&self) -> String {
        format!("{}:{}", self.updated_micros, self.id)
    }

    /// The page of `sorted` (sorted by cursor) that follows `after`.
    pub fn page(
        sorted: Vec<(Cursor, SessionInfo)>,
        after: Option<&Cursor>,
        limit: usize,
    ) -> SessionPage {
        let start = after.map_or(0, |after| sorted.partition_point(|(c, _)| c <= after));
        let mut rest = sorted.into_iter().skip(start);
        let sessions: Vec<(Cursor, SessionInfo)> = rest.by_ref().take(limit).collect();
        let next = if rest.next().is_some() {
            sessions.last().map(|(c, _)| c.encode())
        } else {
            None
        };
        SessionPage::new(sessions.into_iter().map(|(_, s)| s).collect(), next)
    }
}

/// At most 80 characters of `text`, for error messages.
fn clip(text: &str) -> &str {
    text.char_indices()
        .nth(80)
        .map_or(text, |(i, _)| &text[..i])
}

/// Microseconds since the Unix epoch (negative before it).
pub fn micros(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_micros()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_micros()).unwrap_or(i64::MAX),
    }
}

/// The time `micros` microseconds after the Unix epoch.
pub fn from_micros(micros: i64) -> SystemTime {
    let d = Duration::from_micros(micros.unsigned_abs());
    if micros >= 0 {
        SystemTime::UNIX_EPOCH + d
    } else {
        SystemTime::UNIX_EPOCH - d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    #[tokio::test]
    async fn lock_entries_go_away_with_their_guards() {
        let locks = SessionLocks::new();
        let held = locks.lock("a", None).await.unwrap();
        assert_eq!(held.session(), "a");
        let err = locks.lock("a", None).await.unwrap_err();
        assert!(
            matches!(err, StoreError::Busy { waited: None, .. }),
            "{err}"
        );
        drop(held);
        assert!(locks.is_empty());
        let again = locks.lock("a", Some(Duration::from_secs(5))).await.unwrap();
        assert_eq!(locks.len(), 1);
        drop(again);
        assert!(locks.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gives_up_after_its_wait() {
        let locks = SessionLocks::new();
        let _held = locks.lock("a", None).await.unwrap();
        let err = locks
            .lock("a", Some(Duration::from_millis(250)))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "session \"a\" is busy: another run on it is in flight (waited 250 ms for it)"
        );
        assert_eq!(locks.len(), 1, "the failed waiter left no entry of its own");
    }

    #[tokio::test(start_paused = true)]
    async fn a_cancelled_waiter_leaves_nothing_behind() {
        let locks = SessionLocks::new();
        let held = locks.lock("a", None).await.unwrap();
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move { locks.lock("a", Some(Duration::from_secs(60))).await })
        };
        tokio::task::yield_now().await;
        waiter.abort();
        assert!(waiter.await.unwrap_err().is_cancelled());
        drop(held);
        assert!(locks.is_empty(), "{:?}", locks);
    }

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = Cursor {
            updated_micros: 1_700_000_000_000_000,
            id: "ses:1".into(),
        };
        assert_eq!(Cursor::parse(&c.encode()).unwrap(), c);
        assert!(Cursor::parse("nope").is_err());
        assert!(Cursor::parse("12x:ses").is_err());
        let t = from_micros(micros(SystemTime::UNIX_EPOCH + Duration::from_micros(42)));
        assert_eq!(micros(t), 42);
    }

    #[tokio::test]
    async fn commits_are_version_checked() {
        let store = MemoryStore::new();
        let changes = Changes::new().append([Message::user("a")]);
        assert_eq!(store.commit("s", Some(0), &changes).await.unwrap(), 1);
        let err = store.commit("s", Some(0), &changes).await.unwrap_err();
        assert!(matches!(
            err,
            StoreError::Conflict {
                expected: 0,
                actual: 1,
                ..
            }
        ));
        let err = store.commit("gone", Some(3), &changes).await.unwrap_err();
        assert!(matches!(err, StoreError::NotFound { .. }), "{err}");
    }
}
