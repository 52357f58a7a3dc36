//! A2A on `serve`: each agent at `POST /a2a/{agent}` (JSON-RPC, protocol 1.0 and 0.3's
//! method names), its card at
//! `GET /a2a/{agent}/.well-known/agent-card.json`, and the first agent's card at
//! `GET /.well-known/agent-card.json` — all behind the API keys, like `/v1/agents`.
//!
//! Each key is a tenant: it has its own tasks (another key's task does not exist for it) and
//! at most [`max_concurrent_per_key`](crate::Server::max_concurrent_per_key) of them running
//! per agent; an A2A context is one of its sessions, under the same history and session
//! limits as the session API, and listed there too.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderMap, Uri, header};
use axum::response::{IntoResponse, Response};
use tinyagent::agent::SessionRunner;
use tinyagent::budget::BudgetResource;
use tinyagent::store::StoreError;
use tinyagent::{Agent, AgentError};
use tinyagent_a2a::{A2aService, TaskCall};

use crate::cost_limit::Spending;
use crate::error::ApiError;
use crate::metered::Metered;
use crate::post::{PostChecks, lock};
use crate::request_id::{REQUEST_ID_HEADER, RequestId};
use crate::scoped::Scoped;
use crate::state::AppState;
use crate::tenancy::Caller;

/// `GET /.well-known/agent-card.json`: the first agent's card.
pub(crate) async fn default_card(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
) -> Response {
    match state.agents.first() {
        Some(agent) => card_of(&state, agent.name(), &headers),
        None => ApiError::not_found("this server has no agent").into_response(),
    }
}

/// `GET /a2a/{agent}/.well-known/agent-card.json`.
pub(crate) async fn card(
    State(state): State<Arc<AppState>>,
    Path(agent): Path<String>,
    headers: HeaderMap,
) -> Response {
    card_of(&state, &agent, &headers)
}

fn card_of(state: &AppState, agent: &str, headers: &HeaderMap) -> Response {
    let Some(served) = state.agent(agent) else {
        return unknown(state, agent).into_response();
    };
    // The Host header passed the server's host rule, so it names this server. Behind a proxy
    // that ends TLS, the proxy's `X-Forwarded-Proto: https` makes the card say so (a client
    // that sends it itself only misleads itself: the card is what it asked for).
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"));
    let scheme = if https { "https" } else { "http" };
    let url = format!("{scheme}://{host}/a2a/{agent}");
    let card = A2aService::new(SessionRunner::new(served.clone(), state.store.clone()))
        .bearer_auth(!state.keys.is_empty())
        .card_json(&url);
    axum::Json(card).into_response()
}

/// `POST /a2a/{agent}`: one JSON-RPC request to the agent, for the caller's tenant.
pub(crate) async fn call(
    State(state): State<Arc<AppState>>,
    axum::Extension(caller): axum::Extension<Caller>,
    Path(agent): Path<String>,
    request: Request,
) -> Response {
    let Some(served) = state.agent(&agent) else {
        return unknown(&state, &agent).into_response();
    };
    let mut router = {
        let mut routers = lock(&state.a2a.routers);
        routers
            .entry((agent.clone(), caller.name.clone()))
            .or_insert_with(|| tenant_router(&state, &caller, served.clone()))
            .clone()
    };
    let (mut parts, body) = request.into_parts();
    parts.uri = Uri::from_static("/");
    // The task's run happens away from this request (the A2A server spawns it): the request's
    // id goes with the call, so that a failure's text and log lines name it. A client's own
    // `x-request-id` is not the server's to trust.
    parts.headers.remove(REQUEST_ID_HEADER);
    if let Some(id) = RequestId::current().and_then(|id| id.header()) {
        parts.headers.insert(REQUEST_ID_HEADER, id);
    }
    // And the request's trace: the task's span continues it.
    tinyagent_otel::inject_context(&mut parts.headers);
    // The A2A router allows larger bodies than this server: the operator's limit holds.
    let body = http_body_util::Limited::new(body, state.limits.max_body_bytes);
    let request = Request::from_parts(parts, axum::body::Body::new(body));
    match tower_service::Service::call(&mut router, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

fn unknown(state: &AppState, agent: &str) -> ApiError {
    ApiError::not_found(format!(
        "no agent named {agent:?}; this server's agents are: {}",
        state.agent_names()
    ))
    .code("agent_not_found")
}

/// The A2A service of one agent for one key: its runs use the key's view of the store, with
/// the limits of a session post, within the key's money, each inside a span of its task
/// (which names the key, and continues the trace of the request that started it).
fn tenant_router(state: &AppState, caller: &Caller, agent: Arc<dyn Agent>) -> Router {
    let store = state.store.clone();
    let scope = caller.tenant_scope();
    let (max_history, max_sessions) = (
        state.tenancy.max_history,
        state.tenancy.max_sessions_per_key,
    );
    let (spending, on_busy, key) = (state.spending.clone(), state.on_busy, caller.name.clone());
    let money = (spending.clone(), key.clone());
    let service = A2aService::from_task_fn(move |call: &TaskCall| {
        let checks = Arc::new(PostChecks {
            max_history,
            max_sessions,
            ..PostChecks::default()
        });
        let view = Scoped::of(store.clone(), scope.clone()).posting(checks);
        let metered = Metered::new(agent.clone(), spending.clone(), key.clone())
            .in_span(task_span(agent.name(), &key, call));
        SessionRunner::new(metered, view)
            .on_busy(on_busy)
            .owner(scope.owner.clone())
            .keep_interrupted(true)
    })
    .max_running(state.limits.max_concurrent_per_key)
    .run_timeout(state.limits.request_timeout)
    .bearer_auth(!state.keys.is_empty())
    .task_error_text(move |err, call| task_error_text(err, call, &money));
    service.jsonrpc_router()
}

/// The span of an A2A task's run: its agent, its key (so that the cost metric counts it for
/// the key) and its request, continuing the request's trace.
fn task_span(agent: &str, key: &str, call: &TaskCall) -> tracing::Span {
    let request_id = call.header(REQUEST_ID_HEADER).unwrap_or_default();
    let span = tracing::info_span!(
        target: "tinyagent_server",
        "a2a_task",
        otel.name = format!("a2a_task {agent}"),
        tinyagent.api_key = key,
        a2a.task.id = call.task_id.as_str(),
        request_id,
    );
    let mut headers = HeaderMap::new();
    for name in ["traceparent", "tracestate"] {
        if let Some(value) = call.header(name).and_then(|v| v.parse().ok()) {
            headers.insert(name, value);
        }
    }
    tinyagent_otel::continue_trace(&span, &headers);
    span
}

/// What a task that failed says, naming the request that started it: its log lines (made
/// here, away from the request) name it too.
fn task_error_text(err: &AgentError, call: &TaskCall, money: &(Arc<Spending>, Arc<str>)) -> String {
    let text = || match (err, money.0.limit) {
        // The key's money ran out: what the other APIs say with their 429.
        (
            AgentError::BudgetExhausted {
                resource: BudgetResource::Cost,
                ..
            },
            Some(limit),
        ) => {
            let wait = money.0.wait(&money.1).unwrap_or_default();
            ApiError::cost_limit(&limit.to_string(), wait, true).message
        }
        _ => error_text(err),
    };
    match call.header(REQUEST_ID_HEADER).and_then(RequestId::parse) {
        Some(id) => {
            let text = id.scope(text);
            // The other APIs say "this request id" beside the id; a task's text has no
            // field for it, so it names the id itself.
            if text.contains("this request id") {
                text.replace("this request id", &format!("request id {id}"))
            } else {
                format!("{text} (request id {id})")
            }
        }
        None => text(),
    }
}

/// What a task that failed says: what the other APIs say, without the server's internals.
fn error_text(err: &AgentError) -> String {
    match err {
        // A limit of this server (a full history, too many conversations): its own words.
        AgentError::Store(store @ StoreError::InvalidInput { .. }) => store.to_string(),
        AgentError::Store(store @ (StoreError::Busy { .. } | StoreError::Conflict { .. })) => {
            store.to_string()
        }
        // Another key's conversation does not exist for this one.
        AgentError::Store(StoreError::NotFound { .. }) => {
            "this contextId is not one of your conversations; leave it out to start one".to_owned()
        }
        AgentError::Store(other) => {
            let request_id = RequestId::current();
            let request_id = request_id.as_ref().map_or("", RequestId::as_str);
            tracing::warn!(
                error = %tinyagent::redact::url(&other.to_string()),
                %request_id,
                "A2A task: the session store failed"
            );
            "the session store is unavailable; try again later".to_owned()
        }
        other => ApiError::from_run(other).message,
    }
}
