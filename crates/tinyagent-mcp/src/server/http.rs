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
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use tinyagent_http::serve::{Arrival, host_allowed, is_loopback_name};
use tokio_util::sync::CancellationToken;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use serde_json::{Value, json};

use super::errors::McpServeError;
use super::{Access, McpServer};

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
    is_loopback_name(host)
}

/// The path [`McpServer::serve_http`] serves MCP under.
pub const MCP_HTTP_PATH: &str = "/mcp";

impl McpServer {
    /// Browser origins allowed to call the HTTP endpoint besides loopback ones, such as
    /// `https://app.example.com` or `http://intranet:8080` (`scheme://host[:port]`; `*`
    /// allows every origin). A request with any other `Origin` header gets 403, as MCP
    /// requires against DNS rebinding; requests without `Origin` (non-browser clients) pass.
    ///
    /// ```
    /// use tinyagent_mcp::McpServer;
    ///
    /// let server = McpServer::new(tinyagent_demo::all_tools())
    ///     .allowed_origins(["https://app.example.com"]);
    /// ```
    #[must_use]
    pub fn allowed_origins(self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let origins: Vec<String> = origins.into_iter().map(Into::into).collect();
        self.configure(|inner| inner.access.origins = origins)
    }

    /// Host names (or `host:port`; `*` for any) the HTTP endpoint answers to. Requests naming
    /// another `Host` get 403. By default, [`serve_http`](Self::serve_http) answers the
    /// address a client connected to and, only on a loopback address, `localhost` (with the
    /// right port); [`http_service`](Self::http_service) answers loopback names. Set this
    /// when clients reach the server under a name.
    #[must_use]
    pub fn allowed_hosts(self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let hosts: Vec<String> = hosts.into_iter().map(Into::into).collect();
        self.configure(|inner| inner.allowed_hosts = Some(hosts))
    }

    /// Requires `Authorization: Bearer TOKEN` on every HTTP request; others get 401 with a
    /// `WWW-Authenticate: Bearer` challenge. The token is never logged.
    ///
    /// ```
    /// use tinyagent_mcp::McpServer;
    ///
    /// let server = McpServer::new(tinyagent_demo::all_tools()).bearer_token("s3cret");
    /// assert!(!format!("{server:?}").contains("s3cret"));
    /// ```
    #[must_use]
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        let token: Arc<str> = Arc::from(token.into());
        self.configure(|inner| inner.access.bearer_token = Some(token))
    }

    /// Lets [`serve_http`](Self::serve_http) serve an address other than loopback without a
    /// [bearer token](Self::bearer_token), open to anyone who can reach it (off by default:
    /// it refuses with [`McpServeError::Unauthenticated`]).
    #[must_use]
    pub fn allow_unauthenticated(self, allow: bool) -> Self {
        self.configure(|inner| inner.allow_unauthenticated = allow)
    }

    /// How long a client of [`serve_http`](Self::serve_http) may take to send a request's
    /// headers, which also bounds how long a kept-alive connection may stay idle
    /// ([`DEFAULT_HTTP_HEADER_TIMEOUT`] by default).
    ///
    /// [`DEFAULT_HTTP_HEADER_TIMEOUT`]: crate::DEFAULT_HTTP_HEADER_TIMEOUT
    #[must_use]
    pub fn http_header_timeout(self, timeout: std::time::Duration) -> Self {
        self.configure(|inner| inner.http_limits.header_timeout = timeout)
    }

    /// How many connections [`serve_http`](Self::serve_http) keeps open at once; one more is
    /// answered `503` and closed ([`DEFAULT_HTTP_MAX_CONNECTIONS`] by default).
    ///
    /// [`DEFAULT_HTTP_MAX_CONNECTIONS`]: crate::DEFAULT_HTTP_MAX_CONNECTIONS
    #[must_use]
    pub fn http_max_connections(self, max: usize) -> Self {
        self.configure(|inner| inner.http_limits.max_connections = max.max(1))
    }

    /// A tower service speaking MCP's streamable HTTP transport (with sessions), to mount in a
    /// router of your own. Requests whose `Host` is not a loopback name are refused, as rmcp
    /// does by default against DNS rebinding (see [`allowed_hosts`](Self::allowed_hosts)), and
    /// so are requests from foreign browser origins (see
    /// [`allowed_origins`](Self::allowed_origins)).
    pub fn http_service(&self) -> McpHttpService {
        let mut config = StreamableHttpServerConfig::default();
        if let Some(hosts) = &self.inner.allowed_hosts {
            config = config.with_allowed_hosts(hosts.clone());
        }
        self.http_service_with(config)
    }

    /// Like [`http_service`](Self::http_service), with rmcp's configuration (its
    /// `allowed_hosts` apply as given; origins and the bearer token are this server's).
    pub fn http_service_with(&self, config: StreamableHttpServerConfig) -> McpHttpService {
        let max_body_bytes = config.max_request_body_bytes;
        let server = self.clone();
        let inner = StreamableHttpService::new(
            move || Ok(server.new_session()),
            Default::default(),
            config,
        );
        McpHttpService::new(inner, self.inner.access.clone(), max_body_bytes)
    }

    /// Binds `addr` and serves MCP over streamable HTTP at [`MCP_HTTP_PATH`] in a background
    /// task, until the returned handle is shut down or dropped. Bind port 0 to get a free port,
    /// then read it from [`HttpServerHandle::local_addr`].
    ///
    /// Refuses an address other than loopback without a [bearer token](Self::bearer_token),
    /// unless [allowed](Self::allow_unauthenticated). Only requests whose `Host` names the
    /// address connected to, `localhost` on a loopback address, or an [allowed
    /// host](Self::allowed_hosts) are served (against DNS rebinding). Connections are bounded:
    /// a header-read timeout ([`http_header_timeout`](Self::http_header_timeout)) and a
    /// maximum number ([`http_max_connections`](Self::http_max_connections)).
    ///
    /// ```no_run
    /// use tinyagent_mcp::McpServer;
    ///
    /// # async fn demo() -> Result<(), tinyagent_mcp::McpServeError> {
    /// let handle = McpServer::new(tinyagent_demo::all_tools())
    ///     .serve_http("127.0.0.1:0")
    ///     .await?;
    /// println!("serving at {}", handle.url());
    /// handle.shutdown().await;
    /// # Ok(()) }
    /// ```
    pub async fn serve_http(
        self,
        addr: impl tokio::net::ToSocketAddrs,
    ) -> Result<HttpServerHandle, McpServeError> {
        // Checked before binding: an open address is never listened on, even briefly.
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr).await?.collect();
        if self.inner.access.bearer_token.is_none() && !self.inner.allow_unauthenticated {
            if let Some(open) = addrs.iter().find(|a| !a.ip().is_loopback()) {
                return Err(McpServeError::Unauthenticated { addr: *open });
            }
        }
        let listener = tokio::net::TcpListener::bind(&addrs[..]).await?;
        let local_addr = listener.local_addr()?;
        // Without a token on loopback is the usual local setup (the Host and Origin checks
        // keep browsers' pages out); on any other address it was asked for, and worth a warning.
        if self.inner.access.bearer_token.is_none() && !local_addr.ip().is_loopback() {
            tracing::warn!(%local_addr, "serving MCP without a bearer token: anyone who can reach the address may call the tools");
        }
        let cancel = CancellationToken::new();
        // The Host check is this server's own, which knows where each connection arrived.
        let config = StreamableHttpServerConfig::default()
            .with_cancellation_token(cancel.child_token())
            .disable_allowed_hosts();
        let mut service = self.http_service_with(config);
        service.check_hosts(self.inner.allowed_hosts.clone().unwrap_or_default());
        let router = axum::Router::new().nest_service(MCP_HTTP_PATH, service);
        let shutdown = cancel.clone();
        let limits = self.inner.http_limits;
        let handle = move |request: hyper::Request<hyper::body::Incoming>| {
            let mut router = router.clone();
            async move { tower_service::Service::call(&mut router, request.map(Body::new)).await }
        };
        let task = tokio::spawn(async move {
            let stop = async move { shutdown.cancelled_owned().await };
            let (drained, _cut) =
                tinyagent_http::serve::serve(listener, handle, limits, refusal, stop).await;
            drained.await;
            Ok(())
        });
        tracing::info!(%local_addr, "serving MCP over streamable HTTP");
        Ok(HttpServerHandle {
            local_addr,
            cancel,
            task: Some(task),
        })
    }
}

/// A running streamable HTTP server from [`McpServer::serve_http`]; dropping it stops the
/// server.
#[derive(Debug)]
pub struct HttpServerHandle {
    local_addr: SocketAddr,
    cancel: CancellationToken,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl HttpServerHandle {
    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The URL of the MCP endpoint, such as `http://127.0.0.1:41234/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}{MCP_HTTP_PATH}", self.local_addr)
    }

    /// Stops accepting connections, ends the sessions, and waits for the server task.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        if let Some(task) = self.task.take()
            && let Ok(Err(e)) = task.await
        {
            tracing::warn!(error = %e, "MCP HTTP server ended with an error");
        }
    }
}

impl Drop for HttpServerHandle {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// The answer to a connection over the limit: `503`.
fn refusal() -> String {
    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nretry-after: 1\r\n\
     connection: close\r\ncontent-length: 19\r\n\r\nService Unavailable"
        .to_owned()
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
