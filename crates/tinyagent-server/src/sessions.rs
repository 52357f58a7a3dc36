//! The session API: conversations kept in the server's store, each message answered by an
//! agent as a stream of its run's events.
//!
//! - `POST /v1/sessions/{id}/messages` with `{"agent": "name", "input": "text"}`: server-sent
//!   events, one per [`Event`] of the run, `event: <type>` and `data: <the event's JSON>` (its
//!   serde shape); a failure ends the stream with `event: error`. The run's messages are
//!   stored before the `finished` event is sent.
//! - `GET /v1/sessions/{id}`: the history and state; `DELETE` removes the session.
//! - `GET /v1/sessions?limit=&cursor=`: the sessions, most recently written first, paged.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::Event;
use tinyagent::store::{ListOptions, SessionInfo, check_session_id};
use tokio::time::Instant;

use crate::error::ApiError;
use crate::routes::ApiJson;
use crate::server::AppState;
use crate::sse::{self, Step};

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

fn seconds(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn info_json(info: &SessionInfo) -> Value {
    json!({
        "id": info.id,
        "version": info.version,
        "message_count": info.message_count,
        "created_at": seconds(info.created_at),
        "updated_at": seconds(info.updated_at),
        "expires_at": info.expires_at.map(seconds),
    })
}

fn checked(id: &str) -> Result<(), ApiError> {
    check_session_id(id).map_err(|err| ApiError::from(err).param("id"))
}

pub(crate) async fn show(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    checked(&id)?;
    let Some(stored) = state.store.load(&id).await? else {
        return Err(
            ApiError::not_found(format!("session {id:?} does not exist")).code("session_not_found"),
        );
    };
    let mut body = info_json(&stored.info());
    body["state"] = Value::Object(stored.state.clone());
    body["messages"] = serde_json::to_value(&stored.messages).map_err(|err| {
        ApiError::internal(format!("the history cannot be written as JSON: {err}"))
    })?;
    Ok(axum::Json(body).into_response())
}

pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    checked(&id)?;
    if state.store.delete(&id).await? {
        Ok(axum::Json(json!({"id": id, "object": "session", "deleted": true})).into_response())
    } else {
        Err(ApiError::not_found(format!("session {id:?} does not exist")).code("session_not_found"))
    }
}

/// The query of `GET /v1/sessions`.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    cursor: Option<String>,
}

pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|err| ApiError::bad_request(err.body_text()))?;
    let mut options = ListOptions::new().limit(query.limit.unwrap_or(50).min(MAX_PAGE));
    if let Some(cursor) = query.cursor {
        options = options.cursor(cursor);
    }
    let page = state
        .store
        .list(&options)
        .await
        .map_err(|err| ApiError::from(err).param("cursor"))?;
    let data: Vec<Value> = page.sessions.iter().map(info_json).collect();
    Ok(
        axum::Json(json!({"object": "list", "data": data, "next_cursor": page.next}))
            .into_response(),
    )
}

pub(crate) async fn post_message(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PostMessage>,
) -> Result<Response, ApiError> {
    let deadline = state.limits.request_timeout.map(|d| Instant::now() + d);
    checked(&id)?;
    let name = match body.agent {
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
    let Some(runner) = state.runners.get(&name) else {
        return Err(ApiError::not_found(format!(
            "no agent named {name:?}; this server's agents are: {}",
            state.agent_names()
        ))
        .param("agent")
        .code("agent_not_found"));
    };
    let mut steps = sse::until(runner.run(id, body.input), deadline);
    // The first step comes once the session is held and loaded and the model has answered:
    // an error found within the grace (a busy session that is not waited for, an unreachable
    // store) is an HTTP error; past it, the headers go out and a later error is an event.
    let first = match tokio::time::timeout(sse::HEADERS_GRACE, steps.next()).await {
        Ok(Some(Step::Event(Err(err)))) => return Err(err.into()),
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
    let request_id = crate::guard::current_request_id();
    let frames = stream::iter(first)
        .chain(steps)
        .map(move |step| crate::guard::in_request(&request_id, || step_frame(&state, step)));
    Ok(sse::response(sse::with_heartbeat(frames, sse::HEARTBEAT)))
}

fn error_frame(err: ApiError) -> Bytes {
    let mut body = err.body();
    body["type"] = json!("error");
    sse::frame(Some("error"), &body.to_string())
}

fn step_frame(state: &AppState, step: Step) -> Bytes {
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
                         cancelled; nothing of it was stored"
                    ),
                )
                .code("request_timeout"),
            )
        }
        Step::Event(Err(err)) => error_frame(err.into()),
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
