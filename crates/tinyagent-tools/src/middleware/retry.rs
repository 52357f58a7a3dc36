//! [`with_retry`]: retries of retryable errors, with exponential backoff and jitter.

use std::sync::Arc;
use std::time::Duration;

use super::layer::{ToolLayer, ToolMiddleware, require_runtime};
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::util::BoxFuture;
use crate::{Handler, Tool, ToolInput, ToolOutput};

/// Retries failed calls, with backoff, jitter and a policy on what is safe to repeat.
///
/// A call is tried once and retried up to [`max_retries`](Self::max_retries) times. Before
/// retry `k` (counting from 0) the policy waits a random delay between half and all of
/// `min(cap, base * 2^k)` ("equal jitter": the delay still grows, and many callers failing
/// together do not retry in step). Defaults: base 100 ms, cap 10 s.
///
/// What is retried:
///
/// - only errors marked [retryable](ToolError::is_retryable) (timeouts, unavailability and
///   rate limits by default, or any error the tool marked so);
/// - never [`InvalidInput`](ToolErrorKind::InvalidInput),
///   [`Denied`](ToolErrorKind::Denied) or [`Cancelled`](ToolErrorKind::Cancelled) errors, even
///   when marked retryable: the same call would fail the same way;
/// - for a tool whose [hints](crate::ToolHints) say repeating is not safe (neither read-only
///   nor idempotent, the default for a tool that says nothing), only
///   [`RateLimited`](ToolErrorKind::RateLimited) errors, which mean the call was refused before
///   it did anything. A timed-out or failed call of such a tool may have half-happened, and
///   running it again could, say, send an email twice. [`ignore_hints`](Self::ignore_hints)
///   lifts this rule. Wrapping such a tool logs a warning once, when the stack is built, saying
///   so: mark the tool [`read_only`](crate::FuncTool::read_only) or
///   [`idempotent`](crate::FuncTool::idempotent) (or give it those
///   [hints](crate::ToolHints)) when repeating it is safe.
///
/// A tool's own error type says whether it is retryable through
/// [`ToolErrorKindHint`](crate::ToolErrorKindHint) (or by returning a [`ToolError`]
/// marked [`retryable`](ToolError::retryable)); a plain error is a non-retryable
/// [`Failed`](ToolErrorKind::Failed) one.
///
/// When retries were made and the call still fails, the error keeps the last error's kind and
/// retryable flag, says `tool call failed after {n} attempts: {last message}`, and has the last
/// error as its [source](std::error::Error::source). An error returned on the first attempt
/// comes back unchanged.
///
/// Cancellation is dropping the call's future: the backoff sleep is dropped with it, so no
/// further attempt starts. Needs a Tokio runtime with its time driver to sleep; without one,
/// the first error is returned as is.
///
/// ```
/// use std::time::Duration;
/// use tinyagent::tools::{self, middleware::{RetryLayer, ToolMiddleware}};
///
/// let retry: ToolMiddleware = RetryLayer::new(3)
///     .base(Duration::from_millis(200))
///     .cap(Duration::from_secs(5))
///     .into();
/// let calc = tools::wrap_tool(tinyagent_demo::calculator_tool(), [retry]);
/// # let _ = calc;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RetryLayer {
    max_retries: u32,
    base: Duration,
    cap: Duration,
    jitter: bool,
    ignore_hints: bool,
}

impl RetryLayer {
    /// Up to `max_retries` retries after the first attempt, base 100 ms, cap 10 s, with jitter,
    /// respecting the tool's hints.
    pub fn new(max_retries: u32) -> Self {
        Self {
            max_retries,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
            jitter: true,
            ignore_hints: false,
        }
    }

    /// The delay before the first retry, before jitter; doubled for each further retry.
    #[must_use]
    pub fn base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// The longest delay between two attempts, before jitter.
    #[must_use]
    pub fn cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// Whether delays are randomised between half and all of the backoff (default `true`).
    /// Without jitter the delays are exactly [`backoff`](Self::backoff).
    #[must_use]
    pub fn jitter(mut self, jitter: bool) -> Self {
        self.jitter = jitter;
        self
    }

    /// Retries retryable errors of every tool, even one whose hints say repeating it is not
    /// safe (default `false`).
    #[must_use]
    pub fn ignore_hints(mut self, ignore: bool) -> Self {
        self.ignore_hints = ignore;
        self
    }

    /// The most retries after the first attempt.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// The backoff before retry `retry` (counting from 0), before jitter:
    /// `min(cap, base * 2^retry)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tinyagent::tools::middleware::RetryLayer;
    ///
    /// let p = RetryLayer::new(5).base(Duration::from_millis(100)).cap(Duration::from_millis(500));
    /// assert_eq!(p.backoff(0), Duration::from_millis(100));
    /// assert_eq!(p.backoff(2), Duration::from_millis(400));
    /// assert_eq!(p.backoff(3), Duration::from_millis(500));
    /// assert_eq!(p.backoff(200), Duration::from_millis(500));
    /// ```
    pub fn backoff(&self, retry: u32) -> Duration {
        2u32.checked_pow(retry)
            .and_then(|factor| self.base.checked_mul(factor))
            .map_or(self.cap, |d| d.min(self.cap))
    }

    /// The delay actually slept before retry `retry`: the backoff, jittered if asked.
    fn delay(&self, retry: u32) -> Duration {
        let backoff = self.backoff(retry);
        if self.jitter {
            let factor = 0.5 + fastrand::f64() * 0.5;
            // Not `mul_f64`, which panics when rounding lands past `Duration::MAX`.
            Duration::try_from_secs_f64(backoff.as_secs_f64() * factor)
                .map_or(backoff, |d| d.min(backoff))
        } else {
            backoff
        }
    }

    fn should_retry(&self, err: &ToolError, repeatable: bool) -> bool {
        match err.kind() {
            ToolErrorKind::InvalidInput
            | ToolErrorKind::Denied
            | ToolErrorKind::Cancelled
            | ToolErrorKind::Deferred => false,
            ToolErrorKind::RateLimited => err.is_retryable(),
            _ => err.is_retryable() && repeatable,
        }
    }
}

/// Retries up to `max_retries` times with the default backoff; see [`RetryLayer`].
pub fn with_retry(max_retries: u32) -> ToolMiddleware {
    RetryLayer::new(max_retries).into()
}

impl ToolLayer for RetryLayer {
    fn layer(&self, tool: &dyn Tool, next: Arc<dyn Handler>) -> Arc<dyn Handler> {
        if self.max_retries == 0 {
            return next;
        }
        let repeatable = self.ignore_hints || tool.hints().is_repeatable();
        if !repeatable {
            tracing::warn!(
                gen_ai.tool.name = tool.name(),
                "with_retry on tool {:?}, which is neither read-only nor idempotent: only its \
                 rate-limited errors will be retried, since a failed call may have half-happened; \
                 mark the tool read-only or idempotent if repeating it is safe, or use \
                 RetryLayer::ignore_hints",
                tool.name()
            );
        }
        Arc::new(RetryHandler {
            next,
            policy: *self,
            repeatable,
            tool_name: tool.name().into(),
        })
    }
}

struct RetryHandler {
    next: Arc<dyn Handler>,
    policy: RetryLayer,
    repeatable: bool,
    tool_name: Arc<str>,
}

impl Handler for RetryHandler {
    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let mut retries = 0u32;
            loop {
                let err = match self.next.call(ctx, input.clone()).await {
                    Ok(output) => return Ok(output),
                    Err(err) => err,
                };
                let attempts = retries + 1;
                if retries >= self.policy.max_retries
                    || !self.policy.should_retry(&err, self.repeatable)
                    || require_runtime("with_retry").is_err()
                {
                    return Err(give_up(err, attempts));
                }
                let delay = self.policy.delay(retries);
                tracing::warn!(
                    gen_ai.tool.name = &*self.tool_name,
                    attempt = attempts,
                    error = %crate::redact::for_log(err.message()),
                    error.type = err.kind().as_str(),
                    retry_in_ms = delay.as_secs_f64() * 1000.0,
                    "tool call failed, retrying"
                );
                tokio::time::sleep(delay).await;
                retries += 1;
            }
        })
    }
}

fn give_up(last: ToolError, attempts: u32) -> ToolError {
    if attempts == 1 {
        return last;
    }
    ToolError::new(
        last.kind(),
        format!(
            "tool call failed after {attempts} attempts: {}",
            last.message()
        ),
    )
    .retryable(last.is_retryable())
    .with_source(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jittered_delays_stay_within_half_and_all_of_the_backoff() {
        let policy = RetryLayer::new(100)
            .base(Duration::from_millis(10))
            .cap(Duration::MAX);
        for retry in 0..100 {
            let full = policy.backoff(retry);
            for _ in 0..20 {
                let d = policy.delay(retry);
                assert!(
                    d >= full / 2 && d <= full,
                    "retry {retry}: {d:?} vs {full:?}"
                );
            }
        }
        assert_eq!(policy.backoff(99), Duration::MAX);
    }
}
