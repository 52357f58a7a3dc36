//! The JSON-RPC endpoint of one tenant: protocol 1.0 through the A2A server crate's own
//! binding, and 0.3's method names translated ([`crate::v03`]) on the same URL.

use std::sync::Arc;

use a2a_server::DefaultRequestHandler;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

#[derive(Clone)]
struct Endpoint {
    handler: Arc<DefaultRequestHandler>,
    v1: Router,
}

/// `POST /`: both protocol versions, for `handler`'s tasks.
pub(crate) fn jsonrpc_router(handler: Arc<DefaultRequestHandler>) -> Router {
    let v1 = a2a_server::jsonrpc::jsonrpc_router(handler.clone());
    Router::new()
        .route("/", post(dispatch))
        .with_state(Endpoint { handler, v1 })
}

fn refuse(status: StatusCode, code: i32, message: &str) -> Response {
    let error = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(error)).into_response()
}

async fn dispatch(State(endpoint): State<Endpoint>, request: Request) -> Response {
    // A page of another site can send a form or `text/plain` without asking first; JSON it
    // cannot, unless the server allows it.
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            -32600,
            "send JSON-RPC with `Content-Type: application/json`",
        );
    }
    let (parts, body) = request.into_parts();
    let max = a2a_server::jsonrpc::MAX_REQUEST_BODY_BYTES;
    let Ok(bytes) = axum::body::to_bytes(body, max).await else {
        return refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            -32600,
            "the request body could not be read whole: it is too large, or it was cut",
        );
    };
    let parsed: Option<Value> = serde_json::from_slice(&bytes).ok();
    let method = parsed
        .as_ref()
        .and_then(|v| v.get("method"))
        .and_then(Value::as_str);
    if let (Some(method), Some(request)) = (method, &parsed) {
        if crate::v03::METHODS.contains(&method) {
            return crate::v03::handle(&endpoint.handler, &parts.headers, request.clone()).await;
        }
        // A task that asks for push notifications would be stored before the handler says it
        // cannot have them, and then wait forever: refused first.
        let push = request
            .pointer("/params/configuration/taskPushNotificationConfig")
            .is_some_and(|c| !c.is_null());
        if push {
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32003,
                "message": "push notifications are not supported by this agent"}});
            return axum::Json(error).into_response();
        }
    }
    let request = Request::from_parts(parts, Body::from(bytes));
    let mut v1 = endpoint.v1;
    match tower_service::Service::call(&mut v1, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
