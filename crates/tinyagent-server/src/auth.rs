//! Bearer-token auth, per-key concurrency and request logs: the middleware in front of the API.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::error::ApiError;
use crate::keys::ANONYMOUS;
use crate::state::AppState;

/// Checks the bearer token and the key's request rate, takes one of the key's concurrency
/// slots for as long as the response (its body included) lasts, tells the handlers who the
/// request is for (a [`Caller`](crate::tenancy::Caller) extension) and logs the request under
/// the key's name, never its secret.
pub(crate) async fn guard(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let (caller, admin) = match authenticate(&state, &request) {
        Ok(found) => found,
        Err(err) => {
            let response = err.into_response();
            log(&method, &path, &response, started, "-");
            return response;
        }
    };
    // The request's span names its key (never the secret): the cost metric counts the runs
    // inside it for the key.
    tracing::Span::current().record("tinyagent.api_key", &*caller);
    if let Err(err) = crate::guard::json_only(&request) {
        let response = err.into_response();
        log(&method, &path, &response, started, &caller);
        return response;
    }
    if let Some(limit) = state.tenancy.rate_limit {
        if let Err(wait) = state.tenancy.limiter.take(&caller, limit) {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            let response = ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!(
                    "too many requests for this API key (at most {limit}); retry in {} s",
                    seconds.max(1)
                ),
            )
            .code("rate_limit_exceeded")
            .retry_after(seconds.max(1))
            .into_response();
            log(&method, &path, &response, started, &caller);
            return response;
        }
    }
    request
        .extensions_mut()
        .insert(state.tenancy.caller(&caller, admin, state.keys.is_empty()));
    let slots = state
        .slots
        .get(&*caller)
        .or_else(|| state.slots.get(ANONYMOUS))
        .cloned();
    let permit = match slots.map(|s| s.try_acquire_owned()) {
        Some(Ok(permit)) => Some(permit),
        Some(Err(_)) => {
            let response = ApiError::new(
                axum::http::StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_error",
                format!(
                    "too many requests in flight for this API key (at most {} at once); \
                     retry when one has finished",
                    state.limits.max_concurrent_per_key
                ),
            )
            .code("concurrency_limit_exceeded")
            .retry_after(1)
            .into_response();
            log(&method, &path, &response, started, &caller);
            return response;
        }
        None => None,
    };
    let response = next.run(request).await;
    log(&method, &path, &response, started, &caller);
    // The slot is held until the body is over: a stream counts for as long as it runs, and
    // its end (or its client leaving) is logged.
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let held = Held {
        _permit: permit,
        stream: streaming.then_some((method, path, caller, started)),
    };
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &held;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(body))
}

/// What a response keeps until its body is over: the concurrency slot, and for a stream what
/// its closing log line says.
struct Held {
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
    stream: Option<(axum::http::Method, String, Arc<str>, Instant)>,
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some((method, path, key, started)) = self.stream.take() {
            let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            tracing::info!(%method, path, duration_ms, key = &*key, "stream ended");
        }
    }
}

/// The name of the request's key, and whether it is an admin key.
fn authenticate(state: &AppState, request: &Request) -> Result<(Arc<str>, bool), ApiError> {
    if state.keys.is_empty() {
        return Ok((state.keys.anonymous.clone(), false));
    }
    let Some(value) = request.headers().get(header::AUTHORIZATION) else {
        return Err(ApiError::unauthorized(true));
    };
    let token = value
        .as_bytes()
        .strip_prefix(b"Bearer ")
        .or_else(|| value.as_bytes().strip_prefix(b"bearer "))
        .map(<[u8]>::trim_ascii)
        .ok_or_else(|| ApiError::unauthorized(false))?;
    state
        .keys
        .find(token)
        .map(|key| (key.name.clone(), key.admin))
        .ok_or_else(|| ApiError::unauthorized(false))
}

fn log(method: &axum::http::Method, path: &str, response: &Response, started: Instant, key: &str) {
    let status = response.status().as_u16();
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    let request_id = crate::request_id::RequestId::current();
    let request_id = request_id.as_ref().map_or("", |id| id.as_str());
    if status >= 500 {
        tracing::warn!(%method, path, status, duration_ms, key, %request_id, "request");
    } else {
        tracing::info!(%method, path, status, duration_ms, key, %request_id, "request");
    }
}

/// Logs a request that needs no key (health checks, the page).
pub(crate) async fn log_open(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = next.run(request).await;
    if path != "/healthz" && path != "/readyz" {
        log(&method, &path, &response, started, "-");
    } else {
        tracing::debug!(%method, path, status = response.status().as_u16(), "health check");
    }
    response
}
