//! Response bodies read within the limits: whole ([`read_body`]) or as a guarded stream of
//! chunks ([`guarded`]), capped in size, without byte order marks.

use std::time::Duration;

use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use tokio::time::Instant;

use crate::HttpSettings;
use crate::limits::{Attempts, Limit};

/// Why a body could not be read.
#[derive(Debug)]
pub enum BodyError {
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

/// The content type of a response, lower-cased; empty when there is none.
pub fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// A whole body, at most `max` bytes, each chunk within the idle timeout and all before the
/// deadline.
pub async fn read_body(
    mut resp: reqwest::Response,
    max: usize,
    budget: &Attempts,
    limits: &HttpSettings,
) -> Result<bytes::Bytes, BodyError> {
    let mut out = Vec::new();
    loop {
        let (limit, at) = budget.limit(Limit::Idle, limits);
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
pub fn guarded(
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
pub async fn read_error_body(mut resp: reqwest::Response) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        out.extend_from_slice(&chunk);
        if out.len() > 64 * 1024 {
            break;
        }
    }
    out
}

/// The UTF-8 byte order mark some servers put before a body.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A body without leading byte order marks (one, or several from a server that adds its own
/// to a body that had one).
pub fn strip_bom(mut bytes: bytes::Bytes) -> bytes::Bytes {
    while bytes.starts_with(BOM) {
        bytes = bytes.slice(BOM.len()..);
    }
    bytes
}

/// A byte stream without leading byte order marks: the SSE parser panics on one (it slices a
/// leading mark off as if it were one byte long). A mark may arrive cut across chunks, so the
/// first bytes are held back until they cannot be the start of a mark any more; a stream that
/// ends while they are held back ended inside a mark, and loses nothing else.
pub fn without_bom<S, E>(chunks: S) -> impl futures::Stream<Item = Result<bytes::Bytes, E>>
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
}
