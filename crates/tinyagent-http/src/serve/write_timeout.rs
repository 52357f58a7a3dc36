//! [`WriteTimeout`]: a socket whose writes fail once the peer has read nothing for a while.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A socket whose writes fail with [`io::ErrorKind::TimedOut`] once the peer has taken
/// nothing for the timeout: a write (or flush) that stays blocked that long ends the
/// connection, and with it the request in flight (a stream's run is dropped, cancelled).
pub struct WriteTimeout<T> {
    inner: T,
    timeout: Option<Duration>,
    blocked: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    /// `inner`, its writes bounded by `timeout` (none: unbounded).
    pub fn new(inner: T, timeout: Option<Duration>) -> Self {
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
