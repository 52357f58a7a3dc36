//! The router: which path goes to which handler, behind which middleware.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use tinyagent::store::ListOptions;

use crate::auth;
use crate::error::ApiError;
use crate::state::AppState;
use crate::{a2a, chat, sessions};

/// How long `/readyz` waits for the store.
const READY_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/responses", post(crate::responses::create))
        .route("/v1/models", get(models))
        .route("/v1/agents", get(agents))
        .route("/v1/sessions", get(sessions::list))
        .route(
            "/v1/sessions/{id}",
            get(sessions::show).delete(sessions::delete),
        )
        .route("/v1/sessions/{id}/messages", post(sessions::post_message))
        .route("/v1/sessions/{id}/resume", post(sessions::resume))
        .route("/a2a/{agent}", post(a2a::call))
        .route("/a2a/{agent}/.well-known/agent-card.json", get(a2a::card))
        .route("/.well-known/agent-card.json", get(a2a::default_card))
        .route("/metrics", get(crate::telemetry::metrics))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), auth::guard));
    let mut open = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz));
    if state.page {
        open = open.route("/", get(page));
    }
    open.layer(middleware::from_fn(auth::log_open))
        .merge(api)
        .layer(DefaultBodyLimit::max(state.limits.max_body_bytes))
        .layer(middleware::from_fn(crate::telemetry::trace))
        .with_state(state)
}

async fn healthz() -> Response {
    axum::Json(json!({"status": "ok"})).into_response()
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    if state.draining.load(Ordering::SeqCst) {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "shutting_down"})),
        )
            .into_response();
    }
    let options = ListOptions::new().limit(1);
    let probe = state.store.list(&options);
    match tokio::time::timeout(READY_PROBE_TIMEOUT, probe).await {
        Ok(Ok(_)) => axum::Json(json!({"status": "ready"})).into_response(),
        Ok(Err(err)) => {
            tracing::warn!(error = %err, "readiness probe: the session store failed");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                axum::Json(json!({"status": "store_unavailable"})),
            )
                .into_response()
        }
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(json!({"status": "store_timeout"})),
        )
            .into_response(),
    }
}

async fn page() -> Response {
    (
        [
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                crate::page::PAGE_CSP.as_str(),
            ),
        ],
        Html(crate::page::INDEX_HTML),
    )
        .into_response()
}

async fn agents(State(state): State<Arc<AppState>>) -> Response {
    let data: Vec<_> = state
        .agents
        .iter()
        .map(|a| json!({"name": a.name(), "description": a.description()}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

/// The agents as OpenAI models, for clients that list models first.
async fn models(State(state): State<Arc<AppState>>) -> Response {
    let data: Vec<_> = state
        .agents
        .iter()
        .map(|a| json!({"id": a.name(), "object": "model", "created": 0, "owned_by": "tinyagent"}))
        .collect();
    axum::Json(json!({"object": "list", "data": data})).into_response()
}

async fn not_found(request: Request) -> ApiError {
    ApiError::not_found(format!(
        "no route for {} {}",
        request.method(),
        request.uri().path()
    ))
    .code("unknown_url")
}
