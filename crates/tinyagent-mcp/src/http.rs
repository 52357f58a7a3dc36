//! The streamable HTTP endpoint of [`McpServer`](crate::McpServer): rmcp's service behind
//! the checks MCP asks of a server and rmcp leaves out or gets wrong.
//!
//! In order: a foreign `Origin` gets 403 (loopback origins and an allow-list pass), a missing
//! or wrong bearer token gets 401 (when a token is set), a body that is not JSON gets a
//! JSON-RPC parse error (-32700) and JSON that is not a JSON-RPC message an invalid-request
//! error (-32600), both with status 400; ending a session with DELETE answers 200. The rest
//! (hosts, sessions, SSE) is rmcp's.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use crate::McpServer;

/// Who may call the endpoint.
#[derive(Clone, Default)]
pub(crate) struct Access {
    /// Origins allowed besides loopback ones (`scheme://host[:port]`, `*` for any).
    pub origins: Vec<String>,
    /// The bearer token a request must carry, if any.
    pub bearer_token: Option<Arc<str>>,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field("origins", &self.origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .finish()
    }
}

/// A tower service speaking MCP's streamable HTTP transport for an [`McpServer`], from
/// [`McpServer::http_service`]; mount it in an axum router with `nest_service` or
/// `route_service`.
#[derive(Clone)]
pub struct McpHttpService {
    inner: StreamableHttpService<McpServer, LocalSessionManager>,
    access: Arc<Access>,
    max_body_bytes: usize,
}

impl fmt::Debug for McpHttpService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHttpService")
            .field("access", &self.access)
            .finish_non_exhaustive()
    }
}

impl McpHttpService {
    pub(crate) fn new(
        inner: StreamableHttpService<McpServer, LocalSessionManager>,
        access: Access,
        max_body_bytes: usize,
    ) -> Self {
        Self {
            inner,
            access: Arc::new(access),
            max_body_bytes,
        }
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request) -> Response {
        if let Some(origin) = request.headers().get(header::ORIGIN)
            && !origin_allowed(origin, &self.access.origins)
        {
            tracing::warn!(origin = ?origin, "refused an MCP request from a foreign origin");
            return plain(StatusCode::FORBIDDEN, "Forbidden: Origin is not allowed");
        }
        if let Some(token) = &self.access.bearer_token
            && !bearer_matches(request.headers().get(header::AUTHORIZATION), token)
        {
            let mut response = jsonrpc_error(
                StatusCode::UNAUTHORIZED,
                Value::Null,
                -32001,
                "Unauthorized: this MCP endpoint needs a bearer token (Authorization: Bearer …)",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"mcp\""),
            );
            return response;
        }
        let method = request.method().clone();
        let request = if method == Method::POST && is_json(&request) {
            let (parts, body) = request.into_parts();
            let bytes = match axum::body::to_bytes(body, self.max_body_bytes).await {
                Ok(bytes) => bytes,
                Err(_) => {
                    return plain(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        &format!(
                            "Payload Too Large: the request body is over {} bytes (or could not be read)",
                            self.max_body_bytes
                        ),
                    );
                }
            };
            let value = match serde_json::from_slice::<Value>(&bytes) {
                Ok(value) => value,
                Err(e) => {
                    return jsonrpc_error(
                        StatusCode::BAD_REQUEST,
                        Value::Null,
                        -32700,
                        &format!("Parse error: the body is not JSON ({e})"),
                    );
                }
            };
            if serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).is_err() {
                let id = value
                    .get("id")
                    .filter(|id| id.is_string() || id.is_number())
                    .cloned()
                    .unwrap_or(Value::Null);
                return jsonrpc_error(
                    StatusCode::BAD_REQUEST,
                    id,
                    -32600,
                    "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
                );
            }
            Request::from_parts(parts, Body::from(bytes))
        } else {
            request
        };
        let mut response = self.inner.handle(request).await.map(Body::new);
        if method == Method::DELETE && response.status() == StatusCode::ACCEPTED {
            // The session is closed; clients (the Python SDK among them) expect 200 or 204.
            *response.status_mut() = StatusCode::OK;
        }
        response
    }
}

impl tower_service::Service<Request> for McpHttpService {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let this = self.clone();
        Box::pin(async move { Ok(this.handle(request).await) })
    }
}

fn is_json(request: &Request) -> bool {
    request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        })
}

fn plain(status: StatusCode, text: &str) -> Response {
    let mut response = Response::new(Body::from(text.to_owned()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn jsonrpc_error(status: StatusCode, id: Value, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether `Authorization` carries `Bearer token` (compared in constant time).
fn bearer_matches(header: Option<&HeaderValue>, token: &str) -> bool {
    let Some(value) = header.and_then(|h| h.to_str().ok()) else {
        return false;
    };
    let Some((scheme, given)) = value.trim().split_once(' ') else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("bearer") {
        return false;
    }
    let (a, b) = (given.trim().as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a request from `origin` may be served: loopback origins (`http` or `https`, any
/// port) always, others when listed (`scheme://host[:port]`, case-insensitive; `*` allows
/// every origin).
pub(crate) fn origin_allowed(origin: &HeaderValue, allowed: &[String]) -> bool {
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let origin = origin.trim().trim_end_matches('/').to_ascii_lowercase();
    if allowed.iter().any(|a| {
        let a = a.trim().trim_end_matches('/');
        a == "*" || a.eq_ignore_ascii_case(&origin)
    }) {
        return true;
    }
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or_default()
    } else {
        rest.split(':').next().unwrap_or_default()
    };
    host == "localhost"
        || host.ends_with(".localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(origin: &str, list: &[&str]) -> bool {
        let list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        origin_allowed(&HeaderValue::from_str(origin).unwrap(), &list)
    }

    #[test]
    fn loopback_origins_pass_and_foreign_ones_need_listing() {
        assert!(allowed("http://localhost:6274", &[]));
        assert!(allowed("http://127.0.0.1", &[]));
        assert!(allowed("https://[::1]:8443", &[]));
        assert!(allowed("http://app.localhost:3000", &[]));
        assert!(!allowed("http://evil.example.com", &[]));
        assert!(!allowed("http://localhost.evil.example.com", &[]));
        assert!(!allowed("http://127.0.0.1.evil.example.com", &[]));
        assert!(!allowed("null", &[]));
        assert!(!allowed("file://", &[]));
        assert!(allowed(
            "https://App.Example.com",
            &["https://app.example.com/"]
        ));
        assert!(!allowed(
            "https://app.example.com:8443",
            &["https://app.example.com"]
        ));
        assert!(allowed("http://evil.example.com", &["*"]));
    }

    #[test]
    fn bearer_tokens_match_exactly() {
        let h = |v: &str| HeaderValue::from_str(v).unwrap();
        assert!(bearer_matches(Some(&h("Bearer s3cret")), "s3cret"));
        assert!(bearer_matches(Some(&h("bearer  s3cret ")), "s3cret"));
        assert!(!bearer_matches(Some(&h("Bearer s3cre")), "s3cret"));
        assert!(!bearer_matches(Some(&h("Basic s3cret")), "s3cret"));
        assert!(!bearer_matches(None, "s3cret"));
    }
}
