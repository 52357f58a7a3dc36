//! The circuit breaker shared by `CircuitBreakerLayer`
//! (tools) and [`CircuitBreakerModel`](crate::model::CircuitBreakerModel) (models).
//!
//! Closed, it lets every call through and counts consecutive failures; at the threshold it
//! opens. Open, it refuses calls at once until the cool-down has passed. Then it is half-open:
//! one call goes through as a probe while the others are still refused; a probe that succeeds
//! closes the breaker, one that fails opens it again for another cool-down, and one that is
//! dropped before it ends lets the next call probe.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::util::lock;

/// Consecutive failures that open a breaker, unless set.
#[doc(hidden)]
pub const DEFAULT_FAILURES: u32 = 5;
/// How long an open breaker refuses calls before it lets a probe through, unless set.
#[doc(hidden)]
pub const DEFAULT_COOL_DOWN: Duration = Duration::from_secs(30);

#[derive(Debug)]
#[doc(hidden)]
pub struct Breaker {
    failures_to_open: u32,
    cool_down: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant, failures: u32 },
    Probing { failures: u32 },
}

/// Why a call was refused: how many failures opened the breaker and when it lets a probe in.
#[derive(Debug, Clone, Copy)]
pub struct Refusal {
    pub failures: u32,
    pub retry_in: Duration,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "its circuit breaker is open after {} consecutive failures; the next try is in {:.1?}",
            self.failures, self.retry_in
        )
    }
}

/// A call let through; report its outcome with [`Permit::succeeded`] or [`Permit::failed`].
/// Dropped without either (the call was cancelled), it counts as neither.
#[must_use]
pub struct Permit<'a> {
    breaker: &'a Breaker,
    probe: bool,
    done: bool,
}

impl Breaker {
    pub fn new(failures_to_open: u32, cool_down: Duration) -> Self {
        Self {
            failures_to_open: failures_to_open.max(1),
            cool_down,
            state: Mutex::new(State::Closed { failures: 0 }),
        }
    }

    pub fn failures_to_open(&self) -> u32 {
        self.failures_to_open
    }

    pub fn cool_down(&self) -> Duration {
        self.cool_down
    }

    /// Lets a call through, or says why not.
    pub fn admit(&self) -> Result<Permit<'_>, Refusal> {
        let mut state = lock(&self.state);
        let now = Instant::now();
        let probe = match *state {
            State::Closed { .. } => false,
            State::Open { until, failures } if now >= until => {
                *state = State::Probing { failures };
                true
            }
            State::Open { until, failures } => {
                return Err(Refusal {
                    failures,
                    retry_in: until - now,
                });
            }
            State::Probing { failures } => {
                return Err(Refusal {
                    failures,
                    retry_in: Duration::ZERO,
                });
            }
        };
        Ok(Permit {
            breaker: self,
            probe,
            done: false,
        })
    }

    fn finish(&self, probe: bool, outcome: Option<bool>) {
        let mut state = lock(&self.state);
        *state = match (*state, outcome) {
            // A cancelled probe: the next call probes.
            (State::Probing { failures }, None) if probe => State::Open {
                until: Instant::now(),
                failures,
            },
            (_, None) => *state,
            (_, Some(true)) => State::Closed { failures: 0 },
            (State::Closed { failures }, Some(false)) if failures + 1 < self.failures_to_open => {
                State::Closed {
                    failures: failures + 1,
                }
            }
            (State::Closed { failures }, Some(false))
            | (State::Open { failures, .. }, Some(false))
            | (State::Probing { failures }, Some(false)) => State::Open {
                until: Instant::now() + self.cool_down,
                failures: (failures + 1).max(self.failures_to_open),
            },
        };
    }
}

impl Permit<'_> {
    /// The call failed in a way that says nothing about the dependency's health (bad
    /// arguments, a refused request): the count stays; a probe lets the next call probe.
    pub fn neutral(self) {
        drop(self);
    }

    /// The call worked.
    pub fn succeeded(mut self) {
        self.done = true;
        self.breaker.finish(self.probe, Some(true));
    }

    /// The call failed in a way that counts: the dependency is down, slow or refusing.
    pub fn failed(mut self) {
        self.done = true;
        self.breaker.finish(self.probe, Some(false));
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.breaker.finish(self.probe, None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn opens_fails_fast_probes_once_and_closes() {
        let b = Breaker::new(2, Duration::from_secs(10));
        b.admit().unwrap().failed();
        b.admit().unwrap().succeeded(); // a success resets the count
        b.admit().unwrap().failed();
        b.admit().unwrap().failed(); // two in a row: open
        let refusal = b.admit().err().unwrap();
        assert_eq!(refusal.failures, 2);
        assert_eq!(refusal.retry_in, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(4)).await;
        assert_eq!(b.admit().err().unwrap().retry_in, Duration::from_secs(6));
        tokio::time::advance(Duration::from_secs(6)).await;
        let probe = b.admit().unwrap();
        assert!(b.admit().is_err(), "one probe at a time");
        probe.failed(); // the probe fails: open for another cool-down
        assert_eq!(b.admit().err().unwrap().retry_in, Duration::from_secs(10));
        tokio::time::advance(Duration::from_secs(10)).await;
        drop(b.admit().unwrap()); // a cancelled probe lets the next call probe
        b.admit().unwrap().succeeded();
        b.admit().unwrap().succeeded();
        b.admit().unwrap().failed();
        assert!(
            b.admit().is_ok(),
            "closed again: one failure does not open it"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn failures_that_say_nothing_neither_count_nor_reset() {
        let b = Breaker::new(2, Duration::from_secs(10));
        b.admit().unwrap().failed();
        b.admit().unwrap().neutral();
        b.admit().unwrap().failed();
        assert!(
            b.admit().is_err(),
            "two failures in a row, a bad request between them"
        );
        tokio::time::advance(Duration::from_secs(10)).await;
        b.admit().unwrap().neutral(); // a probe that says nothing: the next call probes
        let probe = b.admit().unwrap();
        assert!(b.admit().is_err());
        probe.succeeded();
        assert!(b.admit().is_ok());
    }
}
