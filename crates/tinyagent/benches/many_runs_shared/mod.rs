//! The batch behind the `many_runs` benches: 100,000 concurrent invocations of one agent on a
//! 2-worker runtime, timed, and, when the bench's allocator counts, its allocations and the
//! peak of live heap bytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use tinyagent::{
    AgentExt, BoxFuture, LlmAgent, Message, Model, ModelError, ModelRequest, ModelResponse, Part,
    Role, Session, ToolCall, ToolError, Usage, model::FinishReason, tools,
};

/// What a counting allocator reports: allocations so far, and the bytes live on the heap now.
pub type Counter = fn() -> (usize, i64);

const MODEL_LATENCY: Duration = Duration::from_millis(50);

/// Asks for `add` on the user's two numbers, then answers with the tool's result; 50 ms a call.
struct TimedModel;

impl Model for TimedModel {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            tokio::time::sleep(MODEL_LATENCY).await;
            let last = req.messages.last().expect("a message");
            if let Some(result) = last.tool_results().next() {
                return Ok(ModelResponse::new(
                    Message::assistant(format!("= {}", result.content)),
                    Usage::new(40, 4),
                    FinishReason::Stop,
                ));
            }
            let question = last.text();
            let (a, b) = question.split_once('+').expect("a sum");
            let args = format!(r#"{{"a": {}, "b": {}}}"#, a.trim(), b.trim());
            Ok(ModelResponse::new(
                Message::new(
                    Role::Assistant,
                    vec![Part::ToolCall(ToolCall::new("c1", "add", args))],
                ),
                Usage::new(30, 8),
                FinishReason::ToolCalls,
            ))
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

/// Runs the batch and prints its figures, `allocator` naming the global allocator and
/// `counter` reading its counts, if it keeps any.
pub fn run(allocator: &str, counter: Option<Counter>) {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .expect("a runtime");
    let add = tools::new_func("add", "Adds two integers", |i: AddInput| async move {
        Ok::<_, ToolError>(i.a + i.b)
    })
    .read_only();
    let agent = Arc::new(
        LlmAgent::builder("adder")
            .model(Arc::new(TimedModel))
            .instruction("Add the user's numbers with the add tool.")
            .tool(add)
            .build()
            .expect("an agent"),
    );

    // One run first, checked, so that the timed batch is known to do the work it claims.
    let answer = rt
        .block_on(agent.ask(&Session::new(), "2 + 3"))
        .expect("an answer");
    assert_eq!(answer, "= 5");

    // The peak of live heap bytes, sampled every millisecond by a thread of its own.
    let counts = counter.map(|counter| {
        let baseline = counter().1;
        let peak = Arc::new(AtomicI64::new(baseline));
        let done = Arc::new(AtomicBool::new(false));
        let sampler = {
            let (peak, done) = (peak.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    peak.fetch_max(counter().1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(1));
                }
            })
        };
        (counter, counter().0, baseline, peak, done, sampler)
    });
    let started = Instant::now();
    let wrong = rt.block_on(async {
        let runs: Vec<_> = (0..n)
            .map(|i| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    let answer = agent
                        .ask(&Session::new(), format!("{i} + 1"))
                        .await
                        .expect("an answer");
                    answer != format!("= {}", i + 1)
                })
            })
            .collect();
        let mut wrong = 0usize;
        for run in runs {
            wrong += usize::from(run.await.expect("a run"));
        }
        wrong
    });
    let elapsed = started.elapsed();
    assert_eq!(wrong, 0, "wrong answers in the batch");
    let counted = counts.map(|(counter, allocations_before, baseline, peak, done, sampler)| {
        let allocations = counter().0 - allocations_before;
        done.store(true, Ordering::Relaxed);
        sampler.join().expect("the sampler");
        let peak = (peak.load(Ordering::Relaxed) - baseline).max(0);
        format!(
            ", {:.0} allocations and a peak heap of {:.2} KiB per invocation ({:.1} MiB in all)",
            allocations as f64 / n as f64,
            peak as f64 / 1024.0 / n as f64,
            peak as f64 / (1024.0 * 1024.0),
        )
    });
    println!(
        "many_runs ({allocator}): {n} concurrent invocations (one tool call, 50 ms per model call, \
         2 workers): {:.2} s, {:.0} runs/s{}",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        counted.unwrap_or_default(),
    );
}
