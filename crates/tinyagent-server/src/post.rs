//! What a post to a session checks when its run loads the session (the limits, the
//! `Idempotency-Key`, that a resumed session exists), why it stops, and the outcome record it
//! stores with its turn.

use std::sync::{Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use futures::stream;
use serde_json::{Value, json};
use tinyagent::store::Changes;
use tinyagent::{Event, Role, Usage};

use crate::error::ApiError;
use crate::sse;

/// The state keys under which idempotency records are kept (hidden from `GET`).
pub(crate) const IDEMPOTENCY_PREFIX: &str = "tinyagent.idempotency.";

/// How many idempotency records a session keeps: the oldest go first.
pub(crate) const MAX_IDEMPOTENCY_RECORDS: usize = 32;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a post checks when its run loads the session (under the session's lock), and what
/// its run has reported so far.
#[derive(Default)]
pub(crate) struct PostChecks {
    pub(crate) max_history: Option<usize>,
    pub(crate) max_sessions: Option<usize>,
    pub(crate) idempotency: Option<Idempotency>,
    /// Whether the session must exist (a resume): a missing one is not found, as another
    /// tenant's is.
    pub(crate) must_exist: bool,
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

    /// What an A2A task that was refused says (the post's own answer says more: its status,
    /// its code).
    pub(crate) fn reason(&self) -> String {
        match self {
            Self::HistoryFull { count, max } => format!(
                ": it holds {count} messages, and this server keeps at most {max} in one \
                 conversation; start a new one"
            ),
            Self::TooManySessions { max } => format!(
                ": this API key has {max} conversations, the most this server keeps for one key"
            ),
            Self::Replay(_) | Self::KeyReused => String::new(),
        }
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl PostChecks {
    /// Checks the idempotency key against the records of the loaded session's `state`, and
    /// keeps the records (to make room for the new one): the stop, if the post must not run.
    pub(crate) fn see_records(&self, state: &tinyagent::store::State) -> Option<Stop> {
        let idempotency = self.idempotency.as_ref()?;
        let key = format!("{IDEMPOTENCY_PREFIX}{}", idempotency.key);
        if let Some(record) = state.get(&key) {
            let same = record.get("fingerprint").and_then(Value::as_str)
                == Some(idempotency.fingerprint.as_str());
            return Some(if same {
                Stop::Replay(record.get("finished").cloned().unwrap_or(Value::Null))
            } else {
                Stop::KeyReused
            });
        }
        lock(&self.run).records = state
            .iter()
            .filter(|(key, _)| key.starts_with(IDEMPOTENCY_PREFIX))
            .map(|(key, record)| {
                let at = record.get("at").and_then(Value::as_u64).unwrap_or(0);
                (key.clone(), at)
            })
            .collect();
        None
    }

    /// `changes` with the idempotency record of the post's run, when it has a key and the
    /// changes are its turn (an interrupted turn is no outcome: a retry runs again).
    pub(crate) fn with_record(&self, changes: Changes) -> Changes {
        let Some(idempotency) = &self.idempotency else {
            return changes;
        };
        let interrupted = changes
            .messages
            .last()
            .is_some_and(|m| m.id.starts_with(tinyagent::agent::INTERRUPTED_PREFIX));
        if changes.messages.is_empty() || interrupted {
            return changes;
        }
        let run = lock(&self.run);
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
        let mut changes = changes;
        for (key, _) in records.into_iter().take(excess) {
            changes = changes.remove(key);
        }
        changes.set(format!("{IDEMPOTENCY_PREFIX}{}", idempotency.key), record)
    }
}
