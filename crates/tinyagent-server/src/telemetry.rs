//! A span per request (`{METHOD} {route}`, kind server, the HTTP attributes), continuing the
//! caller's trace (`traceparent`) and lasting as long as the answer's body, and `/metrics`.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, http};
use futures::Stream;
use tracing::Instrument;
use tracing::field::Empty;

use crate::error::ApiError;
use crate::state::AppState;
use crate::tenancy::Caller;

/// Runs a request inside its span; the span ends when the answer's body does (a stream's
/// last event), so its duration, and the metrics read off it, cover the whole answer.
pub(crate) async fn trace(request: Request, next: Next) -> Response {
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned());
    let name = match &route {
        Some(route) => format!("{method} {route}"),
        None => method.to_string(),
    };
    let span = tracing::info_span!(
        target: "tinyagent_server",
        "request",
        otel.name = name,
        otel.kind = "server",
        http.request.method = %method,
        http.route = route.as_deref(),
        url.path = %request.uri().path(),
        url.scheme = "http",
        http.response.status_code = Empty,
        tinyagent.stream = Empty,
        tinyagent.api_key = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    tinyagent_otel::continue_trace(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("error.type", status.as_str());
        span.record("otel.status_code", "ERROR");
    }
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if streaming {
        span.record("tinyagent.stream", true);
    }
    let (parts, body) = response.into_parts();
    let body = InSpan {
        inner: Box::pin(body.into_data_stream()),
        span,
    };
    Response::from_parts(parts, Body::from_stream(body))
}

/// An answer's body, read inside its request's span: what its reading does (a stream's run,
/// the store's writes) belongs to the request, and the span ends with the body (an exported
/// span ends when it was last left).
struct InSpan {
    inner: Pin<Box<dyn Stream<Item = Result<Bytes, axum::Error>> + Send>>,
    span: tracing::Span,
}

impl Stream for InSpan {
    type Item = Result<Bytes, axum::Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let span = self.span.clone();
        let _entered = span.enter();
        self.inner.as_mut().poll_next(cx)
    }
}

impl Drop for InSpan {
    fn drop(&mut self) {
        self.span.in_scope(|| {});
    }
}

/// `GET /metrics`: the metrics in the Prometheus text format, for an admin key (on a server
/// without keys, for whoever reaches it, like every route).
pub(crate) async fn metrics(
    State(state): State<Arc<AppState>>,
    Extension(caller): Extension<Caller>,
) -> Response {
    let Some(metrics) = &state.metrics else {
        return ApiError::not_found(
            "this server keeps no metrics (Server::metrics gives it a tinyagent_otel::Prometheus)",
        )
        .code("unknown_url")
        .into_response();
    };
    if !state.keys.is_empty() && !caller.is_admin() {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "permission_error",
            "the metrics are the operator's: ask with an admin key",
        )
        .into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            http::HeaderValue::from_static(tinyagent_otel::Prometheus::CONTENT_TYPE),
        )],
        metrics.render(),
    )
        .into_response()
}
