//! [`Scoped`]: the server's store as one caller sees it (only its own sessions), and what a
//! post checks when its run loads the session: the limits and the `Idempotency-Key`.

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use futures::stream;
use serde_json::{Value, json};
use tinyagent::store::{
    Changes, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
    StoredSession,
};
use tinyagent::{BoxFuture, Event, Role, Usage};

use crate::error::ApiError;
use crate::sse;
use crate::state::AppState;
use crate::tenancy::Caller;

/// The state keys under which idempotency records are kept (hidden from `GET`).
pub(crate) const IDEMPOTENCY_PREFIX: &str = "tinyagent.idempotency.";

/// How many idempotency records a session keeps: the oldest go first.
pub(crate) const MAX_IDEMPOTENCY_RECORDS: usize = 32;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a post checks when its run loads the session (under the session's lock), and what
/// its run has reported so far.
pub(crate) struct PostChecks {
    pub(crate) max_history: Option<usize>,
    pub(crate) max_sessions: Option<usize>,
    pub(crate) idempotency: Option<Idempotency>,
    /// Why the run was stopped before it started, if it was.
    pub(crate) stop: Mutex<Option<Stop>>,
    pub(crate) run: Mutex<RunSoFar>,
}

pub(crate) struct Idempotency {
    pub(crate) key: String,
    pub(crate) fingerprint: String,
}

#[derive(Default)]
pub(crate) struct RunSoFar {
    pub(crate) usage: Usage,
    pub(crate) steps: usize,
    /// The session's idempotency records when it was loaded: key and when written.
    pub(crate) records: Vec<(String, u64)>,
}

/// Why a post does not run.
pub(crate) enum Stop {
    HistoryFull {
        count: usize,
        max: usize,
    },
    TooManySessions {
        max: usize,
    },
    /// The outcome stored under the post's idempotency key: its `finished` event.
    Replay(Value),
    /// The idempotency key was used for another request.
    KeyReused,
}

impl Stop {
    pub(crate) fn answer(self, id: &str) -> Result<Response, ApiError> {
        match self {
            Self::HistoryFull { count, max } => Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request_error",
                format!(
                    "session {id:?} holds {count} messages, and this server keeps at most {max} \
                         in one session: start a new session (or delete this one)"
                ),
            )
            .code("history_too_long")),
            Self::TooManySessions { max } => Err(ApiError::new(
                StatusCode::CONFLICT,
                "invalid_request_error",
                format!(
                    "this API key has {max} sessions, the most this server keeps for one key: \
                         delete one (DELETE /v1/sessions/ID) before starting another"
                ),
            )
            .code("too_many_sessions")),
            Self::KeyReused => Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request_error",
                "this Idempotency-Key was already used on this session for another request; \
                     use a new key for a new message",
            )
            .param("Idempotency-Key")
            .code("idempotency_key_reused")),
            Self::Replay(finished) => {
                let kind = finished
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("finished")
                    .to_owned();
                let frame = sse::frame(Some(&kind), &finished.to_string());
                let mut response = sse::response(stream::once(async move { frame }));
                response
                    .headers_mut()
                    .insert("idempotent-replayed", HeaderValue::from_static("true"));
                Ok(response)
            }
        }
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The server's store as one caller sees it: for a key, only its own sessions (another key's
/// session does not exist: `load` and `commit` answer [`StoreError::NotFound`], lists leave it
/// out, `delete` does nothing), and the sessions it creates are its own; for an admin key,
/// every session. A post's view also checks the limits and the idempotency key when its run
/// loads the session.
pub(crate) struct Scoped {
    inner: Arc<dyn SessionStore>,
    owner: Option<Arc<str>>,
    post: Option<Arc<PostChecks>>,
}

impl Scoped {
    pub(crate) fn view(state: &AppState, caller: &Caller) -> Self {
        Self::of(state.store.clone(), caller.owner.clone())
    }

    /// The store `inner` as the owner `owner` sees it (`None`: every session).
    pub(crate) fn of(inner: Arc<dyn SessionStore>, owner: Option<Arc<str>>) -> Self {
        Self {
            inner,
            owner,
            post: None,
        }
    }

    pub(crate) fn posting(mut self, checks: Arc<PostChecks>) -> Self {
        self.post = Some(checks);
        self
    }

    fn mine(&self, session: &StoredSession) -> bool {
        self.owner.as_deref().is_none_or(|o| *o == *session.owner)
    }

    fn stop(&self, id: &str, stop: Stop) -> StoreError {
        // The post's own answer says more (its status, its code); an A2A task reads this.
        let why = match &stop {
            Stop::HistoryFull { count, max } => format!(
                ": it holds {count} messages, and this server keeps at most {max} in one \
                 conversation; start a new one"
            ),
            Stop::TooManySessions { max } => format!(
                ": this API key has {max} conversations, the most this server keeps for one key"
            ),
            Stop::Replay(_) | Stop::KeyReused => String::new(),
        };
        if let Some(post) = &self.post {
            *lock(&post.stop) = Some(stop);
        }
        StoreError::InvalidInput {
            what: "session",
            reason: format!("the message to session {id:?} was refused{why}"),
        }
    }

    async fn load_checked(&self, id: &str) -> Result<Option<StoredSession>, StoreError> {
        let Some(session) = self.inner.load(id).await? else {
            if let (Some(post), Some(owner)) = (&self.post, &self.owner) {
                if let Some(max) = post.max_sessions {
                    let options = ListOptions::new().limit(max).owner(&**owner);
                    if self.inner.list(&options).await?.sessions.len() >= max {
                        return Err(self.stop(id, Stop::TooManySessions { max }));
                    }
                }
            }
            return Ok(None);
        };
        if !self.mine(&session) {
            return Err(StoreError::NotFound {
                session: id.to_owned(),
            });
        }
        let Some(post) = &self.post else {
            return Ok(Some(session));
        };
        if let Some(idempotency) = &post.idempotency {
            let key = format!("{IDEMPOTENCY_PREFIX}{}", idempotency.key);
            if let Some(record) = session.state.get(&key) {
                let stop = if record.get("fingerprint").and_then(Value::as_str)
                    == Some(idempotency.fingerprint.as_str())
                {
                    Stop::Replay(record.get("finished").cloned().unwrap_or(Value::Null))
                } else {
                    Stop::KeyReused
                };
                return Err(self.stop(id, stop));
            }
            lock(&post.run).records = session
                .state
                .iter()
                .filter(|(key, _)| key.starts_with(IDEMPOTENCY_PREFIX))
                .map(|(key, record)| {
                    let at = record.get("at").and_then(Value::as_u64).unwrap_or(0);
                    (key.clone(), at)
                })
                .collect();
        }
        if let Some(max) = post.max_history {
            let count = session.messages.len();
            if count >= max {
                return Err(self.stop(id, Stop::HistoryFull { count, max }));
            }
        }
        Ok(Some(session))
    }

    /// The changes as this caller writes them: for its owner, with the idempotency record of
    /// a post's run. Borrowed when they are so already (a runner made for the owner, no
    /// record to add): a turn's messages are not copied.
    fn scoped_changes<'c>(&self, changes: &'c Changes) -> Cow<'c, Changes> {
        let mut changes = Cow::Borrowed(changes);
        if let Some(owner) = &self.owner {
            if changes.owner.as_deref() != Some(&**owner) {
                changes.to_mut().owner = Some(owner.to_string());
            }
        }
        let Some(post) = &self.post else {
            return changes;
        };
        let (Some(idempotency), false) = (&post.idempotency, changes.messages.is_empty()) else {
            return changes;
        };
        // An interrupted turn is no outcome: a retry runs again.
        let interrupted = changes
            .messages
            .last()
            .is_some_and(|m| m.id.starts_with(tinyagent::agent::INTERRUPTED_PREFIX));
        if interrupted {
            return changes;
        }
        let run = lock(&post.run);
        let answer = changes
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map(|m| m.text())
            .unwrap_or_default();
        let finished = Event::Finished {
            answer,
            usage: run.usage,
            steps: run.steps,
        };
        let record = json!({
            "fingerprint": idempotency.fingerprint,
            "at": now_seconds(),
            "finished": serde_json::to_value(&finished).unwrap_or(Value::Null),
        });
        // Room for the new record: the oldest go.
        let mut records = run.records.clone();
        drop(run);
        records.sort_by_key(|(key, at)| (*at, key.clone()));
        let excess = (records.len() + 1).saturating_sub(MAX_IDEMPOTENCY_RECORDS);
        let mut changes = changes.into_owned();
        for (key, _) in records.into_iter().take(excess) {
            changes = changes.remove(key);
        }
        Cow::Owned(changes.set(format!("{IDEMPOTENCY_PREFIX}{}", idempotency.key), record))
    }
}

impl SessionStore for Scoped {
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
        Box::pin(self.load_checked(id))
    }

    fn create<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
        Box::pin(async move {
            if self.owner.is_none() {
                return self.inner.create(id).await;
            }
            if self.inner.load(id).await?.is_some() {
                return Err(StoreError::AlreadyExists {
                    session: id.to_owned(),
                });
            }
            let empty = Changes::new();
            let changes = self.scoped_changes(&empty);
            self.inner.commit(id, Some(0), &changes).await?;
            let session = self.inner.load(id).await?.ok_or(StoreError::NotFound {
                session: id.to_owned(),
            })?;
            Ok(session.info())
        })
    }

    fn commit<'a>(
        &'a self,
        id: &'a str,
        expected: Option<u64>,
        changes: &'a Changes,
    ) -> BoxFuture<'a, Result<u64, StoreError>> {
        Box::pin(async move {
            let changes = self.scoped_changes(changes);
            self.inner.commit(id, expected, &changes).await
        })
    }

    fn list<'a>(
        &'a self,
        options: &'a ListOptions,
    ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
        Box::pin(async move {
            match &self.owner {
                Some(owner) => self.inner.list(&options.clone().owner(&**owner)).await,
                None => self.inner.list(options).await,
            }
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
        Box::pin(async move {
            if self.owner.is_some() {
                match self.inner.load(id).await? {
                    Some(session) if self.mine(&session) => {}
                    _ => return Ok(false),
                }
            }
            self.inner.delete(id).await
        })
    }

    fn set_ttl<'a>(
        &'a self,
        id: &'a str,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            match self.inner.load(id).await? {
                Some(session) if self.mine(&session) => self.inner.set_ttl(id, ttl).await,
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
        Box::pin(async move {
            // Waiting for another key's busy session would tell that it exists (and when it is
            // in use): a held session is waited for only by its owner; anyone else gets the
            // answer of an id never used, at once.
            if self.owner.is_none() || wait.is_none() {
                return self.inner.lock(id, wait).await;
            }
            match self.inner.lock(id, None).await {
                Err(StoreError::Busy { .. }) => match self.inner.load(id).await? {
                    Some(session) if self.mine(&session) => self.inner.lock(id, wait).await,
                    _ => Err(StoreError::NotFound {
                        session: id.to_owned(),
                    }),
                },
                taken => taken,
            }
        })
    }
}
