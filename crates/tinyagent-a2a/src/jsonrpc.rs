//! The JSON-RPC endpoint of one tenant: protocol 1.0 through the A2A server crate's own
//! binding, and 0.3's method names translated ([`crate::v03`]) on the same URL.

use std::sync::Arc;

use a2a_server::DefaultRequestHandler;
use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::StatusCode;
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

async fn dispatch(State(endpoint): State<Endpoint>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, a2a_server::jsonrpc::MAX_REQUEST_BODY_BYTES).await
    {
        Ok(bytes) => bytes,
        Err(_) => {
            let error = json!({"jsonrpc": "2.0", "id": null,
                "error": {"code": -32600, "message": "the request body is too large"}});
            return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(error)).into_response();
        }
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
    }
    let request = Request::from_parts(parts, Body::from(bytes));
    let mut v1 = endpoint.v1;
    match tower_service::Service::call(&mut v1, request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}
