//! [`with_concurrency_limit`] and [`with_rate_limit`]: per-tool limits on calls.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::Instant;

use super::layer::{ToolLayer, require_runtime};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Lets at most `max` calls of the tool run at once; the others wait their turn, in order.
///
/// Each wrapped tool gets its own limit. A call that is cancelled while waiting (its future
/// dropped) leaves the queue. With [`max_wait`](Self::max_wait), a call that cannot start in
/// time fails with a retryable [`RateLimited`](crate::error::ToolErrorKind::RateLimited) error
/// instead of waiting on. A limit of 0 is taken as 1.
///
/// ```
/// use tinyagent::tools;
///
/// let calc = tools::wrap_tool(tinyagent_demo::calculator_tool(), [tools::middleware::ConcurrencyLimitLayer::new(4).into()]);
/// # let _ = calc;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ConcurrencyLimitLayer {
    max: usize,
    max_wait: Option<Duration>,
}

impl ConcurrencyLimitLayer {
    /// At most `max` calls in flight per tool; callers wait as long as it takes.
    pub fn new(max: usize) -> Self {
        Self {
            max: max.clamp(1, Semaphore::MAX_PERMITS),
            max_wait: None,
        }
    }

    /// Fails a call that has waited this long for its turn, instead of waiting on.
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait);
        self
    }
}

impl ToolLayer for ConcurrencyLimitLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(ConcurrencyHandler {
            next,
            semaphore: Semaphore::new(self.max),
            limit: *self,
            tool_name: tool.name().into(),
        })
    }
}

struct ConcurrencyHandler {
    next: Arc<dyn Handler>,
    semaphore: Semaphore,
    limit: ConcurrencyLimitLayer,
    tool_name: Arc<str>,
}

impl ConcurrencyHandler {
    fn busy(&self) -> ToolError {
        ToolError::rate_limited(format!(
            "tool {} is busy: it already runs its limit of {} calls at once; try again shortly",
            self.tool_name, self.limit.max
        ))
    }
}

impl Handler for ConcurrencyHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let permit = match self.semaphore.try_acquire() {
                Ok(permit) => permit,
                Err(_) => match self.limit.max_wait {
                    None => self.semaphore.acquire().await.map_err(|_| self.busy())?,
                    Some(wait) => {
                        require_runtime("with_concurrency_limit")?;
                        match tokio::time::timeout(wait, self.semaphore.acquire()).await {
                            Ok(Ok(permit)) => permit,
                            _ => return Err(self.busy()),
                        }
                    }
                },
            };
            let result = self.next.call(ctx, input).await;
            drop(permit);
            result
        })
    }
}

/// Lets at most `calls` calls of the tool start in any window of `per`; the others wait for
/// a slot.
///
/// The algorithm is an exact sliding window: the limiter keeps the start times of the last
/// `calls` calls, and a new call starts no earlier than `per` after the oldest of them. So
/// bursts of up to `calls` go through at once, and no window of length `per` ever holds more
/// than `calls` starts (a token bucket or GCRA would allow nearly twice that across a window
/// boundary). Slots are handed out in arrival order; a call cancelled while waiting still
/// uses its slot, which errs on the side of the limit. Each wrapped tool gets its own limiter.
///
/// With [`max_wait`](Self::max_wait), a call whose slot is further away than that fails at
/// once with a retryable [`RateLimited`](crate::error::ToolErrorKind::RateLimited) error saying when
/// to try again. A limit of 0 calls is taken as 1.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::tools;
///
/// // At most 10 weather look-ups per minute.
/// let weather = tools::wrap_tool(tinyagent_demo::weather_tool(),
///     [tools::middleware::RateLimitLayer::new(10, Duration::from_secs(60)).into()]);
/// # let _ = weather;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RateLimitLayer {
    calls: usize,
    per: Duration,
    max_wait: Option<Duration>,
}

impl RateLimitLayer {
    /// At most `calls` calls started per `per`, per tool; callers wait for their slot.
    pub fn new(calls: usize, per: Duration) -> Self {
        Self {
            calls: calls.max(1),
            per,
            max_wait: None,
        }
    }

    /// Fails a call at once when its slot is further away than `wait`.
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait);
        self
    }
}

impl ToolLayer for RateLimitLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        Arc::new(RateHandler {
            next,
            starts: Mutex::new(VecDeque::with_capacity(self.calls.min(1024))),
            limit: *self,
            tool_name: tool.name().into(),
        })
    }
}

struct RateHandler {
    next: Arc<dyn Handler>,
    /// Start times (some possibly in the future: reserved slots) of the last `calls` calls,
    /// oldest first; never decreasing.
    starts: Mutex<VecDeque<Instant>>,
    limit: RateLimitLayer,
    tool_name: Arc<str>,
}

impl RateHandler {
    /// Reserves the earliest slot for a call arriving now, or says how long it would wait.
    fn reserve(&self, now: Instant) -> Result<Instant, Duration> {
        let mut starts = self.starts.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match starts.front() {
            Some(&oldest) if starts.len() >= self.limit.calls => {
                match oldest.checked_add(self.limit.per) {
                    Some(next) => now.max(next),
                    // A period too long to represent: the next slot never comes.
                    None => return Err(self.limit.per),
                }
            }
            _ => now,
        };
        let wait = slot - now;
        if self.limit.max_wait.is_some_and(|max| wait > max) {
            return Err(wait);
        }
        if starts.len() >= self.limit.calls {
            starts.pop_front();
        }
        starts.push_back(slot);
        Ok(slot)
    }
}

impl Handler for RateHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let now = Instant::now();
            match self.reserve(now) {
                Ok(slot) if slot > now => {
                    require_runtime("with_rate_limit")?;
                    tokio::time::sleep_until(slot).await;
                }
                Ok(_) => {}
                Err(wait) => {
                    return Err(ToolError::rate_limited(format!(
                        "tool {} is rate limited to {} calls per {:?}; try again in {:?}",
                        self.tool_name, self.limit.calls, self.limit.per, wait
                    )));
                }
            }
            self.next.call(ctx, input).await
        })
    }
}
