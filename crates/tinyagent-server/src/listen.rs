//! The accept loop of [`Server::serve`](crate::Server::serve): HTTP/1 connections with a
//! header-read timeout (which also bounds how long a kept-alive connection may sit idle), at
//! most so many at once (one more is answered `503` and closed), a write timeout on every
//! socket (a client that reads nothing for that long is dropped, and what its request held
//! with it), and `TCP_NODELAY`.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};

use crate::guard::{Arrival, Front};

/// The connection limits of the accept loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) max_connections: usize,
}

/// How many refused connections may be answered at once; beyond it they are closed unanswered.
const MAX_REFUSING: usize = 64;

/// Serves `router` on `listener` until `stop` completes; then stops accepting and returns a
/// future that ends when every connection has finished its request in flight, and the sender
/// that cuts the connections still open (by sending `true`).
pub(crate) async fn serve(
    listener: TcpListener,
    router: Front<Router>,
    limits: ConnLimits,
    stop: impl Future<Output = ()>,
) -> (impl Future<Output = ()>, tokio::sync::watch::Sender<bool>) {
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
            // One line a second at most, however many are refused.
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
                    refuse(tcp).await;
                    drop(permit);
                });
            }
            continue;
        };
        let local = match tcp.local_addr() {
            Ok(local) => local,
            Err(_) => continue,
        };
        let arrival = Arrival { local };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: Request<Incoming>| {
            request.extensions_mut().insert(arrival);
            let mut router = router.clone();
            tower_service::Service::call(&mut router, request.map(Body::new))
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

/// Answers a connection over the limit with `503` and closes it.
async fn refuse(mut tcp: TcpStream) {
    let id = tinyagent::store::new_id("req");
    let body = format!(
        "{{\"error\":{{\"message\":\"the server has as many connections as it takes; retry \
         shortly\",\"type\":\"server_error\",\"param\":null,\"code\":\"too_many_connections\",\
         \"request_id\":\"{id}\"}}}}"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         retry-after: 1\r\nconnection: close\r\nx-request-id: {id}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
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

/// A socket whose writes fail with [`io::ErrorKind::TimedOut`] once the peer has taken
/// nothing for the timeout: a write (or flush) that stays blocked that long ends the
/// connection, and with it the request in flight (a stream's run is dropped, cancelled).
pub(crate) struct WriteTimeout<T> {
    inner: T,
    timeout: Option<Duration>,
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(crate) fn new(inner: T, timeout: Option<Duration>) -> Self {
        Self {
            inner,
            timeout,
            blocked: None,
        }
    }

    /// Called with the inner write's result: a pending write starts (or checks) the clock, a
    /// write that went through stops it.
    fn watch<R>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match result {
            Poll::Pending => {
                let Some(timeout) = self.timeout else {
                    return Poll::Pending;
                };
                let sleep = self.blocked.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until(Instant::now() + timeout))
                });
                if sleep.as_mut().poll(cx).is_ready() {
                    self.blocked = None;
                    tracing::info!(
                        timeout_ms = timeout.as_millis() as u64,
                        "dropped a client that read nothing within the write timeout"
                    );
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client read nothing within the write timeout",
                    )));
                }
                Poll::Pending
            }
            ready => {
                self.blocked = None;
                ready
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_takes_fails_after_the_timeout() {
        // A pipe of 64 bytes whose other end nobody reads.
        let (client, _server) = tokio::io::duplex(64);
        let mut socket = WriteTimeout::new(client, Some(Duration::from_secs(5)));
        let started = Instant::now();
        let error = socket.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_secs(5) && waited < Duration::from_secs(6),
            "{waited:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_that_reads_slowly_but_steadily_is_kept() {
        let (client, mut server) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            let mut total = 0;
            while total < 1024 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                total += tokio::io::AsyncReadExt::read(&mut server, &mut buf)
                    .await
                    .unwrap();
            }
        });
        let mut socket = WriteTimeout::new(client, Some(Duration::from_secs(5)));
        socket.write_all(&[0u8; 1024]).await.unwrap();
        reader.await.unwrap();
    }
}
