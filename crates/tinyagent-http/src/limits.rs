//! The limits one call runs within ([`Limits`]) and the attempts and deadline of a call
//! ([`Budget`]).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

/// How a provider's calls retry and how long they may wait: the part of a provider's
/// configuration this crate reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How often a failed request (429, 5xx, a connection failure, a timeout, a cut stream)
    /// is retried.
    pub max_retries: u32,
    /// The first retry's backoff; it doubles on each retry, with jitter.
    pub initial_backoff: Duration,
    /// The longest backoff between two attempts.
    pub max_backoff: Duration,
    /// The longest wait a server's `Retry-After` may ask for; a longer one is cut to this.
    pub max_retry_after: Duration,
    /// How long the server may take to start answering (headers, then a stream's first
    /// event).
    pub first_byte_timeout: Duration,
    /// How long a stream may stay silent between two events (and a body between two chunks).
    pub idle_timeout: Duration,
    /// A deadline for a whole call, every retry and wait included; `None` for none.
    pub request_timeout: Option<Duration>,
    /// The most bytes of one response body read.
    pub max_reply_bytes: usize,
    /// The token limit the request carries, named in the error of a reply that grew too
    /// large.
    pub max_tokens: Option<u32>,
}

impl Default for Limits {
    /// 2 retries from 500 ms backoff (at most 30 s), `Retry-After` honoured up to 60 s, 60 s
    /// to the first byte and between events, 600 s for a whole call, 16 MiB replies.
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Some(Duration::from_secs(600)),
            max_reply_bytes: 16 * 1024 * 1024,
            max_tokens: None,
        }
    }
}

/// Which limit a wait runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The first byte of an answer (headers, then a stream's first event).
    FirstByte,
    /// The silence between two events or chunks.
    Idle,
    /// The whole call's deadline.
    Whole,
}

/// The attempts of one call and its deadline.
#[derive(Debug)]
pub struct Budget {
    /// Retries made so far.
    pub attempt: u32,
    /// When the current attempt started.
    pub attempt_started: Instant,
    /// When the whole call must be over.
    pub deadline: Option<Instant>,
}

impl Budget {
    /// A call starting now.
    pub fn new(limits: &Limits) -> Self {
        let now = Instant::now();
        Self {
            attempt: 0,
            attempt_started: now,
            deadline: limits.request_timeout.map(|t| now + t),
        }
    }

    /// The instant a wait of kind `limit` ends at, and the limit that ends it first (the
    /// call's deadline may come before).
    pub fn limit(&self, limit: Limit, limits: &Limits) -> (Limit, Instant) {
        let at = match limit {
            Limit::FirstByte => self.attempt_started + limits.first_byte_timeout,
            Limit::Idle => Instant::now() + limits.idle_timeout,
            Limit::Whole => return (Limit::Whole, self.deadline.unwrap_or_else(far_future)),
        };
        match self.deadline {
            Some(deadline) if deadline < at => (Limit::Whole, deadline),
            _ => (limit, at),
        }
    }
}

/// An instant no call reaches (about thirty years away).
pub fn far_future() -> Instant {
    Instant::now() + Duration::from_secs(86_400 * 365 * 30)
}

/// A duration for people: `60 s`, `0.3 s`.
pub fn secs(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// Exponential backoff with jitter: `initial * 2^attempt`, capped, then a random point in
/// its upper half.
pub fn backoff(limits: &Limits, attempt: u32) -> Duration {
    let base = limits
        .initial_backoff
        .saturating_mul(1u32 << attempt.min(20))
        .min(limits.max_backoff);
    let half = base / 2;
    let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
    let jitter = if nanos == 0 {
        0
    } else {
        RandomState::new().hash_one((attempt, SystemTime::now())) % nanos
    };
    half + Duration::from_nanos(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let limits = Limits {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(1000),
            ..Limits::default()
        };
        for attempt in 0..30 {
            let d = backoff(&limits, attempt);
            let base = (100u64 << attempt.min(20)).min(1000);
            let d = d.as_millis() as u64;
            assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d}ms");
        }
        let zero = Limits {
            initial_backoff: Duration::ZERO,
            max_backoff: Duration::ZERO,
            ..Limits::default()
        };
        assert_eq!(backoff(&zero, 3), Duration::ZERO);
    }

    #[test]
    fn durations_for_people() {
        assert_eq!(secs(Duration::from_secs(60)), "60 s");
        assert_eq!(secs(Duration::from_millis(300)), "0.3 s");
    }
}
