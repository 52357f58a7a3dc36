//! Server-sent events: the framing, and a run's events cut at the request's deadline.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::stream::{self, BoxStream, Stream, StreamExt};
use tinyagent::{AgentError, Event};
use tokio::time::{Instant, Sleep};

/// One frame: an optional `event:` line and one `data:` line (JSON has no raw newlines).
pub(crate) fn frame(event: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(event) = event {
        out.push_str("event: ");
        out.push_str(event);
        out.push('\n');
    }
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// A `text/event-stream` response of these frames.
pub(crate) fn response(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let body = Body::from_stream(frames.map(Ok::<_, Infallible>));
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Proxies such as nginx buffer responses unless told not to.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// How often a stream with nothing to say sends an SSE comment, so that proxies (whose read
/// timeouts are often 60 s) and clients see it is alive.
pub(crate) const HEARTBEAT: Duration = Duration::from_secs(15);

/// How long a session message waits for its run's first event before its answer's headers
/// go out anyway (and the wait goes on in the stream, with heartbeats).
pub(crate) const HEADERS_GRACE: Duration = Duration::from_secs(1);

/// The comment a stream sends when it has been silent for [`HEARTBEAT`]; SSE clients ignore
/// it.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n\n";

/// `frames`, with a `: keep-alive` comment whenever none came for `every`.
///
/// One timer per stream, armed for `every` after the last frame and moved only when it fires
/// (a frame costs a clock read, not a timer registration).
pub(crate) fn with_heartbeat(
    frames: impl Stream<Item = Bytes> + Send + 'static,
    every: Duration,
) -> impl Stream<Item = Bytes> + Send + 'static {
    Heartbeat {
        frames: frames.boxed(),
        every,
        last: Instant::now(),
        timer: Box::pin(tokio::time::sleep(every)),
        done: false,
    }
}

struct Heartbeat {
    frames: BoxStream<'static, Bytes>,
    every: Duration,
    /// When the last frame (or comment) went out.
    last: Instant,
    timer: Pin<Box<Sleep>>,
    done: bool,
}

impl Stream for Heartbeat {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(next) = self.frames.poll_next_unpin(cx) {
            match next {
                Some(_) => self.last = Instant::now(),
                None => self.done = true,
            }
            return Poll::Ready(next);
        }
        loop {
            if self.timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            let due = self.last + self.every;
            let now = Instant::now();
            if now >= due {
                self.last = now;
                let every = self.every;
                self.timer.as_mut().reset(now + every);
                return Poll::Ready(Some(Bytes::from_static(KEEP_ALIVE)));
            }
            // Frames went out since the timer was armed: wait for the rest of the silence.
            self.timer.as_mut().reset(due);
        }
    }
}

/// What a run reports, or that its time is up.
pub(crate) enum Step {
    /// An event of the run, or the error that ends it.
    Event(Result<Event, AgentError>),
    /// The deadline passed: the run was dropped (cancelled).
    TimedOut,
}

/// The run's events until its deadline; past it the run is dropped and [`Step::TimedOut`] ends
/// the stream. The stream also ends after the run's error or [`Event::Finished`].
pub(crate) fn until(
    events: BoxStream<'static, Result<Event, AgentError>>,
    deadline: Option<Instant>,
) -> BoxStream<'static, Step> {
    Until {
        events,
        // One timer for the whole run, not one per event.
        deadline: deadline.map(|at| Box::pin(tokio::time::sleep_until(at))),
        done: false,
    }
    .boxed()
}

struct Until {
    events: BoxStream<'static, Result<Event, AgentError>>,
    deadline: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl Until {
    /// Ends the stream, dropping the run at once (a run past its deadline is cancelled then,
    /// not when the response body is dropped).
    fn finish(&mut self) {
        self.done = true;
        self.events = stream::empty().boxed();
        self.deadline = None;
    }
}

impl Stream for Until {
    type Item = Step;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Step>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Some(deadline) = self.deadline.as_mut() {
            // Checked first: a run whose events are always ready must still stop.
            if Instant::now() >= deadline.deadline() || deadline.as_mut().poll(cx).is_ready() {
                self.finish();
                return Poll::Ready(Some(Step::TimedOut));
            }
        }
        let Poll::Ready(next) = self.events.poll_next_unpin(cx) else {
            return Poll::Pending;
        };
        Poll::Ready(match next {
            None => {
                self.finish();
                None
            }
            Some(Ok(event @ (Event::Finished { .. } | Event::Paused { .. }))) => {
                self.finish();
                Some(Step::Event(Ok(event)))
            }
            Some(Ok(event)) => Some(Step::Event(Ok(event))),
            Some(Err(err)) => {
                self.finish();
                Some(Step::Event(Err(err)))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_run_that_never_stops_reporting_is_cut_at_its_deadline() {
        // Every event is ready at once, and there are always more.
        let events = stream::repeat_with(|| Ok(Event::TextDelta("x".into()))).boxed();
        let deadline = Instant::now() + std::time::Duration::from_millis(10);
        let mut steps = until(events, Some(deadline));
        let mut seen = 0usize;
        loop {
            match steps.next().await {
                Some(Step::Event(Ok(_))) => seen += 1,
                Some(Step::TimedOut) => break,
                _ => panic!("the stream ended without timing out"),
            }
            if seen.is_multiple_of(100) {
                tokio::time::advance(std::time::Duration::from_millis(1)).await;
            }
            assert!(seen < 100_000, "the deadline was never checked");
        }
        assert!(steps.next().await.is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_sends_keep_alive_comments() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
        let frames = stream::unfold(rx, |mut rx| async { rx.recv().await.map(|f| (f, rx)) });
        let mut beating = Box::pin(with_heartbeat(frames, Duration::from_secs(15)));
        let started = Instant::now();
        assert_eq!(&beating.next().await.unwrap()[..], KEEP_ALIVE);
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        tx.send(Bytes::from_static(b"data: x\n\n")).unwrap();
        assert_eq!(&beating.next().await.unwrap()[..], b"data: x\n\n");
        assert_eq!(started.elapsed(), Duration::from_secs(15));
        assert_eq!(&beating.next().await.unwrap()[..], KEEP_ALIVE);
        assert_eq!(started.elapsed(), Duration::from_secs(30));
        drop(tx);
        assert!(beating.next().await.is_none());
    }

    #[test]
    fn frames_put_each_line_of_data_on_its_own_line() {
        assert_eq!(
            &frame(Some("x"), "a\nb")[..],
            b"event: x\ndata: a\ndata: b\n\n"
        );
        assert_eq!(&frame(None, "[DONE]")[..], b"data: [DONE]\n\n");
    }
}
