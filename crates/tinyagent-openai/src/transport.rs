//! The HTTP side of a call: the attempts and deadline of one call ([`Budget`]), the limits a
//! wait runs against, bodies read within them and capped in size, backoff between attempts.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use tinyagent::ModelError;
use tokio::time::Instant;

use crate::config::OpenAiConfig;

/// Which limit a wait runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    /// The first byte of an answer (headers, then a stream's first event).
    FirstByte,
    /// The silence between two events or chunks.
    Idle,
    /// The whole call's deadline.
    Whole,
}

/// The attempts of one call and its deadline.
#[derive(Debug)]
pub(crate) struct Budget {
    /// Retries made so far.
    pub(crate) attempt: u32,
    /// When the current attempt started.
    pub(crate) attempt_started: Instant,
    /// When the whole call must be over.
    pub(crate) deadline: Option<Instant>,
}

impl Budget {
    pub(crate) fn new(config: &OpenAiConfig) -> Self {
        let now = Instant::now();
        Self {
            attempt: 0,
            attempt_started: now,
            deadline: config.request_timeout.map(|t| now + t),
        }
    }

    /// The instant a wait of kind `limit` ends at, and the limit that ends it first (the
    /// call's deadline may come before).
    pub(crate) fn limit(&self, limit: Limit, config: &OpenAiConfig) -> (Limit, Instant) {
        let at = match limit {
            Limit::FirstByte => self.attempt_started + config.first_byte_timeout,
            Limit::Idle => Instant::now() + config.idle_timeout,
            Limit::Whole => return (Limit::Whole, self.deadline.unwrap_or_else(far_future)),
        };
        match self.deadline {
            Some(deadline) if deadline < at => (Limit::Whole, deadline),
            _ => (limit, at),
        }
    }
}

/// An instant no call reaches (about thirty years away).
pub(crate) fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// A duration for people: `60 s`, `0.3 s`.
pub(crate) fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Why a body could not be read.
#[derive(Debug)]
pub(crate) enum BodyError {
    /// The transport failed.
    Http(reqwest::Error),
    /// The body grew past the limit (the bytes read so far).
    TooLarge(usize),
    /// A wait hit a limit.
    TimedOut(Limit),
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Http(e) => e.fmt(f),
            Self::TooLarge(n) => write!(f, "the body passed {n} bytes"),
            Self::TimedOut(limit) => write!(f, "timed out ({limit:?})"),
        }
    }
}

/// The error of a reply that grew past [`OpenAiConfig::max_reply_bytes`].
pub(crate) fn too_large(read: usize, config: &OpenAiConfig) -> ModelError {
    let limit = match config.max_tokens {
        Some(n) => format!("the token limit sent, max_tokens {n}"),
        None => "the token limit (none was sent)".to_owned(),
    };
    ModelError::invalid_response(format!(
        "the reply grew past {read} bytes without finishing (the limit is max_reply_bytes = {}); \
         the server may be ignoring {limit}",
        config.max_reply_bytes
    ))
}

/// The content type of a response, lower-cased; empty when there is none.
pub(crate) fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A whole body, at most `max` bytes, each chunk within the idle timeout and all before the
/// deadline.
pub(crate) async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
    budget: &Budget,
    config: &OpenAiConfig,
) -> Result<bytes::Bytes, BodyError> {
    let mut out = Vec::new();
    loop {
        let (limit, at) = budget.limit(Limit::Idle, config);
        match tokio::time::timeout_at(at, resp.chunk()).await {
            Err(_) => return Err(BodyError::TimedOut(limit)),
            Ok(Err(e)) => return Err(BodyError::Http(e)),
            Ok(Ok(None)) => return Ok(out.into()),
            Ok(Ok(Some(chunk))) => {
                out.extend_from_slice(&chunk);
                if out.len() > max {
                    return Err(BodyError::TooLarge(out.len()));
                }
            }
        }
    }
}

/// A response body as a byte stream, guarded: the first chunk must come before `first`,
/// each next one within the idle timeout, all before the call's deadline, and no more than
/// `max` bytes in all. Server-sent comments (`: ping`) count as bytes, so keep-alives keep a
/// slow stream open.
pub(crate) fn guarded(
    resp: reqwest::Response,
    first: (Limit, Instant),
    idle: Duration,
    deadline: Option<Instant>,
    max: usize,
) -> impl Stream<Item = Result<bytes::Bytes, BodyError>> + Send {
    struct State {
        chunks: BoxStream<'static, Result<bytes::Bytes, reqwest::Error>>,
        total: usize,
        started: bool,
        over: bool,
    }
    let state = State {
        chunks: Box::pin(resp.bytes_stream()),
        total: 0,
        started: false,
        over: false,
    };
    stream::unfold(state, move |mut state| async move {
        if state.over {
            return None;
        }
        let (limit, at) = if state.started {
            let at = Instant::now() + idle;
            match deadline {
                Some(deadline) if deadline < at => (Limit::Whole, deadline),
                _ => (Limit::Idle, at),
            }
        } else {
            first
        };
        let item = match tokio::time::timeout_at(at, state.chunks.next()).await {
            Err(_) => Err(BodyError::TimedOut(limit)),
            Ok(None) => return None,
            Ok(Some(Err(e))) => Err(BodyError::Http(e)),
            Ok(Some(Ok(chunk))) => {
                state.started = true;
                state.total = state.total.saturating_add(chunk.len());
                if state.total > max {
                    Err(BodyError::TooLarge(state.total))
                } else {
                    Ok(chunk)
                }
            }
        };
        state.over = item.is_err();
        Some((item, state))
    })
}

/// The body of an error response, at most 64 KiB of it; empty if it cannot be read.
pub(crate) async fn read_error_body(mut resp: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        out.extend_from_slice(&chunk);
        if out.len() > 64 * 1024 {
            break;
        }
    }
    out
}

pub(crate) fn serialize(body: &serde_json::Value) -> Result<Vec<u8>, ModelError> {
    serde_json::to_vec(body)
        .map_err(|e| ModelError::other(format!("could not serialize the request: {e}")))
}

/// Exponential backoff with jitter: `initial * 2^attempt`, capped, then a random point in
/// its upper half.
pub(crate) fn backoff(config: &OpenAiConfig, attempt: u32) -> Duration {
    let base = config
        .initial_backoff
        .saturating_mul(1u32 << attempt.min(20))
        .min(config.max_backoff);
    let half = base / 2;
    let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    let jitter = if nanos == 0 {
        0
    } else {
        RandomState::new().hash_one((attempt, SystemTime::now())) % nanos
    };
    half + Duration::from_nanos(jitter)
}

/// The UTF-8 byte order mark some servers put before a body.
pub(crate) const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A body without leading byte order marks (one, or several from a server that adds its own
/// to a body that had one).
pub(crate) fn strip_bom(mut bytes: bytes::Bytes) -> bytes::Bytes {
    while bytes.starts_with(BOM) {
        bytes = bytes.slice(BOM.len()..);
    }
    bytes
}

/// A byte stream without leading byte order marks: the SSE parser panics on one (it slices a
/// leading mark off as if it were one byte long). A mark may arrive cut across chunks, so the
/// first bytes are held back until they cannot be the start of a mark any more; a stream that
/// ends while they are held back ended inside a mark, and loses nothing else.
pub(crate) fn without_bom<S, E>(chunks: S) -> impl futures::Stream<Item = Result<bytes::Bytes, E>>
where
    S: futures::Stream<Item = Result<bytes::Bytes, E>>,
{
    let mut head: Option<Vec<u8>> = Some(Vec::new());
    chunks.map(move |chunk| {
        chunk.map(|bytes| {
            let Some(pending) = head.as_mut() else {
                return bytes;
            };
            pending.extend_from_slice(&bytes);
            while pending.starts_with(BOM) {
                pending.drain(..BOM.len());
            }
            if BOM.starts_with(pending) {
                // Empty, or the start of a mark: wait for the next chunk.
                return bytes::Bytes::new();
            }
            bytes::Bytes::from(head.take().unwrap_or_default())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_are_dropped_wherever_the_chunks_are_cut() {
        use futures::{FutureExt, StreamExt, stream};
        let body: &[u8] = b"\xEF\xBB\xBF\xEF\xBB\xBFdata: {}\n\n";
        for cut in 0..=body.len() {
            for cut2 in cut..=body.len() {
                let chunks = [&body[..cut], &body[cut..cut2], &body[cut2..]]
                    .map(|c| Ok::<_, std::convert::Infallible>(bytes::Bytes::copy_from_slice(c)));
                let out: Vec<_> = without_bom(stream::iter(chunks))
                    .collect::<Vec<_>>()
                    .now_or_never()
                    .unwrap();
                let joined: Vec<u8> = out.into_iter().flat_map(|c| c.unwrap().to_vec()).collect();
                assert_eq!(joined, b"data: {}\n\n", "cut at {cut} and {cut2}");
            }
        }
        // A body that is only part of a mark ends empty; one that merely starts like a mark
        // keeps every byte.
        let out: Vec<_> = without_bom(stream::iter([Ok::<_, std::convert::Infallible>(
            bytes::Bytes::from_static(b"\xEF\xBB"),
        )]))
        .collect::<Vec<_>>()
        .now_or_never()
        .unwrap();
        assert!(out.iter().all(|c| c.as_ref().unwrap().is_empty()));
        assert_eq!(
            strip_bom(bytes::Bytes::from_static(b"\xEFx")).as_ref(),
            b"\xEFx"
        );
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let config =
            OpenAiConfig::new("m").backoff(Duration::from_millis(100), Duration::from_millis(1000));
        for attempt in 0..30 {
            let d = backoff(&config, attempt);
            let base = (100u64 << attempt.min(20)).min(1000);
            let d = d.as_millis() as u64;
            assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d}ms");
        }
        let zero = OpenAiConfig::new("m").backoff(Duration::ZERO, Duration::ZERO);
        assert_eq!(backoff(&zero, 3), Duration::ZERO);
    }
}
