//! Behaviour of the tool middleware: order, timeout, retry, validation, limits, cache,
//! logging and redaction, output budget, approval, tower interop.

use std::error::Error as _;
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use tinyagent::tools::{
    self,
    middleware::{
        Approval, ApprovalRequest, CacheLayer, ConcurrencyLimitLayer, LoggingLayer, RateLimitLayer,
        RetryLayer, ToolMiddleware,
    },
};
use tinyagent::{Handler, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, handler_fn};
use tokio::time::Instant;

/// A tool named `probe` with a permissive schema, the given hints and handler.
fn probe<F, Fut>(hints: ToolHints, f: F) -> Arc<dyn Tool>
where
    F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send + 'static,
{
    Arc::new(
        tools::try_new_tool("probe", "a probe tool", json!({"type": "object"}), f)
            .unwrap()
            .with_hints(hints),
    )
}

/// A tool that fails with `fail(attempt)` while it returns `Some`, then succeeds; it counts its
/// calls and records when each started.
struct Flaky {
    tool: Arc<dyn Tool>,
    calls: Arc<AtomicU32>,
    starts: Starts,
}

fn flaky(
    hints: ToolHints,
    fail: impl Fn(u32) -> Option<ToolError> + Send + Sync + 'static,
) -> Flaky {
    let calls = Arc::new(AtomicU32::new(0));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let fail = Arc::new(fail);
    let tool = {
        let (calls, starts) = (calls.clone(), starts.clone());
        probe(hints, move |_ctx, _input| {
            let attempt = calls.fetch_add(1, Ordering::SeqCst);
            starts.lock().unwrap().push(Instant::now());
            let outcome = fail(attempt);
            async move {
                match outcome {
                    Some(err) => Err(err),
                    None => Ok(format!("ok after {} attempts", attempt + 1)),
                }
            }
        })
    };
    Flaky {
        tool,
        calls,
        starts,
    }
}

fn ctx() -> ToolContext {
    ToolContext::default()
}

// ---------------------------------------------------------------------------------------------
// Onion order

#[tokio::test]
async fn first_listed_middleware_is_outermost_and_wrapped_tool_keeps_its_identity() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let recorder = |name: &'static str| {
        let log = log.clone();
        tools::middleware::layer_fn(move |next: Arc<dyn Handler>| -> Arc<dyn Handler> {
            let log = log.clone();
            Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
                let (next, log) = (next.clone(), log.clone());
                async move {
                    log.lock()
                        .unwrap()
                        .push(format!("{name} sees call {input}"));
                    let out = next.handle(&ctx, &format!("{input}>{name}")).await;
                    let shown = out.as_deref().unwrap_or("error").to_owned();
                    log.lock()
                        .unwrap()
                        .push(format!("{name} sees result {shown}"));
                    out.map(|o| format!("{o}<{name}"))
                }
            }))
        })
    };
    let inner = {
        let log = log.clone();
        probe(ToolHints::READ_ONLY, move |_ctx, input| {
            log.lock().unwrap().push(format!("tool runs with {input}"));
            async move { Ok(format!("[{input}]")) }
        })
    };
    let wrapped = tools::wrap_tool(
        inner.clone(),
        [
            recorder("a").into(),
            recorder("b").into(),
            recorder("c").into(),
        ],
    );

    assert_eq!(wrapped.name(), inner.name());
    assert_eq!(wrapped.description(), inner.description());
    assert_eq!(wrapped.input_schema(), inner.input_schema());
    assert_eq!(wrapped.hints(), inner.hints());

    let out = wrapped.handle(&ctx(), "x").await.unwrap();
    assert_eq!(out, "[x>a>b>c]<c<b<a");
    assert_eq!(
        *log.lock().unwrap(),
        [
            "a sees call x",
            "b sees call x>a",
            "c sees call x>a>b",
            "tool runs with x>a>b>c",
            "c sees result [x>a>b>c]",
            "b sees result [x>a>b>c]<c",
            "a sees result [x>a>b>c]<c<b",
        ]
    );
}

#[tokio::test]
async fn shipped_middleware_compose_in_one_list() {
    let weather = tools::wrap_tool(
        tinyagent_demo::weather_tool(),
        [
            tools::with_logging(),
            tools::middleware::ApprovalLayer::new(tools::middleware::approval_fn(
                |_req: ApprovalRequest| async { Approval::Approve },
            ))
            .into(),
            tools::middleware::ValidationLayer::new().into(),
            tools::middleware::CacheLayer::new()
                .ttl(Duration::from_secs(60))
                .capacity(10)
                .into(),
            tools::middleware::RateLimitLayer::new(100, Duration::from_secs(1)).into(),
            tools::middleware::ConcurrencyLimitLayer::new(4).into(),
            tools::with_retry(2),
            tools::with_timeout(Duration::from_secs(3)),
            tools::middleware::OutputLimitLayer::new(1000).into(),
        ],
    );
    let out = weather.handle(&ctx(), r#"{"city":"上海"}"#).await.unwrap();
    let value: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(value["city"], "上海");
    assert_eq!(value["condition"], "多云");
}

// ---------------------------------------------------------------------------------------------
// Timeout

#[tokio::test(start_paused = true)]
async fn timeout_drops_the_tool_future_so_late_side_effects_never_happen() {
    let side_effect = Arc::new(AtomicBool::new(false));
    let finished = side_effect.clone();
    let slow = probe(ToolHints::READ_ONLY, move |_ctx, _input| {
        let finished = finished.clone();
        async move {
            tokio::time::sleep(Duration::from_secs(10)).await;
            finished.store(true, Ordering::SeqCst);
            Ok("late".to_owned())
        }
    });
    let bounded = tools::wrap_tool(slow, [tools::with_timeout(Duration::from_secs(3))]);

    let started = Instant::now();
    let err = bounded.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::TimedOut);
    assert_eq!(err.to_string(), "tool execution timed out after 3s");
    assert_eq!(started.elapsed(), Duration::from_secs(3));

    // Long after the tool would have finished, its side effect has not happened.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(!side_effect.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn timeout_lets_fast_calls_through() {
    let quick = probe(ToolHints::READ_ONLY, |_ctx, input| async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        Ok(input)
    });
    let bounded = tools::wrap_tool(quick, [tools::with_timeout(Duration::from_secs(1))]);
    assert_eq!(
        bounded.handle(&ctx(), "{\"a\":1}").await.unwrap(),
        "{\"a\":1}"
    );
}

#[test]
fn timeout_without_a_runtime_is_an_error_not_a_panic() {
    let bounded = tools::wrap_tool(
        tinyagent_demo::calculator_tool(),
        [tools::with_timeout(Duration::from_secs(1))],
    );
    let err = futures::executor::block_on(bounded.handle(&ctx(), "{}")).unwrap_err();
    assert!(err.message().contains("Tokio runtime"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Retry

#[tokio::test(start_paused = true)]
async fn retry_repeats_until_success() {
    let f = flaky(ToolHints::READ_ONLY, |attempt| {
        (attempt < 2).then(|| ToolError::unavailable("upstream down"))
    });
    let retried = tools::wrap_tool(f.tool, [tools::with_retry(3)]);
    assert_eq!(
        retried.handle(&ctx(), "{}").await.unwrap(),
        "ok after 3 attempts"
    );
    assert_eq!(f.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn retry_gives_up_after_n_retries_and_wraps_the_last_error() {
    let f = flaky(ToolHints::READ_ONLY, |attempt| {
        Some(ToolError::unavailable(format!(
            "upstream down (try {})",
            attempt + 1
        )))
    });
    let retried = tools::wrap_tool(f.tool, [tools::with_retry(3)]);
    let err = retried.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(
        f.calls.load(Ordering::SeqCst),
        4,
        "one attempt plus three retries"
    );
    assert_eq!(err.kind(), ToolErrorKind::Unavailable);
    assert_eq!(
        err.to_string(),
        "tool call failed after 4 attempts: upstream down (try 4)"
    );
    let source = err.source().expect("the last error is the source");
    assert_eq!(source.to_string(), "upstream down (try 4)");
}

#[tokio::test(start_paused = true)]
async fn retry_backoff_grows_exponentially_within_jitter_bounds() {
    let policy = RetryLayer::new(6)
        .base(Duration::from_millis(100))
        .cap(Duration::from_millis(1500));
    let f = flaky(ToolHints::READ_ONLY, |_| Some(ToolError::timed_out("slow")));
    let retried = tools::wrap_tool(f.tool, [policy.into()]);
    retried.handle(&ctx(), "{}").await.unwrap_err();

    let starts = f.starts.lock().unwrap().clone();
    assert_eq!(starts.len(), 7);
    let expected_ms = [100u64, 200, 400, 800, 1500, 1500];
    for (k, pair) in starts.windows(2).enumerate() {
        let gap = pair[1] - pair[0];
        let full = Duration::from_millis(expected_ms[k]);
        assert_eq!(policy.backoff(k as u32), full);
        assert!(
            gap >= full / 2 && gap <= full,
            "retry {k}: waited {gap:?}, expected between {:?} and {full:?}",
            full / 2
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retry_without_jitter_waits_exactly_the_backoff() {
    let policy = RetryLayer::new(3)
        .base(Duration::from_millis(250))
        .jitter(false);
    let f = flaky(ToolHints::READ_ONLY, |_| Some(ToolError::timed_out("slow")));
    let retried = tools::wrap_tool(f.tool, [policy.into()]);
    let started = Instant::now();
    retried.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(250 + 500 + 1000));
}

#[tokio::test(start_paused = true)]
async fn retry_stops_when_the_call_is_cancelled_mid_backoff() {
    let policy = RetryLayer::new(10)
        .base(Duration::from_secs(1))
        .cap(Duration::from_secs(60));
    let f = flaky(ToolHints::READ_ONLY, |_| {
        Some(ToolError::unavailable("down"))
    });
    let retried = tools::wrap_tool(f.tool, [policy.into()]);

    // Attempt 1 at 0 s, attempt 2 after 0.5-1 s, attempt 3 after another 1-2 s. At 2.5 s the
    // call is in a backoff sleep, or has just made attempt 3; cancel it there.
    let cancelled =
        tokio::time::timeout(Duration::from_millis(2500), retried.handle(&ctx(), "{}")).await;
    assert!(cancelled.is_err(), "the call was still retrying");
    let made = f.calls.load(Ordering::SeqCst);
    assert!(
        (2..=3).contains(&made),
        "{made} attempts before cancellation"
    );

    tokio::time::sleep(Duration::from_secs(600)).await;
    assert_eq!(
        f.calls.load(Ordering::SeqCst),
        made,
        "no attempt after cancellation"
    );
}

#[tokio::test(start_paused = true)]
async fn errors_not_marked_retryable_are_not_retried() {
    for make in [
        (|| ToolError::failed("bad luck")) as fn() -> ToolError,
        || ToolError::invalid_input("missing city").retryable(true),
        || ToolError::denied("no").retryable(true),
        || ToolError::cancelled("stop").retryable(true),
    ] {
        let f = flaky(ToolHints::READ_ONLY, move |_| Some(make()));
        let retried = tools::wrap_tool(f.tool, [tools::with_retry(5)]);
        let err = retried.handle(&ctx(), "{}").await.unwrap_err();
        assert_eq!(f.calls.load(Ordering::SeqCst), 1, "{err} was retried");
        assert_eq!(err.to_string(), make().to_string(), "returned unchanged");
    }
}

#[tokio::test(start_paused = true)]
async fn retry_respects_hints_unless_told_otherwise() {
    // Default hints: not idempotent, so a timeout (which may have half-happened) is not retried.
    let f = flaky(ToolHints::default(), |_| Some(ToolError::timed_out("slow")));
    let retried = tools::wrap_tool(f.tool, [tools::with_retry(3)]);
    retried.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(f.calls.load(Ordering::SeqCst), 1);

    // A rate-limit refusal means the call did nothing: safe to retry for any tool.
    let f = flaky(ToolHints::default(), |a| {
        (a == 0).then(|| ToolError::rate_limited("429"))
    });
    let retried = tools::wrap_tool(f.tool, [tools::with_retry(3)]);
    retried.handle(&ctx(), "{}").await.unwrap();
    assert_eq!(f.calls.load(Ordering::SeqCst), 2);

    // Idempotent tools are retried.
    let f = flaky(ToolHints::default().idempotent(true), |_| {
        Some(ToolError::timed_out("slow"))
    });
    let retried = tools::wrap_tool(f.tool, [tools::with_retry(2)]);
    retried.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(f.calls.load(Ordering::SeqCst), 3);

    // ignore_hints retries anything retryable.
    let f = flaky(ToolHints::default(), |_| Some(ToolError::timed_out("slow")));
    let retried = tools::wrap_tool(f.tool, [RetryLayer::new(2).ignore_hints(true).into()]);
    retried.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(f.calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn timeout_inside_retry_bounds_each_attempt() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let sometimes_slow = probe(ToolHints::READ_ONLY, move |_ctx, _input| {
        let attempt = counter.fetch_add(1, Ordering::SeqCst);
        async move {
            if attempt == 0 {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            Ok(format!("attempt {}", attempt + 1))
        }
    });
    let tool = tools::wrap_tool(
        sometimes_slow,
        [
            tools::with_retry(2),
            tools::with_timeout(Duration::from_secs(1)),
        ],
    );
    assert_eq!(tool.handle(&ctx(), "{}").await.unwrap(), "attempt 2");
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------------------------
// Validation

#[tokio::test]
async fn validation_reports_every_bad_field_before_the_handler_runs() {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let schema = json!({
        "type": "object",
        "properties": {
            "operation": {"type": "string", "enum": ["add", "subtract"]},
            "a": {"type": "number"},
            "b": {"type": "number"},
            "opts": {
                "type": "object",
                "properties": {"precision": {"type": "integer", "minimum": 0}},
                "additionalProperties": false
            }
        },
        "required": ["operation", "a", "b"]
    });
    let tool: Arc<dyn Tool> = Arc::new(
        tools::try_new_tool("calc", "calc", schema, move |_ctx, _input| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok("ran".to_owned()) }
        })
        .unwrap(),
    );
    let checked = tools::wrap_tool(tool, [tools::middleware::ValidationLayer::new().into()]);

    let err = checked
        .handle(
            &ctx(),
            r#"{"operation":"modulo","a":"ten","opts":{"precision":-1,"color":"red"}}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    let msg = err.message();
    assert!(msg.starts_with("invalid arguments (5 problems): "), "{msg}");
    assert!(
        msg.contains(r#"/operation: "modulo" is not one of"#),
        "{msg}"
    );
    assert!(
        msg.contains(r#"/a: "ten" is not of type "number""#),
        "{msg}"
    );
    assert!(msg.contains("/b: required property is missing"), "{msg}");
    assert!(
        msg.contains("/opts/precision: -1 is less than the minimum of 0"),
        "{msg}"
    );
    assert!(msg.contains("/opts/color: unexpected property"), "{msg}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "the handler never ran");

    let err = checked.handle(&ctx(), "{not json").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(err.message().contains("not valid JSON"), "{err}");

    let ok = checked
        .handle(&ctx(), r#"{"operation":"add","a":1,"b":2}"#)
        .await
        .unwrap();
    assert_eq!(ok, "ran");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn validation_on_the_seed_calculator() {
    let calc = tools::wrap_tool(
        tinyagent_demo::calculator_tool(),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let err = calc.handle(&ctx(), r#"{"a": 1}"#).await.unwrap_err();
    assert!(
        err.message()
            .contains("/operation: required property is missing"),
        "{err}"
    );
    let out = calc
        .handle(&ctx(), r#"{"operation":"add","a":10,"b":3}"#)
        .await
        .unwrap();
    assert!(out.contains("10.00 + 3.00 = 13.00"), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Limits

/// A tool that takes `work` of (paused) time and records the most calls in flight at once.
/// When each call started.
type Starts = Arc<Mutex<Vec<Instant>>>;

fn busy_tool(work: Duration) -> (Arc<dyn Tool>, Arc<AtomicUsize>, Starts) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let starts = Arc::new(Mutex::new(Vec::new()));
    let tool = {
        let (peak, starts) = (peak.clone(), starts.clone());
        probe(ToolHints::READ_ONLY, move |_ctx, _input| {
            let (in_flight, peak, starts) = (in_flight.clone(), peak.clone(), starts.clone());
            async move {
                starts.lock().unwrap().push(Instant::now());
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(work).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok("done".to_owned())
            }
        })
    };
    (tool, peak, starts)
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_holds_under_100_concurrent_calls() {
    let (tool, peak, _) = busy_tool(Duration::from_millis(10));
    let limited = tools::wrap_tool(
        tool,
        [tools::middleware::ConcurrencyLimitLayer::new(5).into()],
    );
    let c = ctx();
    let results = join_all((0..100).map(|_| limited.handle(&c, "{}"))).await;
    assert!(results.iter().all(|r| matches!(r.as_deref(), Ok("done"))));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        5,
        "never more than 5 at once, and 5 used"
    );
}

#[tokio::test(start_paused = true)]
async fn concurrency_limit_with_max_wait_refuses_late_calls() {
    let (tool, _, _) = busy_tool(Duration::from_secs(10));
    let limited = tools::wrap_tool(
        tool,
        [ConcurrencyLimitLayer::new(1)
            .max_wait(Duration::from_secs(1))
            .into()],
    );
    let c = ctx();
    let (first, second) = tokio::join!(limited.handle(&c, "{}"), limited.handle(&c, "{}"));
    assert_eq!(first.unwrap(), "done");
    let err = second.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::RateLimited);
    assert!(err.is_retryable());
    assert!(err.message().contains("probe is busy"), "{err}");
}

#[tokio::test(start_paused = true)]
async fn rate_limit_holds_under_100_concurrent_calls() {
    let (tool, _, starts) = busy_tool(Duration::from_millis(1));
    let period = Duration::from_secs(1);
    let limited = tools::wrap_tool(
        tool,
        [tools::middleware::RateLimitLayer::new(10, period).into()],
    );
    let c = ctx();
    let begin = Instant::now();
    let results = join_all((0..100).map(|_| limited.handle(&c, "{}"))).await;
    assert!(results.iter().all(|r| r.is_ok()));

    let mut starts = starts.lock().unwrap().clone();
    starts.sort();
    assert_eq!(starts.len(), 100);
    // No window of one period holds more than 10 starts...
    for pair in starts.iter().zip(starts.iter().skip(10)) {
        assert!(
            *pair.1 - *pair.0 >= period,
            "11 calls within {:?}",
            *pair.1 - *pair.0
        );
    }
    // ...and the limiter is not stingier than it must be: 10 bursts, one per period.
    assert_eq!(starts[0], begin);
    assert_eq!(starts[99] - begin, period * 9);
}

#[tokio::test(start_paused = true)]
async fn rate_limit_with_max_wait_refuses_with_a_hint_when_to_retry() {
    let (tool, _, _) = busy_tool(Duration::from_millis(1));
    let limited = tools::wrap_tool(
        tool,
        [RateLimitLayer::new(2, Duration::from_secs(60))
            .max_wait(Duration::from_secs(1))
            .into()],
    );
    limited.handle(&ctx(), "{}").await.unwrap();
    limited.handle(&ctx(), "{}").await.unwrap();
    let err = limited.handle(&ctx(), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::RateLimited);
    assert!(
        err.message()
            .starts_with("tool probe is rate limited to 2 calls per 60s; try again in 59.99"),
        "{err}"
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    limited.handle(&ctx(), "{}").await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// Cache

fn counting(hints: ToolHints) -> (Arc<dyn Tool>, Arc<AtomicU32>) {
    let calls = Arc::new(AtomicU32::new(0));
    let counter = calls.clone();
    let tool = probe(hints, move |_ctx, input| {
        let n = counter.fetch_add(1, Ordering::SeqCst) + 1;
        async move {
            if input.contains("fail") {
                Err(ToolError::failed("asked to fail"))
            } else {
                Ok(format!("call {n}"))
            }
        }
    });
    (tool, calls)
}

#[tokio::test(start_paused = true)]
async fn cache_serves_equal_arguments_until_they_expire() {
    let (tool, calls) = counting(ToolHints::READ_ONLY);
    let cached = tools::wrap_tool(
        tool,
        [tools::middleware::CacheLayer::new()
            .ttl(Duration::from_secs(60))
            .capacity(16)
            .into()],
    );

    let first = cached
        .handle(&ctx(), r#"{"a":1,"b":{"x":1,"y":2}}"#)
        .await
        .unwrap();
    // Same value, other key order and spacing: a hit.
    let second = cached
        .handle(&ctx(), r#"{ "b": {"y": 2, "x": 1}, "a": 1 }"#)
        .await
        .unwrap();
    assert_eq!(first, "call 1");
    assert_eq!(second, "call 1");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Other arguments: a miss.
    assert_eq!(cached.handle(&ctx(), r#"{"a":2}"#).await.unwrap(), "call 2");

    // After the TTL: a miss again.
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert_eq!(
        cached
            .handle(&ctx(), r#"{"b":{"x":1,"y":2},"a":1}"#)
            .await
            .unwrap(),
        "call 3"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(start_paused = true)]
async fn cache_evicts_the_least_recently_used_at_capacity() {
    let (tool, calls) = counting(ToolHints::READ_ONLY);
    let cached = tools::wrap_tool(tool, [CacheLayer::new().capacity(2).into()]);
    cached.handle(&ctx(), r#"{"k":1}"#).await.unwrap();
    cached.handle(&ctx(), r#"{"k":2}"#).await.unwrap();
    cached.handle(&ctx(), r#"{"k":1}"#).await.unwrap(); // hit; k=2 is now least recent
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    cached.handle(&ctx(), r#"{"k":3}"#).await.unwrap(); // evicts k=2
    cached.handle(&ctx(), r#"{"k":1}"#).await.unwrap(); // still cached
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    cached.handle(&ctx(), r#"{"k":2}"#).await.unwrap(); // was evicted
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn cache_skips_unsafe_tools_errors_and_non_json() {
    // A tool with default hints (may write) is never cached.
    let (tool, calls) = counting(ToolHints::default());
    let cached = tools::wrap_tool(
        tool,
        [tools::middleware::CacheLayer::new()
            .ttl(Duration::from_secs(60))
            .capacity(16)
            .into()],
    );
    cached.handle(&ctx(), "{}").await.unwrap();
    cached.handle(&ctx(), "{}").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // ...unless told to.
    let (tool, calls) = counting(ToolHints::default());
    let cached = tools::wrap_tool(tool, [CacheLayer::new().ignore_hints(true).into()]);
    cached.handle(&ctx(), "{}").await.unwrap();
    cached.handle(&ctx(), "{}").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Errors and non-JSON arguments are not cached.
    let (tool, calls) = counting(ToolHints::READ_ONLY.idempotent(true));
    let cached = tools::wrap_tool(
        tool,
        [tools::middleware::CacheLayer::new()
            .ttl(Duration::from_secs(60))
            .capacity(16)
            .into()],
    );
    cached.handle(&ctx(), r#"{"x":"fail"}"#).await.unwrap_err();
    cached.handle(&ctx(), r#"{"x":"fail"}"#).await.unwrap_err();
    cached.handle(&ctx(), "plain words").await.unwrap();
    cached.handle(&ctx(), "plain words").await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

// ---------------------------------------------------------------------------------------------
// Logging

/// Collects everything a fmt subscriber writes while `f` runs on this thread.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

async fn logged_call(logging: ToolMiddleware, input: &str, fail: bool) -> String {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let tool = probe(ToolHints::READ_ONLY, move |_ctx, _input| async move {
        if fail {
            Err(ToolError::unavailable("the vault is closed"))
        } else {
            Ok(r#"{"session_token":"tok-SECRET-2","balance":12}"#.to_owned())
        }
    });
    let logged = tools::wrap_tool(tool, [logging]);
    let _ = logged
        .handle(&ToolContext::default().with_call_id("call_42"), input)
        .await;
    captured.text()
}

const SECRET_INPUT: &str = r#"{"user":"ann","password":"hunter2","nested":{"api_key":"sk-SECRET-1","Authorization":"Bearer xyz"},"city":"上海"}"#;

#[tokio::test]
async fn logging_opens_a_genai_span_per_call() {
    let out = logged_call(tools::with_logging(), SECRET_INPUT, false).await;
    assert!(out.contains("execute_tool{"), "{out}");
    assert!(out.contains(r#"otel.name="execute_tool probe""#), "{out}");
    assert!(
        out.contains(r#"gen_ai.operation.name="execute_tool""#),
        "{out}"
    );
    assert!(out.contains(r#"gen_ai.tool.name="probe""#), "{out}");
    assert!(out.contains(r#"gen_ai.tool.call.id="call_42""#), "{out}");
    assert!(out.contains("tool call started"), "{out}");
    assert!(out.contains("tool call succeeded"), "{out}");
    assert!(out.contains("output_len=45"), "{out}");
    assert!(out.contains("duration_ms="), "{out}");
    // Neither arguments nor results unless asked.
    assert!(!out.contains("hunter2") && !out.contains("上海"), "{out}");
    assert!(!out.contains("balance"), "{out}");
}

#[tokio::test]
async fn logging_records_failures_with_their_kind() {
    let out = logged_call(tools::with_logging(), "{}", true).await;
    assert!(out.contains("WARN"), "{out}");
    assert!(out.contains("tool call failed"), "{out}");
    assert!(out.contains("error=the vault is closed"), "{out}");
    assert!(out.contains("error.type=\"unavailable\""), "{out}");
}

#[tokio::test]
async fn logging_redacts_recorded_arguments_and_results() {
    let logging = LoggingLayer::new()
        .record_arguments(true)
        .record_results(true)
        .redact_key("user")
        .into();
    let out = logged_call(logging, SECRET_INPUT, false).await;
    for secret in [
        "hunter2",
        "sk-SECRET-1",
        "Bearer xyz",
        "tok-SECRET-2",
        "ann",
    ] {
        assert!(!out.contains(secret), "{secret} leaked: {out}");
    }
    assert!(out.contains("[REDACTED]"), "{out}");
    // Everything else is recorded.
    assert!(out.contains("上海"), "{out}");
    assert!(out.contains("balance"), "{out}");
    assert!(out.contains("gen_ai.tool.call.arguments="), "{out}");
    assert!(out.contains("gen_ai.tool.call.result="), "{out}");
}

// ---------------------------------------------------------------------------------------------
// Output budget

#[tokio::test]
async fn output_budget_cuts_long_results_keeping_head_and_tail_with_a_note() {
    let text: String = (0..2000).map(|i| format!("{i:05}\n")).collect(); // 12 000 characters
    let total = text.chars().count();
    let body = text.clone();
    let tool = probe(ToolHints::READ_ONLY, move |_ctx, _input| {
        let body = body.clone();
        async move { Ok(body) }
    });
    let budgeted = tools::wrap_tool(tool, [tools::middleware::OutputLimitLayer::new(600).into()]);
    let out = budgeted.handle(&ctx(), "{}").await.unwrap();
    assert!(out.chars().count() <= 600, "{}", out.chars().count());

    // head + note + tail, and the note's count is exactly what is missing.
    let (head, rest) = out.split_once("\n[… ").expect("a note");
    let (count, tail) = rest
        .split_once(&format!(" of {total} characters omitted …]\n"))
        .unwrap();
    let dropped: usize = count.parse().unwrap();
    assert!(text.starts_with(head));
    assert!(text.ends_with(tail));
    assert_eq!(head.chars().count() + dropped + tail.chars().count(), total);
    assert!(head.starts_with("00000\n00001\n"));
    assert!(tail.ends_with("01999\n"));

    // Short results and errors pass unchanged.
    let short = tools::wrap_tool(
        tinyagent_demo::calculator_tool(),
        [tools::middleware::OutputLimitLayer::new(600).into()],
    );
    let out = short
        .handle(&ctx(), r#"{"operation":"add","a":10,"b":3}"#)
        .await
        .unwrap();
    assert!(out.contains("10.00 + 3.00 = 13.00"), "{out}");
    let err = short
        .handle(&ctx(), r#"{"operation":"divide","a":1,"b":0}"#)
        .await
        .unwrap_err();
    assert!(!err.message().contains("omitted"));
}

// ---------------------------------------------------------------------------------------------
// Approval

#[tokio::test]
async fn approval_approves_denies_and_rewrites() {
    let seen = Arc::new(Mutex::new(Vec::<(String, String, Option<String>)>::new()));
    let log = seen.clone();
    let hook = move |req: ApprovalRequest| {
        log.lock().unwrap().push((
            req.tool.to_string(),
            req.arguments.clone(),
            req.call_id.clone(),
        ));
        async move {
            let args: serde_json::Value = serde_json::from_str(&req.arguments).unwrap_or_default();
            match args["city"].as_str() {
                Some("火星") => Approval::deny("Mars is out of range"),
                Some("上海") | Some("北京") => Approval::Approve,
                _ => Approval::rewrite(r#"{"city":"广州"}"#),
            }
        }
    };
    let (handled, calls) = {
        let calls = Arc::new(Mutex::new(Vec::<String>::new()));
        let log = calls.clone();
        let inner = tinyagent_demo::weather_tool();
        let spy = tools::middleware::layer_fn(move |next: Arc<dyn Handler>| -> Arc<dyn Handler> {
            let log = log.clone();
            Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
                let (next, log) = (next.clone(), log.clone());
                async move {
                    log.lock().unwrap().push(input.clone());
                    next.handle(&ctx, &input).await
                }
            }))
        });
        (
            tools::wrap_tool(
                inner,
                [
                    tools::middleware::ApprovalLayer::new(tools::middleware::approval_fn(hook))
                        .into(),
                    spy.into(),
                ],
            ),
            calls,
        )
    };

    let c = ToolContext::default().with_call_id("call_7");
    let ok = handled.handle(&c, r#"{"city":"上海"}"#).await.unwrap();
    assert!(ok.contains("多云"), "{ok}");

    let err = handled.handle(&c, r#"{"city":"火星"}"#).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Denied);
    assert_eq!(
        err.to_string(),
        "the call to get_weather was denied: Mars is out of range"
    );
    assert!(!err.is_retryable());

    let rewritten = handled.handle(&c, r#"{"city":"深圳"}"#).await.unwrap();
    assert!(
        rewritten.contains("广州") && rewritten.contains("阵雨"),
        "{rewritten}"
    );

    assert_eq!(
        *calls.lock().unwrap(),
        [r#"{"city":"上海"}"#, r#"{"city":"广州"}"#],
        "the denied call never reached the tool; the rewritten one arrived rewritten"
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter()
            .all(|(tool, _, id)| tool == "get_weather" && id.as_deref() == Some("call_7"))
    );
    assert_eq!(seen[1].1, r#"{"city":"火星"}"#);
}

// ---------------------------------------------------------------------------------------------
// tower

#[cfg(feature = "tower")]
mod tower_interop {
    use std::task::{Context, Poll};

    use tinyagent::tools::ToolOutput;
    use tinyagent::tools::middleware::ToolRequest;
    use tower_service::Service;

    use super::*;

    /// Counts requests and refuses inputs containing "forbidden", as a tower service.
    #[derive(Clone)]
    struct Guard<S> {
        inner: S,
        seen: Arc<AtomicU32>,
    }

    impl<S> Service<ToolRequest> for Guard<S>
    where
        S: Service<ToolRequest, Response = ToolOutput, Error = ToolError>,
        S::Future: Send + 'static,
    {
        type Response = ToolOutput;
        type Error = tinyagent::BoxError;
        type Future = tinyagent::BoxFuture<'static, Result<ToolOutput, tinyagent::BoxError>>;

        fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
            self.inner.poll_ready(cx).map_err(Into::into)
        }

        fn call(&mut self, req: ToolRequest) -> Self::Future {
            self.seen.fetch_add(1, Ordering::SeqCst);
            assert_eq!(&*req.tool, "get_weather");
            if req.input.text().contains("forbidden") {
                return Box::pin(async { Err("forbidden by the guard".into()) });
            }
            let fut = self.inner.call(req);
            Box::pin(async move { fut.await.map_err(Into::into) })
        }
    }

    #[tokio::test]
    async fn a_tower_layer_is_tool_middleware() {
        let seen = Arc::new(AtomicU32::new(0));
        let counter = seen.clone();
        let layer = tower_layer::layer_fn(move |inner| Guard {
            inner,
            seen: counter.clone(),
        });
        let weather = tools::wrap_tool(
            tinyagent_demo::weather_tool(),
            [
                tools::middleware::ValidationLayer::new().into(),
                ToolMiddleware::from_tower(layer),
            ],
        );
        let ok = weather.handle(&ctx(), r#"{"city":"上海"}"#).await.unwrap();
        assert!(ok.contains("多云"));

        // The tool's own error crosses the tower service with its kind and message intact.
        let bare = tinyagent_demo::weather_tool()
            .handle(&ctx(), r#"{"city":"火星"}"#)
            .await
            .unwrap_err();
        let err = weather
            .handle(&ctx(), r#"{"city":"火星"}"#)
            .await
            .unwrap_err();
        assert_eq!(err.kind(), bare.kind());
        assert_eq!(err.to_string(), bare.to_string());
        let err2 = weather
            .handle(&ctx(), r#"{"city":"forbidden"}"#)
            .await
            .unwrap_err();
        assert_eq!(err2.kind(), ToolErrorKind::Failed);
        assert_eq!(err2.to_string(), "forbidden by the guard");
        assert_eq!(seen.load(Ordering::SeqCst), 3);
    }
}

#[tokio::test]
async fn inside_an_agent_a_logged_call_has_one_span() {
    use tinyagent::testing::{ScriptedModel, reply};
    use tinyagent::{AgentExt, LlmAgent, Session};

    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let tool = probe(ToolHints::READ_ONLY, |_ctx, _input| async move {
        Ok("sunny".to_owned())
    });
    let agent = LlmAgent::builder("logged")
        .model(ScriptedModel::new([
            reply::tool_call("call_7", "probe", "{}"),
            reply::text("done"),
        ]))
        .tool(tools::wrap_tool(tool, [tools::with_logging()]))
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "go").await.unwrap(), "done");
    let out = captured.text();
    let closes: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("close") && l.contains("execute_tool"))
        .collect();
    assert_eq!(closes.len(), 1, "one execute_tool span per call:\n{out}");
    // The logging middleware filled in the agent's span.
    assert!(
        closes[0].contains(r#"gen_ai.tool.call.id="call_7""#),
        "{out}"
    );
    assert!(out.contains("output_len=5"), "{out}");
    assert!(out.contains("tool call succeeded"), "{out}");
}

/// A tool whose answers are scripted: `Ok(())` succeeds, `Err(kind)` fails with that kind.
fn scripted_tool(script: Vec<Result<(), ToolErrorKind>>) -> (Arc<dyn Tool>, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let seen = calls.clone();
    let script = Arc::new(script);
    let tool = tools::try_new_tool(
        "quote",
        "a stock quote",
        json!({"type": "object"}),
        move |_ctx: ToolContext, _input: String| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let step = script.get(n).cloned().unwrap_or(Ok(()));
            async move {
                match step {
                    Ok(()) => Ok("42".to_owned()),
                    Err(kind) => Err(ToolError::new(kind, format!("call {n} failed"))),
                }
            }
        },
    )
    .expect("a valid tool")
    .with_hints(ToolHints::READ_ONLY);
    (Arc::new(tool), calls)
}

#[tokio::test(start_paused = true)]
async fn the_circuit_breaker_opens_fails_fast_and_closes_after_a_good_probe() {
    use ToolErrorKind::{InvalidInput, Unavailable};
    use tinyagent::tools::middleware::{CircuitBreakerLayer, RetryLayer};
    // Call 0 fails with bad input (not the service's fault: it does not count); then the
    // service fails, each call retried once (two failing attempts, one count); then it is back.
    let (tool, calls) = scripted_tool(vec![
        Err(InvalidInput),
        Err(Unavailable),
        Err(Unavailable),
        Err(Unavailable),
        Err(Unavailable),
    ]);
    let tool = tools::wrap_tool(
        tool,
        [
            CircuitBreakerLayer::new()
                .failures(2)
                .cool_down(Duration::from_secs(30))
                .into(),
            RetryLayer::new(1).into(),
        ],
    );
    let ctx = ToolContext::default();
    let err = tool.handle(&ctx, "{}").await.unwrap_err();
    assert_eq!(err.kind(), InvalidInput);
    for _ in 0..2 {
        let err = tool.handle(&ctx, "{}").await.unwrap_err();
        assert!(err.message().contains("failed"), "{err}");
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        5,
        "1 + 2 calls of 2 attempts each"
    );
    // Open: refused without calling the tool, and not retried.
    let err = tool.handle(&ctx, "{}").await.unwrap_err();
    assert_eq!(err.kind(), Unavailable);
    assert!(!err.is_retryable());
    assert!(
        err.message().contains("circuit breaker is open after 2"),
        "{err}"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 5);
    tokio::time::advance(Duration::from_secs(30)).await;
    // The probe works: closed again, every call goes through.
    assert_eq!(tool.handle(&ctx, "{}").await.unwrap(), "42");
    assert_eq!(tool.handle(&ctx, "{}").await.unwrap(), "42");
    assert_eq!(calls.load(Ordering::SeqCst), 7);
}
