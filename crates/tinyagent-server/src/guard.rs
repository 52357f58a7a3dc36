//! What a request must show before any handler sees it: a request id for it, a `Host` this
//! server answers to, an `Origin` that is its own (or listed), and a JSON body.
//!
//! The checks stop a web page on another site from driving a local server through the
//! visitor's browser: a cross-site form can post `text/plain` without a CORS preflight (so API
//! bodies must be `application/json`, which a form cannot send), the browser names the page's
//! origin in `Origin` (so a foreign one gets 403), and DNS rebinding makes the browser call the
//! server under the attacker's host name (so an unknown `Host` gets 421).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use pin_project_lite::pin_project;
use tokio::task::futures::TaskLocalFuture;
use tower_layer::Layer;
use tower_service::Service;

use tinyagent_http::serve::{Arrival, host_allowed, split_host};

use crate::error::ApiError;
use crate::request_id::{REQUEST_ID_HEADER, RequestId};

/// Which hosts and origins the server answers to.
#[derive(Debug, Clone, Default)]
pub(crate) struct SitePolicy {
    /// `--allowed-host` entries, lower-cased: `name` (any port), `name:port`, or `*` (any).
    pub(crate) hosts: Vec<String>,
    /// Origins allowed besides the server's own (`scheme://host[:port]`, lower-cased; `*` for
    /// any).
    pub(crate) origins: Vec<String>,
}

impl SitePolicy {
    /// Whether a request naming `host` (the `Host` header, if any) may be served on a
    /// connection that arrived at `arrival`. Without an arrival (routes mounted elsewhere)
    /// only a configured list is enforced.
    pub(crate) fn host_allowed(&self, host: Option<&str>, arrival: Option<Arrival>) -> bool {
        if arrival.is_none() && self.hosts.is_empty() {
            return true;
        }
        // HTTP/1.0 clients may leave it out; browsers never do.
        let Some(host) = host else {
            return true;
        };
        match arrival {
            Some(arrival) => host_allowed(host, &self.hosts, arrival.local),
            // Mounted elsewhere: only the configured list.
            None => {
                self.hosts.iter().any(|h| h == "*")
                    || split_host(host).is_some_and(|(name, port)| {
                        self.hosts.iter().any(|entry| match split_host(entry) {
                            Some((n, Some(p))) => n.eq_ignore_ascii_case(name) && Some(p) == port,
                            Some((n, None)) => n.eq_ignore_ascii_case(name),
                            None => false,
                        })
                    })
            }
        }
    }

    /// Whether a request from `origin` may be served, `host` being its (allowed) `Host`: the
    /// server's own origin (the same host and port) or a listed one.
    pub(crate) fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim().trim_end_matches('/');
        if self
            .origins
            .iter()
            .any(|o| o == "*" || o.eq_ignore_ascii_case(origin))
        {
            return true;
        }
        let (default_port, rest) = if let Some(rest) = strip_prefix_ignore_case(origin, "http://") {
            (80, rest)
        } else if let Some(rest) = strip_prefix_ignore_case(origin, "https://") {
            (443, rest)
        } else {
            // `null` (sandboxed frames, files) and other schemes.
            return false;
        };
        let (Some((origin_name, origin_port)), Some((host_name, host_port))) =
            (split_host(rest), host.and_then(split_host))
        else {
            return false;
        };
        origin_name.eq_ignore_ascii_case(host_name)
            && origin_port.unwrap_or(default_port) == host_port.unwrap_or(default_port)
    }
}

/// `text` without `prefix`, compared without case.
fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// Whether a request declares a JSON body (`application/json`, parameters allowed).
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
}

/// The front door of every route, one layer ([`FrontLayer`]): gives the request an id
/// (errors quote it, the answer carries it as `x-request-id`, and the request's log lines
/// name it, so a client's report finds the server's log line); then, for every route but the
/// health checks, the cross-site checks (`Host`, then `Origin`). Every answer leaves with the
/// security headers (`X-Content-Type-Options`, `X-Frame-Options`, `Referrer-Policy`, a
/// `Content-Security-Policy`). A tower layer of its own
/// rather than `from_fn`: it boxes neither the inner service nor its future.
#[derive(Clone)]
pub(crate) struct FrontLayer {
    site: Arc<SitePolicy>,
}

impl FrontLayer {
    pub(crate) fn new(site: Arc<SitePolicy>) -> Self {
        Self { site }
    }
}

impl<S> Layer<S> for FrontLayer {
    type Service = Front<S>;

    fn layer(&self, inner: S) -> Front<S> {
        Front {
            inner,
            site: self.site.clone(),
        }
    }
}

/// The service [`FrontLayer`] makes.
#[derive(Clone)]
pub(crate) struct Front<S> {
    inner: S,
    site: Arc<SitePolicy>,
}

impl<S> Service<Request> for Front<S>
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    type Response = Response;
    type Error = Infallible;
    type Future = FrontFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let id = RequestId::new();
        // Inside the request's scope, so that a refusal quotes its id.
        match id.scope(|| screen(&self.site, &request)) {
            Ok(()) => {
                let inner = id.scope(|| self.inner.call(request));
                FrontFuture::Inner {
                    inner: id.scope_future(inner),
                    id,
                }
            }
            Err(err) => {
                let response = id.scope(|| {
                    tracing::warn!(
                        method = %request.method(),
                        path = request.uri().path(),
                        host = ?request.headers().get(header::HOST),
                        origin = ?request.headers().get(header::ORIGIN),
                        status = err.status.as_u16(),
                        request_id = %id,
                        "refused a request: {}",
                        err.message
                    );
                    err.into_response()
                });
                FrontFuture::Refused {
                    response: Some(with_id(response, id)),
                }
            }
        }
    }
}

pin_project! {
    /// The future of [`Front`]: the inner service's answer, with the request's id on it.
    #[project = FrontProj]
    pub(crate) enum FrontFuture<F> {
        Inner {
            #[pin]
            inner: TaskLocalFuture<RequestId, F>,
            id: RequestId,
        },
        Refused {
            response: Option<Response>,
        },
    }
}

impl<F> Future for FrontFuture<F>
where
    F: Future<Output = Result<Response, Infallible>>,
{
    type Output = Result<Response, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project() {
            FrontProj::Inner { inner, id } => match inner.poll(cx) {
                Poll::Ready(Ok(response)) => Poll::Ready(Ok(with_id(response, *id))),
                Poll::Ready(Err(never)) => match never {},
                Poll::Pending => Poll::Pending,
            },
            FrontProj::Refused { response } => match response.take() {
                Some(response) => Poll::Ready(Ok(response)),
                None => Poll::Pending,
            },
        }
    }
}

/// The response with the request's id and the headers every answer carries: no sniffing of
/// its type, no framing (the page's own policy kept, every other answer's set: nothing runs
/// in it), no referrer sent from it.
fn with_id(mut response: Response, id: RequestId) -> Response {
    let headers = response.headers_mut();
    if let Some(value) = id.header() {
        headers.insert(REQUEST_ID_HEADER, value);
    }
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(crate::page::API_CSP));
    response
}

/// The cross-site checks of [`front`]; the health checks pass untouched.
fn screen(site: &SitePolicy, request: &Request) -> Result<(), ApiError> {
    let path = request.uri().path();
    if path.ends_with("/healthz") || path.ends_with("/readyz") {
        return Ok(());
    }
    check(site, request)
}

/// Refuses an API request with a body that is not declared JSON: `415` (checked after the
/// key). A cross-site form can only send `text/plain`, `application/x-www-form-urlencoded` or
/// `multipart/form-data` without a CORS preflight.
pub(crate) fn json_only(request: &Request) -> Result<(), ApiError> {
    let method = request.method();
    let has_body = method == Method::POST || method == Method::PUT || method == Method::PATCH;
    if has_body && !is_json(request.headers()) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_request_error",
            "the request body must be JSON, sent with `Content-Type: application/json`",
        )
        .code("unsupported_media_type"));
    }
    Ok(())
}

fn check(site: &SitePolicy, request: &Request) -> Result<(), ApiError> {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let arrival = request.extensions().get::<Arrival>().copied();
    let host_is_text = headers.get(header::HOST).is_none() || host.is_some();
    if !host_is_text || !site.host_allowed(host, arrival) {
        return Err(ApiError::new(
            StatusCode::MISDIRECTED_REQUEST,
            "invalid_request_error",
            "this server does not answer to that host name; its operator can allow it with \
             --allowed-host",
        )
        .code("host_not_allowed"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let allowed = origin
            .to_str()
            .is_ok_and(|origin| site.origin_allowed(origin, host));
        if !allowed {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "permission_error",
                "requests from other sites' pages are not accepted; the server's operator can \
                 allow an origin with --allowed-origin",
            )
            .code("origin_not_allowed"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(addr: &str) -> Option<Arrival> {
        Some(Arrival {
            local: addr.parse().unwrap(),
        })
    }

    #[test]
    fn hosts_are_the_address_connected_to_loopback_names_or_listed_ones() {
        let site = SitePolicy::default();
        let local = at("127.0.0.1:8080");
        for ok in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST:8080",
            "[::1]:8080",
        ] {
            assert!(site.host_allowed(Some(ok), local), "{ok}");
        }
        for bad in [
            "attacker.example:8080",
            "localhost:9090",
            "localhost",
            "127.0.0.1",
            "localhost.attacker.example:8080",
            "user@localhost:8080",
            "",
        ] {
            assert!(!site.host_allowed(Some(bad), local), "{bad}");
        }
        // Bound elsewhere: the address connected to, never a loopback name.
        let public = at("10.1.2.3:8080");
        assert!(site.host_allowed(Some("10.1.2.3:8080"), public));
        assert!(!site.host_allowed(Some("localhost:8080"), public));
        assert!(!site.host_allowed(Some("127.0.0.1:8080"), public));
        assert!(!site.host_allowed(Some("agents.example.com"), public));
        let listed = SitePolicy {
            hosts: vec!["agents.example.com".into(), "intranet:8080".into()],
            ..SitePolicy::default()
        };
        assert!(listed.host_allowed(Some("agents.example.com"), public));
        assert!(listed.host_allowed(Some("Agents.Example.com:443"), public));
        assert!(listed.host_allowed(Some("intranet:8080"), public));
        assert!(!listed.host_allowed(Some("intranet:8081"), public));
        let any = SitePolicy {
            hosts: vec!["*".into()],
            ..SitePolicy::default()
        };
        assert!(any.host_allowed(Some("whatever"), public));
        // Mounted in an app of one's own: no arrival, no list, no check.
        assert!(site.host_allowed(Some("whatever"), None));
        assert!(!listed.host_allowed(Some("whatever"), None));
    }

    #[test]
    fn origins_are_the_servers_own_or_listed_ones() {
        let site = SitePolicy {
            origins: vec!["https://app.example.com".into()],
            ..SitePolicy::default()
        };
        let host = Some("127.0.0.1:8080");
        assert!(site.origin_allowed("http://127.0.0.1:8080", host));
        assert!(site.origin_allowed("https://app.example.com", host));
        assert!(!site.origin_allowed("http://localhost:8080", host));
        assert!(!site.origin_allowed("http://127.0.0.1:9090", host));
        assert!(!site.origin_allowed("https://attacker.example", host));
        assert!(!site.origin_allowed("null", host));
        assert!(site.origin_allowed("http://agents.example.com", Some("agents.example.com")));
        assert!(site.origin_allowed("https://agents.example.com", Some("agents.example.com:443")));
    }
}
