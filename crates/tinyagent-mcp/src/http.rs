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
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

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
    /// The `Host` check of [`McpServer::serve_http`](crate::McpServer::serve_http), which
    /// knows the address each connection arrived at: the listed hosts (`name`, `name:port`,
    /// `*`), the address connected to, and loopback names on a loopback address only. `None`
    /// when mounted elsewhere (rmcp's check applies then).
    pub hosts: Option<Vec<String>>,
}

impl fmt::Debug for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Access")
            .field("origins", &self.origins)
            .field(
                "bearer_token",
                &self.bearer_token.as_ref().map(|_| "<redacted>"),
            )
            .field("hosts", &self.hosts)
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

    /// Checks `Host` against `listed`, the address each connection arrived at and loopback
    /// names on loopback (see [`host_allowed`]); for the accept loop of `serve_http`.
    pub(crate) fn check_hosts(&mut self, listed: Vec<String>) {
        let mut access = (*self.access).clone();
        access.hosts = Some(listed);
        self.access = Arc::new(access);
    }

    /// Answers one request.
    pub async fn handle(&self, request: Request) -> Response {
        if let Some(hosts) = &self.access.hosts {
            let arrival = request.extensions().get::<Arrival>().copied();
            let host = request.headers().get(header::HOST);
            let allowed = match (host, arrival) {
                (None, _) => true,
                (Some(host), Some(arrival)) => host
                    .to_str()
                    .is_ok_and(|host| host_allowed(host, hosts, arrival.local)),
                (Some(_), None) => false,
            };
            if !allowed {
                tracing::warn!(host = ?host, "refused an MCP request naming a foreign Host");
                return plain(StatusCode::FORBIDDEN, "Forbidden: Host is not allowed");
            }
        }
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

/// The local address a connection arrived at, set by the accept loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    pub local: SocketAddr,
}

/// `name[:port]` lower-cased, IPv6 without brackets; `None` when malformed.
fn split_host(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim().to_ascii_lowercase();
    if text.is_empty() || text.contains(['/', '@', ' ']) {
        return None;
    }
    if let Some(v6) = text.strip_prefix('[') {
        let (addr, rest) = v6.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => Some(p.parse().ok()?),
            None if rest.is_empty() => None,
            None => return None,
        };
        return Some((addr.to_owned(), port));
    }
    match text.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') => {
            Some((name.to_owned(), Some(port.parse().ok()?)))
        }
        _ => Some((text, None)),
    }
}

/// Whether `host` may be served on a connection that arrived at `local`: a listed host, the
/// address connected to (with its port), or a loopback name with the right port when that
/// address is loopback — a client off the machine cannot pass by sending `Host: localhost`.
pub(crate) fn host_allowed(host: &str, listed: &[String], local: SocketAddr) -> bool {
    if listed.iter().any(|h| h.trim() == "*") {
        return true;
    }
    let Some((name, port)) = split_host(host) else {
        return false;
    };
    let in_list = listed.iter().any(|entry| match split_host(entry) {
        Some((n, Some(p))) => n == name && Some(p) == port,
        Some((n, None)) => n == name,
        None => false,
    });
    if in_list {
        return true;
    }
    if port.unwrap_or(80) != local.port() {
        return false;
    }
    if let Ok(ip) = name.parse::<IpAddr>() {
        return ip == local.ip() || (ip.is_loopback() && local.ip().is_loopback());
    }
    name == "localhost" && local.ip().is_loopback()
}

/// Limits of the accept loop of [`McpServer::serve_http`](crate::McpServer::serve_http).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub header_timeout: Duration,
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `stop` completes, then lets the requests in flight
/// finish: HTTP/1 connections with a header-read timeout (also bounding idle keep-alive), at
/// most `max_connections` at once (one more gets 503 and is closed), `TCP_NODELAY` on each.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    tokio::pin!(stop);
    loop {
        let (mut tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept an MCP connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = tcp.set_nodelay(true);
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, "refused an MCP connection: as many are open as allowed");
            tokio::spawn(async move {
                let answer = "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\n\
                              retry-after: 1\r\nconnection: close\r\ncontent-length: 19\r\n\r\n\
                              Service Unavailable";
                let _ = tokio::time::timeout(Duration::from_secs(1), async {
                    tcp.write_all(answer.as_bytes()).await?;
                    tcp.shutdown().await
                })
                .await;
            });
            continue;
        };
        let Ok(local) = tcp.local_addr() else {
            continue;
        };
        let arrival = Arrival { local };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(arrival);
            let mut router = router.clone();
            tower_service::Service::call(&mut router, request.map(Body::new))
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(tcp), service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%peer, %error, "MCP connection ended with an error");
            }
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_the_address_connected_to_or_listed_and_localhost_only_on_loopback() {
        let local: SocketAddr = "127.0.0.1:8000".parse().unwrap();
        let public: SocketAddr = "10.0.0.7:8000".parse().unwrap();
        assert!(host_allowed("localhost:8000", &[], local));
        assert!(host_allowed("127.0.0.1:8000", &[], local));
        assert!(host_allowed("[::1]:8000", &[], local));
        assert!(!host_allowed("localhost:9000", &[], local));
        assert!(!host_allowed("evil.example:8000", &[], local));
        assert!(!host_allowed("localhost:8000", &[], public));
        assert!(!host_allowed("localhost", &[], public));
        assert!(!host_allowed("127.0.0.1:8000", &[], public));
        assert!(host_allowed("10.0.0.7:8000", &[], public));
        let listed = vec!["tools.example.com".to_owned()];
        assert!(host_allowed("tools.example.com", &listed, public));
        assert!(host_allowed("tools.example.com:443", &listed, public));
        assert!(host_allowed("anything", &["*".to_owned()], public));
    }

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
