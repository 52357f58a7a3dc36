//! The attempts and deadline of one call ([`Attempts`]), the backoff between attempts, and
//! which limit a wait runs against.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use crate::HttpSettings;

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
pub struct Attempts {
    /// Retries made so far.
    pub attempt: u32,
    /// When the current attempt started.
    pub attempt_started: Instant,
    /// When the whole call must be over.
    pub deadline: Option<Instant>,
}

impl Attempts {
    /// A call starting now.
    pub fn new(settings: &HttpSettings) -> Self {
        let now = Instant::now();
        Self {
            attempt: 0,
            attempt_started: now,
            deadline: settings.request_timeout.map(|t| now + t),
        }
    }

    /// The instant a wait of kind `limit` ends at, and the limit that ends it first (the
    /// call's deadline may come before).
    pub fn limit(&self, limit: Limit, settings: &HttpSettings) -> (Limit, Instant) {
        let at = match limit {
            Limit::FirstByte => self.attempt_started + settings.first_byte_timeout,
            Limit::Idle => Instant::now() + settings.idle_timeout,
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
pub fn backoff(settings: &HttpSettings, attempt: u32) -> Duration {
    let base = settings
        .initial_backoff
        .saturating_mul(1u32 << attempt.min(20))
        .min(settings.max_backoff);
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
    use crate::HttpConfig;

    #[test]
    fn backoff_grows_with_jitter_and_is_capped() {
        let limits = HttpSettings::default()
            .backoff(Duration::from_millis(100), Duration::from_millis(1000));
        for attempt in 0..30 {
            let d = backoff(&limits, attempt);
            let base = (100u64 << attempt.min(20)).min(1000);
            let d = d.as_millis() as u64;
            assert!(d >= base / 2 && d <= base, "attempt {attempt}: {d}ms");
        }
        let zero = HttpSettings::default().backoff(Duration::ZERO, Duration::ZERO);
        assert_eq!(backoff(&zero, 3), Duration::ZERO);
    }

    #[test]
    fn durations_for_people() {
        assert_eq!(secs(Duration::from_secs(60)), "60 s");
        assert_eq!(secs(Duration::from_millis(300)), "0.3 s");
    }
}
