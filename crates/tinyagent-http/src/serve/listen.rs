//! [`serve`]: the accept loop, bounded.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::{Arrival, WriteTimeout};

/// How [`serve`] bounds its connections.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ConnLimits {
    /// How long a client may take to send a request's headers; also how long an idle
    /// keep-alive connection stays open.
    pub header_timeout: Duration,
    /// How long a client may read nothing while an answer waits to be sent to it; `None`:
    /// unbounded.
    pub write_timeout: Option<Duration>,
    /// The most connections open at once.
    pub max_connections: usize,
}

impl ConnLimits {
    /// Limits of `max_connections` connections, `header_timeout` for headers, no write
    /// timeout.
    pub fn new(header_timeout: Duration, max_connections: usize) -> Self {
        Self {
            header_timeout,
            write_timeout: None,
            max_connections,
        }
    }

    /// Sets [`write_timeout`](Self::write_timeout).
    #[must_use]
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }
}

/// How many refused connections may be answered at once; beyond it they are closed unanswered.
const MAX_REFUSING: usize = 64;

/// Serves `handle` on `listener` until `stop` completes, then stops accepting and returns a
/// future that ends when every connection has finished its request in flight, with the sender
/// that cuts the connections still open (by sending `true`).
///
/// Each request carries the connection's [`Arrival`] in its extensions. A connection beyond
/// [`ConnLimits::max_connections`] is answered with `refusal()` (a whole HTTP/1.1 response,
/// such as a `503`) and closed; the refusals are logged a line a second at most.
pub async fn serve<F, Fut, B>(
    listener: TcpListener,
    handle: F,
    limits: ConnLimits,
    refusal: fn() -> String,
    stop: impl Future<Output = ()>,
) -> (impl Future<Output = ()>, tokio::sync::watch::Sender<bool>)
where
    F: Fn(Request<Incoming>) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Response<B>, Infallible>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (cut, cut_rx) = tokio::sync::watch::channel(false);
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let refusing = Arc::new(Semaphore::new(MAX_REFUSING));
    let mut refused: u64 = 0;
    let mut last_warned: Option<Instant> = None;
    tokio::pin!(stop);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of file descriptors, or a connection reset before it was accepted:
                    // wait a little rather than spin.
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        // Events go out as they happen, in small writes: without TCP_NODELAY, Nagle's
        // algorithm and the client's delayed ACK hold each one back by about 40 ms.
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            refused += 1;
            if last_warned.is_none_or(|at: Instant| at.elapsed() >= Duration::from_secs(1)) {
                tracing::warn!(
                    %peer,
                    refused,
                    max_connections = limits.max_connections,
                    "refused connections: the server has as many as it takes"
                );
                last_warned = Some(Instant::now());
                refused = 0;
            }
            if let Ok(permit) = refusing.clone().try_acquire_owned() {
                tokio::spawn(async move {
                    refuse(tcp, refusal()).await;
                    drop(permit);
                });
            }
            continue;
        };
        let Ok(local) = tcp.local_addr() else {
            continue;
        };
        let arrival = Arrival { local };
        let handle = handle.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(arrival);
            handle(request)
        });
        let io = TokioIo::new(WriteTimeout::new(tcp, limits.write_timeout));
        let connection = graceful.watch(http.serve_connection(io, service));
        let mut cut_rx = cut_rx.clone();
        tokio::spawn(async move {
            tokio::select! {
                ended = connection => {
                    if let Err(error) = ended {
                        tracing::debug!(%peer, %error, "connection ended with an error");
                    }
                }
                _ = cut_rx.wait_for(|cut| *cut) => {}
            }
            drop(slot);
        });
    }
    drop(listener);
    (async move { graceful.shutdown().await }, cut)
}

/// Answers a connection over the limit with `answer` and closes it.
async fn refuse(mut tcp: TcpStream, answer: String) {
    let write = async {
        tcp.write_all(answer.as_bytes()).await?;
        tcp.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
    // Read what the client sent (briefly) so that closing does not reset the connection
    // before the answer is read.
    let mut sink = [0u8; 1024];
    let drain = async {
        loop {
            match tokio::io::AsyncReadExt::read(&mut tcp, &mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_millis(500), drain).await;
}
