//! [`Scoped`]: the server's store as one request sees it — one tenant's sessions, under the
//! ids that tenant uses — with what a post checks when its run loads the session.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tinyagent::BoxFuture;
use tinyagent::store::{
    Changes, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession,
};

use crate::namespace;
use crate::post::{PostChecks, Stop, lock};
use crate::state::AppState;
use crate::tenancy::Scope;

/// The server's store as one request sees it: the sessions of one tenant (its
/// [`Scope`]'s owner), under that tenant's ids ([`crate::namespace`]): another tenant's
/// `chat-1` is another session, never this one. What it creates belongs to the tenant; an
/// admin key's list may show every tenant's sessions. A post's view also checks the limits
/// and the idempotency key when its run loads the session.
///
/// Every id is mapped to its store key before the store is touched — the lock included — so
/// a request never loads, waits for or holds another tenant's session.
pub(crate) struct Scoped {
    inner: Arc<dyn SessionStore>,
    scope: Scope,
    post: Option<Arc<PostChecks>>,
    /// The store key each id of this request was found under.
    keys: Mutex<Vec<(String, String)>>,
}

impl Scoped {
    pub(crate) fn view(state: &AppState, scope: &Scope) -> Self {
        Self::of(state.store.clone(), scope.clone())
    }

    /// The store `inner` as `scope` sees it.
    pub(crate) fn of(inner: Arc<dyn SessionStore>, scope: Scope) -> Self {
        Self {
            inner,
            scope,
            post: None,
            keys: Mutex::default(),
        }
    }

    pub(crate) fn posting(mut self, checks: Arc<PostChecks>) -> Self {
        self.post = Some(checks);
        self
    }

    fn mine(&self, session: &StoredSession) -> bool {
        *session.owner == *self.scope.owner
    }

    fn not_found(id: &str) -> StoreError {
        StoreError::NotFound {
            session: id.to_owned(),
        }
    }

    /// The store key of `id`: the tenant's own key, or the bare id of a session this tenant
    /// stored before ids were per tenant (looked up first, so such sessions keep working).
    async fn key_of(&self, id: &str) -> Result<String, StoreError> {
        crate::ids::check_id(id)?;
        let owner = &*self.scope.owner;
        if owner.is_empty() {
            return Ok(id.to_owned());
        }
        if let Some((_, key)) = lock(&self.keys).iter().find(|(i, _)| i == id) {
            return Ok(key.clone());
        }
        let stored_before = match self.inner.load(id).await {
            Ok(found) => found.is_some_and(|s| *s.owner == *owner),
            Err(err @ StoreError::Backend { .. }) => return Err(err),
            // A bare id that does not read back is nobody's usable session.
            Err(_) => false,
        };
        let key = if stored_before {
            id.to_owned()
        } else {
            namespace::store_key(owner, id)
        };
        lock(&self.keys).push((id.to_owned(), key.clone()));
        Ok(key)
    }

    /// `err` as the client knows the session: by its id, not its store key.
    fn as_client(err: StoreError, id: &str) -> StoreError {
        let mut err = err;
        if let StoreError::NotFound { session }
        | StoreError::Busy { session, .. }
        | StoreError::Conflict { session, .. }
        | StoreError::AlreadyExists { session }
        | StoreError::Corrupt { session, .. } = &mut err
        {
            id.clone_into(session);
        }
        err
    }

    fn stop(&self, id: &str, stop: Stop) -> StoreError {
        let reason = format!("the message to session {id:?} was refused{}", stop.reason());
        if let Some(post) = &self.post {
            *lock(&post.stop) = Some(stop);
        }
        StoreError::InvalidInput {
            what: "session",
            reason,
        }
    }

    async fn load_checked(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let key = self.key_of(id).await?;
        let Some(mut session) = self.inner.load(&key).await? else {
            if let Some(post) = &self.post {
                if post.must_exist {
                    return Err(Self::not_found(id));
                }
                if let (Some(max), true) = (post.max_sessions, self.scope.capped) {
                    let options = ListOptions::new().limit(max).owner(&*self.scope.owner);
                    if self.inner.list(&options).await?.sessions.len() >= max {
                        return Err(self.stop(id, Stop::TooManySessions { max }));
                    }
                }
            }
            return Ok(None);
        };
        if !self.mine(&session) {
            return Err(Self::not_found(id));
        }
        id.clone_into(&mut session.id);
        let Some(post) = &self.post else {
            return Ok(Some(session));
        };
        if let Some(stop) = post.see_records(&session.state) {
            return Err(self.stop(id, stop));
        }
        if let Some(max) = post.max_history {
            let count = session.messages.len();
            if count >= max {
                return Err(self.stop(id, Stop::HistoryFull { count, max }));
            }
        }
        Ok(Some(session))
    }

    /// The changes as this tenant writes them: for its owner (so that the store refuses a
    /// session of another), with the idempotency record of a post's run. Borrowed when they
    /// are so already: a turn's messages are not copied.
    fn scoped_changes<'c>(&self, changes: &'c Changes) -> Cow<'c, Changes> {
        let mut changes = Cow::Borrowed(changes);
        if changes.owner.as_deref() != Some(&*self.scope.owner) {
            changes.to_mut().owner = Some(self.scope.owner.to_string());
        }
        match &self.post {
            Some(post) if post.idempotency.is_some() && !changes.messages.is_empty() => {
                Cow::Owned(post.with_record(changes.into_owned()))
            }
            _ => changes,
        }
    }

    /// The session under `key` if it is this tenant's.
    async fn own(&self, key: &str) -> Result<bool, StoreError> {
        Ok(self
            .inner
            .load(key)
            .await?
            .is_some_and(|session| self.mine(&session)))
    }
}

impl SessionStore for Scoped {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        Box::pin(async move {
            self.load_checked(id)
                .await
                .map_err(|e| Self::as_client(e, id))
        })
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        Box::pin(async move {
            let key = self.key_of(id).await?;
            if self.inner.load(&key).await?.is_some() {
                return Err(StoreError::AlreadyExists {
                    session: id.to_owned(),
                });
            }
            let empty = Changes::new();
            let changes = self.scoped_changes(&empty);
            self.inner
                .commit(&key, Some(0), &changes)
                .await
                .map_err(|e| Self::as_client(e, id))?;
            let session = self.inner.load(&key).await?.ok_or(Self::not_found(id))?;
            let mut info = session.info();
            info.id = id.to_owned();
            Ok(info)
        })
    }

    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let key = self.key_of(id).await?;
            let changes = self.scoped_changes(changes);
            self.inner
                .commit(&key, expected, &changes)
                .await
                .map_err(|e| Self::as_client(e, id))
        })
    }

    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        Box::pin(async move {
            let mut page = if self.scope.everyone {
                self.inner.list(options).await?
            } else {
                let options = options.clone().owner(&*self.scope.owner);
                self.inner.list(&options).await?
            };
            for info in &mut page.sessions {
                info.id = namespace::client_id(&info.id, &info.owner);
            }
            Ok(page)
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            let key = self.key_of(id).await?;
            if !self.own(&key).await? {
                return Ok(false);
            }
            self.inner.delete(&key).await
        })
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let key = self.key_of(id).await?;
            if !self.own(&key).await? {
                return Err(Self::not_found(id));
            }
            self.inner
                .set_ttl(&key, ttl)
                .await
                .map_err(|e| Self::as_client(e, id))
        })
    }

    fn is_durable(&self) -> bool {
        self.inner.is_durable()
    }

    fn lock<'a>(
        &'a self,
        id: &'a str,
        wait: Option<Duration>,
    ) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
        // The key is this tenant's (another tenant's session has another key): a request
        // never waits for, nor takes, the lock of a session that is not its tenant's.
        Box::pin(async move {
            let key = self.key_of(id).await?;
            self.inner
                .lock(&key, wait)
                .await
                .map_err(|e| Self::as_client(e, id))
        })
    }
}
