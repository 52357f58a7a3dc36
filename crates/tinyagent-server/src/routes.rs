//! The router: which path goes to which handler, behind which middleware.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde::de::DeserializeOwned;
use serde_json::json;
use tinyagent::store::ListOptions;

use crate::auth;
use crate::error::ApiError;
use crate::server::AppState;
use crate::{chat, sessions};

/// How long `/readyz` waits for the store.
const READY_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub(crate) fn router(state: Arc<AppState>) -> Router {
    let api = Router::new()
        .route("/v1/chat/completions", post(chat::completions))
        .route("/v1/models", get(models))
        .route("/v1/agents", get(agents))
        .route("/v1/sessions", get(sessions::list))
        .route(
            "/v1/sessions/{id}",
            get(sessions::show).delete(sessions::delete),
        )
        .route("/v1/sessions/{id}/messages", post(sessions::post_message))
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
        [(header::CACHE_CONTROL, "no-cache")],
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

/// A JSON body, rejected in OpenAI's error shape: `413` past the size limit, `408` when it
/// does not arrive in time, `400` naming what is wrong (and where) otherwise.
pub(crate) struct ApiJson<T>(pub(crate) T);

impl<T: DeserializeOwned> FromRequest<Arc<AppState>> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let limit = state.limits.body_timeout;
        let read = tokio::time::timeout(limit, Bytes::from_request(req, state));
        let bytes = read.await.map_err(|_| {
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request_error",
                format!(
                    "the request body did not arrive within {:.1} s",
                    limit.as_secs_f64()
                ),
            )
            .code("request_timeout")
        })?;
        let bytes = bytes.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "invalid_request_error",
                    "the request body is larger than this server accepts",
                )
                .code("request_too_large")
            } else {
                ApiError::bad_request("the request body could not be read")
            }
        })?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
            let at = err.path().to_string();
            let message = if at == "." {
                format!("the request body is not valid: {}", err.inner())
            } else {
                format!("the request body is not valid at `{at}`: {}", err.inner())
            };
            ApiError::bad_request(message).code("invalid_request_body")
        })?;
        de.end().map_err(|err| {
            ApiError::bad_request(format!("the request body is not valid: {err}"))
                .code("invalid_request_body")
        })?;
        Ok(Self(value))
    }
}
