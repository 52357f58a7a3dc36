//! The session API: conversations kept in the server's store, each message answered by an
//! agent as a stream of its run's events.
//!
//! - `POST /v1/sessions/{id}/messages` with `{"agent": "name", "input": "text"}`: server-sent
//!   events, one per [`Event`] of the run, `event: <type>` and `data: <the event's JSON>` (its
//!   serde shape); a failure ends the stream with `event: error`. The run's messages are
//!   stored before the `finished` event is sent.
//! - `POST /v1/sessions/{id}/resume` with `{"agent": "name", "decisions": {"call_1":
//!   "approve", "call_2": {"deny": "why"}}}`: resumes a run that paused for approval (its
//!   `paused` event), as the same stream of events. Each decided call is recorded before and
//!   after it runs, so a retried resume never runs a call twice.
//! - `GET /v1/sessions/{id}`: the history and state, and `paused` (the waiting calls) when
//!   its run is paused; `DELETE` removes the session.
//! - `GET /v1/sessions?limit=&cursor=`: the sessions, most recently written first, paged.
//!
//! Every session belongs to the key that created it (see [`crate::tenancy`]), and each key has
//! ids of its own: the routes see the store through a [`Scoped`] view of the caller's tenant, in
//! which another key's `chat-1` is another session. An id this tenant never used is `404`
//! (resuming it too), whoever else uses it. An admin key lists every session (with its owner)
//! and addresses another tenant's with `?owner=NAME`.
//!
//! A post may carry an `Idempotency-Key` header: the run's outcome (its `finished` event) is
//! stored in the same commit as its messages, and a post with the same key to the same
//! session by the same tenant gets that outcome again, as a stream of one `finished` event
//! with the header `Idempotent-Replayed: true`, instead of a second run.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::agent::{Decisions, PAUSED_KEY, PausedRun};
use tinyagent::store::{ListOptions, SessionInfo, SessionStore, StoreError};
use tinyagent::{AgentError, Event};
use tokio::time::Instant;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::ids::checked;
use crate::post::{IDEMPOTENCY_PREFIX, Idempotency, PostChecks, lock};
use crate::scoped::Scoped;
use crate::sse::{self, Step};
use crate::state::AppState;
use crate::tenancy::{Caller, Scope};

/// The longest `Idempotency-Key` accepted, in bytes.
const MAX_IDEMPOTENCY_KEY_LEN: usize = 255;

/// The largest page `GET /v1/sessions` returns.
const MAX_PAGE: usize = 200;

/// A message to post to a session.
#[derive(Debug, Deserialize)]
pub(crate) struct PostMessage {
    /// The agent to answer; may be left out when the server has one agent.
    #[serde(default)]
    agent: Option<String>,
    /// The user's message.
    input: String,
}

/// Decisions that resume a session's paused run.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Resume {
    /// The agent that paused; may be left out when the server has one agent.
    #[serde(default)]
    agent: Option<String>,
    /// A decision for each waiting call, by call id.
    decisions: Decisions,
}

/// How a post starts its run.
enum Start {
    Message(String),
    Resume(Decisions),
}

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn info_json(info: &SessionInfo) -> Value {
    json!({
        "id": info.id,
        // Whose it is: an API key's name; `null` for no owner (a server without keys, an
        // admin key's own).
        "owner": (!info.owner.is_empty()).then_some(&info.owner),
        "version": info.version,
        "message_count": info.message_count,
        "created_at": seconds(info.created_at),
        "updated_at": seconds(info.updated_at),
        "expires_at": info.expires_at.map(seconds),
    })
}

/// The query of the routes of one session: an admin key's `?owner=` (another tenant's).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OwnerQuery {
    #[serde(default)]
    owner: Option<String>,
}

type MaybeQuery<T> = Result<Query<T>, axum::extract::rejection::QueryRejection>;

/// The sessions a request addresses: its caller's tenant, or the one an admin key names.
fn scope_of(caller: &Caller, query: MaybeQuery<OwnerQuery>) -> Result<Scope, ApiError> {
    let Query(query) = query.map_err(|err| ApiError::bad_request(err.body_text()))?;
    caller.scope(query.owner.as_deref())
}

/// The one answer for a session this caller cannot see, whether it never existed or is
/// another key's.
fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("session {id:?} does not exist")).code("session_not_found")
}

fn not_found_as_404(id: &str, err: StoreError) -> ApiError {
    match err {
        StoreError::NotFound { .. } => not_found(id),
        other => other.into(),
    }
}

pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: MaybeQuery<OwnerQuery>,
) -> Result<Response, ApiError> {
    checked(&id)?;
    let store = Scoped::view(&state, &scope_of(&caller, query)?);
    let Some(stored) = store
        .load(&id)
        .await
        .map_err(|e| not_found_as_404(&id, e))?
    else {
        return Err(not_found(&id));
    };
    let mut body = info_json(&stored.info());
    let mut shown = stored.state.clone();
    shown.retain(|key, _| !key.starts_with(IDEMPOTENCY_PREFIX) && key != PAUSED_KEY);
    body["state"] = Value::Object(shown);
    if let Some(Ok(paused)) = PausedRun::from_session(&stored.to_session()) {
        body["paused"] =
            json!({"agent": paused.agent, "steps": paused.steps, "pending": paused.pending()});
    }
    body["messages"] = serde_json::to_value(&stored.messages).map_err(|err| {
        ApiError::internal(format!("the history cannot be written as JSON: {err}"))
    })?;
    Ok(axum::Json(body).into_response())
}

pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: MaybeQuery<OwnerQuery>,
) -> Result<Response, ApiError> {
    checked(&id)?;
    let store = Scoped::view(&state, &scope_of(&caller, query)?);
    if store
        .delete(&id)
        .await
        .map_err(|e| not_found_as_404(&id, e))?
    {
        Ok(axum::Json(json!({"id": id, "object": "session", "deleted": true})).into_response())
    } else {
        Err(not_found(&id))
    }
}

/// The query of `GET /v1/sessions`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
    /// An admin key's: only this tenant's sessions.
    #[serde(default)]
    owner: Option<String>,
}

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let mut options = ListOptions::new().limit(query.limit.unwrap_or(50).min(MAX_PAGE));
    if let Some(cursor) = query.cursor {
        options = options.cursor(cursor);
    }
    let scope = caller.scope(query.owner.as_deref())?;
    let page = Scoped::view(&state, &scope)
        .list(&options)
        .await
        .map_err(|err| ApiError::from(err).param("cursor"))?;
    let data: Vec<Value> = page.sessions.iter().map(info_json).collect();
    // Whose sessions these are: the key's name (never its secret), for the page.
    let key = json!({"name": &*caller.name, "admin": caller.is_admin()});
    Ok(
        axum::Json(json!({"object": "list", "data": data, "next_cursor": page.next, "key": key}))
            .into_response(),
    )
}

pub(crate) async fn post_message(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: MaybeQuery<OwnerQuery>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<PostMessage>,
) -> Result<Response, ApiError> {
    let idempotency_key = idempotency_key(&headers)?;
    let scope = scope_of(&caller, query)?;
    answer(
        state,
        caller,
        scope,
        id,
        body.agent,
        idempotency_key,
        Start::Message(body.input),
    )
    .await
}

pub(crate) async fn resume(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
    query: MaybeQuery<OwnerQuery>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<Resume>,
) -> Result<Response, ApiError> {
    let scope = scope_of(&caller, query)?;
    if headers.contains_key("idempotency-key") {
        return Err(ApiError::bad_request(
            "a resume needs no Idempotency-Key: retrying it never runs a call twice",
        )
        .param("Idempotency-Key"));
    }
    answer(
        state,
        caller,
        scope,
        id,
        body.agent,
        None,
        Start::Resume(body.decisions),
    )
    .await
}

/// Runs an agent on session `id`, from a new message or by resuming its paused run, and
/// streams the run's events.
async fn answer(
    state: Arc<AppState>,
    caller: Caller,
    scope: Scope,
    id: String,
    agent: Option<String>,
    idempotency_key: Option<String>,
    start: Start,
) -> Result<Response, ApiError> {
    let deadline = state.limits.request_timeout.map(|d| Instant::now() + d);
    checked(&id)?;
    state.afford(&caller)?;
    let name = match agent {
        Some(name) => name,
        None if state.agents.len() == 1 => state.agents[0].name().to_owned(),
        None => {
            return Err(ApiError::bad_request(format!(
                "say which agent answers (`agent`): one of {}",
                state.agent_names()
            ))
            .param("agent"));
        }
    };
    let Some(agent) = state.agent(&name) else {
        return Err(ApiError::not_found(format!(
            "no agent named {name:?}; this server's agents are: {}",
            state.agent_names()
        ))
        .param("agent")
        .code("agent_not_found"));
    };
    let checks = Arc::new(PostChecks {
        max_history: state.tenancy.max_history,
        max_sessions: state.tenancy.max_sessions_per_key,
        // A paused run is resumed in a session that exists: an id never used (this tenant's)
        // is not found, as it is for every other route.
        must_exist: matches!(start, Start::Resume(_)),
        idempotency: match (&start, idempotency_key) {
            (Start::Message(input), Some(key)) => Some(Idempotency {
                fingerprint: fingerprint(&name, input),
                key,
            }),
            _ => None,
        },
        ..PostChecks::default()
    });
    let store = Scoped::view(&state, &scope).posting(checks.clone());
    // A run cancelled after its tools started (the client left, the time ran out) keeps what
    // they did, marked interrupted.
    let runner = state.runner(
        state.metered(agent, &caller),
        Arc::new(store),
        scope.owner.clone(),
    );
    let events = match start {
        Start::Message(input) => runner.run(id.clone(), input),
        Start::Resume(decisions) => runner.resume(id.clone(), decisions),
    };
    respond(state, caller, id, checks, sse::until(events, deadline)).await
}

/// The answer of a post whose run is `steps`: an HTTP error when the run fails at once, else
/// its events.
async fn respond(
    state: Arc<AppState>,
    caller: Caller,
    id: String,
    checks: Arc<PostChecks>,
    mut steps: futures::stream::BoxStream<'static, Step>,
) -> Result<Response, ApiError> {
    // The first step comes once the session is held and loaded and the model has answered:
    // an error found within the grace (a busy session that is not waited for, an unreachable
    // store, a limit) is an HTTP error; past it, the headers go out and a later error is an
    // event.
    let first = match tokio::time::timeout(sse::HEADERS_GRACE, steps.next()).await {
        Ok(Some(Step::Event(Err(err)))) => {
            let stop = lock(&checks.stop).take();
            return match (stop, err) {
                (Some(stop), _) => stop.answer(&id),
                (None, AgentError::Store(StoreError::NotFound { .. })) => Err(not_found(&id)),
                (None, err) => Err(state.run_error(err, &caller)),
            };
        }
        Ok(Some(Step::TimedOut)) => {
            return Err(ApiError::new(
                axum::http::StatusCode::GATEWAY_TIMEOUT,
                "timeout_error",
                "the answer did not start within this server's time limit",
            )
            .code("request_timeout"));
        }
        Ok(Some(step)) => Some(step),
        Ok(None) => return Err(ApiError::internal("the run reported nothing").code("no_answer")),
        Err(_) => None,
    };
    let request_id = crate::request_id::RequestId::current();
    let frames = stream::iter(first)
        .chain(steps)
        .inspect(move |step| {
            if let Step::Event(Ok(Event::Usage { step, usage, .. })) = step {
                let mut run = lock(&checks.run);
                run.usage += *usage;
                run.steps = run.steps.max(*step);
            }
        })
        .map(move |step| match step {
            // Only errors name the request; events need no scope (nor a copy of its id).
            Step::Event(Ok(_)) => step_frame(&state, &caller, step),
            step => crate::request_id::in_request(request_id, || step_frame(&state, &caller, step)),
        });
    Ok(sse::response(sse::with_heartbeat(frames, sse::HEARTBEAT)))
}

/// The `Idempotency-Key` header: 1 to 255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else {
        return Ok(None);
    };
    let key = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| {
            !k.is_empty()
                && k.len() <= MAX_IDEMPOTENCY_KEY_LEN
                && k.bytes().all(|b| b.is_ascii_graphic())
        })
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "the Idempotency-Key header must be 1 to {MAX_IDEMPOTENCY_KEY_LEN} visible ASCII characters"
            ))
            .param("Idempotency-Key")
            .code("invalid_idempotency_key")
        })?;
    Ok(Some(key.to_owned()))
}

/// What identifies a post's request, so that a key sent again with another request is
/// caught: FNV-1a (64 bits) of the agent's name and the input.
fn fingerprint(agent: &str, input: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in agent.bytes().chain([0]).chain(input.bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

fn error_frame(err: ApiError) -> Bytes {
    let mut body = err.body();
    body["type"] = json!("error");
    sse::frame(Some("error"), &body.to_string())
}

fn step_frame(state: &AppState, caller: &Caller, step: Step) -> Bytes {
    match step {
        Step::TimedOut => {
            let limit = state
                .limits
                .request_timeout
                .map(|d| format!("{:.1} s", d.as_secs_f64()))
                .unwrap_or_default();
            error_frame(
                ApiError::new(
                    axum::http::StatusCode::GATEWAY_TIMEOUT,
                    "timeout_error",
                    format!(
                        "the answer took longer than this server allows ({limit}) and was \
                         cancelled; of it, only the tool calls that ran were stored, marked \
                         interrupted"
                    ),
                )
                .code("request_timeout"),
            )
        }
        Step::Event(Err(err)) => error_frame(state.run_error(err, caller)),
        Step::Event(Ok(event)) => event_frame(&event),
    }
}

fn event_frame(event: &Event) -> Bytes {
    match serde_json::to_value(event) {
        Ok(value) => {
            let kind = value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("event")
                .to_owned();
            sse::frame(Some(&kind), &value.to_string())
        }
        Err(err) => error_frame(ApiError::internal(format!(
            "an event could not be written as JSON: {err}"
        ))),
    }
}
