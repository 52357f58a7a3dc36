//! Request ids: one per request, sent back as `x-request-id`, quoted by its errors and named
//! by its log lines, so that a client's report finds the server's log line.

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::BuildHasher;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::http::HeaderValue;

/// The header that carries a request's id, in answers (and in logs as `request_id`).
pub(crate) const REQUEST_ID_HEADER: &str = "x-request-id";

/// A request's id, `req_` and 16 hex digits: a keyed hash of a counter, so ids are distinct
/// and do not reveal how many requests came before. `Copy`, so that scoping a request and
/// naming it in a log line allocate nothing.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct RequestId([u8; 20]);

tokio::task_local! {
    static REQUEST_ID: RequestId;
}

const HEX: &[u8; 16] = b"0123456789abcdef";

impl RequestId {
    /// A new id.
    pub(crate) fn new() -> Self {
        static SEED: OnceLock<RandomState> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let value = SEED.get_or_init(RandomState::new).hash_one(n);
        let mut bytes = *b"req_0000000000000000";
        for (i, byte) in bytes[4..].iter_mut().enumerate() {
            *byte = HEX[((value >> (60 - 4 * i)) & 0xf) as usize];
        }
        Self(bytes)
    }

    /// The id `text` is, if it is one (`req_` and 16 lower-case hex digits).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let bytes: [u8; 20] = text.as_bytes().try_into().ok()?;
        let valid = bytes.starts_with(b"req_")
            && bytes[4..]
                .iter()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b));
        valid.then_some(Self(bytes))
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        // ASCII by construction.
        std::str::from_utf8(&self.0).unwrap_or("req")
    }

    /// The id as a header value.
    pub(crate) fn header(&self) -> Option<HeaderValue> {
        HeaderValue::from_bytes(&self.0).ok()
    }

    /// Runs `f` as part of this request (so that errors it makes, and their log lines, name
    /// it).
    pub(crate) fn scope<R>(self, f: impl FnOnce() -> R) -> R {
        REQUEST_ID.sync_scope(self, f)
    }

    /// `fut`, run as part of this request.
    pub(crate) fn scope_future<F: Future>(
        self,
        fut: F,
    ) -> tokio::task::futures::TaskLocalFuture<RequestId, F> {
        REQUEST_ID.scope(self, fut)
    }

    /// The id of the request being handled, if any.
    pub(crate) fn current() -> Option<Self> {
        REQUEST_ID.try_with(|id| *id).ok()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Runs `f` as part of request `id`, if any (for errors made in a stream, after the handler
/// returned).
pub(crate) fn in_request<R>(id: Option<RequestId>, f: impl FnOnce() -> R) -> R {
    match id {
        Some(id) => id.scope(f),
        None => f(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct_text_and_valid_headers() {
        let a = RequestId::new();
        let b = RequestId::new();
        assert_ne!(a, b);
        assert!(
            a.as_str().starts_with("req_") && a.as_str().len() == 20,
            "{a}"
        );
        assert!(a.as_str()[4..].bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(a.header().unwrap().to_str().unwrap(), a.as_str());
        assert_eq!(RequestId::current(), None);
        assert_eq!(a.scope(RequestId::current), Some(a));
        assert_eq!(in_request(Some(b), RequestId::current), Some(b));
        assert_eq!(RequestId::parse(a.as_str()), Some(a));
        for bad in [
            "",
            "req_",
            "req_0123456789abcdeF",
            "xyz_0123456789abcdef",
            "req_0123456789abcdef0",
        ] {
            assert_eq!(RequestId::parse(bad), None, "{bad}");
        }
    }
}
