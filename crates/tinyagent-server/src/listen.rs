//! The accept loop of [`Server::serve`](crate::Server::serve): tinyagent-http's bounded loop
//! ([`tinyagent_http::serve::serve`]: a header-read timeout, at most so many connections, a
//! write timeout on every socket, `TCP_NODELAY`), with the server's own `503` for a
//! connection over the limit.

use std::convert::Infallible;
use std::future::Future;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use hyper::Request;
use hyper::body::Incoming;
use tinyagent_http::serve::ConnLimits;
use tokio::net::TcpListener;
use tower_service::Service;

use crate::guard::Front;

/// Serves `router` on `listener` until `stop` completes; then stops accepting and returns a
/// future that ends when every connection has finished its request in flight, and the sender
/// that cuts the connections still open (by sending `true`).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Front<Router>,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) -> (impl Future<Output = ()>, tokio::sync::watch::Sender<bool>) {
    let handle = move |request: Request<Incoming>| {
        let mut router = router.clone();
        async move {
            let response: Result<Response, Infallible> = router.call(request.map(Body::new)).await;
            response
        }
    };
    tinyagent_http::serve::serve(listener, handle, limits, refusal, stop).await
}

/// The answer to a connection over the limit: `503`, in the API's error shape, with a
/// request id.
fn refusal() -> String {
    let id = tinyagent::store::new_id("req");
    let body = format!(
        "{{\"error\":{{\"message\":\"the server has as many connections as it takes; retry \
         shortly\",\"type\":\"server_error\",\"param\":null,\"code\":\"too_many_connections\",\
         \"request_id\":\"{id}\"}}}}"
    );
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\nx-request-id: {id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}
