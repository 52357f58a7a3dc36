//! The body of the `tool_call` benches, shared by the system-allocator and mimalloc binaries.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use criterion::Criterion;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tinyagent::Tool;
use tinyagent::tools::ToolInput;
use tinyagent::{ToolContext, ToolError, tools};

/// Polls a future that never waits (these tools don't) to completion, without an executor.
fn ready<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct StatsInput {
    /// The numbers to summarize
    values: Vec<f64>,
}

#[derive(Serialize)]
struct StatsOutput {
    count: usize,
    mean: f64,
    min: f64,
    max: f64,
}

fn stats_sync(input: &StatsInput) -> Result<StatsOutput, ToolError> {
    if input.values.is_empty() {
        return Err(ToolError::invalid_input("no values"));
    }
    let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
    for &v in &input.values {
        min = min.min(v);
        max = max.max(v);
        sum += v;
    }
    Ok(StatsOutput {
        count: input.values.len(),
        mean: sum / input.values.len() as f64,
        min,
        max,
    })
}

async fn stats(input: StatsInput) -> Result<StatsOutput, ToolError> {
    stats_sync(&input)
}

/// The three ways to make one call, over the same input: the floor and the two tool paths.
struct Paths<'a> {
    raw: Box<dyn Fn() -> String + 'a>,
    handle: Box<dyn Fn() -> String + 'a>,
    call: Box<dyn Fn() -> String + 'a>,
}

fn tool_paths<'a, I, O>(
    tool: &'a dyn Tool,
    ctx: &'a ToolContext,
    input: &'a str,
    raw: impl Fn(&I) -> Result<O, ToolError> + 'a,
) -> Paths<'a>
where
    I: serde::de::DeserializeOwned + 'a,
    O: Serialize + 'a,
{
    Paths {
        raw: Box::new(move || {
            let parsed: I = serde_json::from_str(black_box(input)).unwrap();
            let out = raw(&parsed).unwrap();
            serde_json::to_string(&out).unwrap()
        }),
        handle: Box::new(move || ready(tool.handle(ctx, black_box(input))).unwrap()),
        call: Box::new(move || {
            let input = ToolInput::from_text(black_box(input));
            ready(tool.call(ctx, input)).unwrap().into_result().unwrap()
        }),
    }
}

fn bench_group(c: &mut Criterion, name: &str, paths: &Paths<'_>) {
    assert_eq!(
        (paths.raw)(),
        (paths.call)(),
        "the paths give the same text"
    );
    assert_eq!(
        (paths.raw)(),
        (paths.handle)(),
        "the paths give the same text"
    );
    let mut group = c.benchmark_group(name);
    group.bench_function("raw", |b| b.iter(|| (paths.raw)()));
    group.bench_function("new_func", |b| b.iter(|| (paths.handle)()));
    group.bench_function("call", |b| b.iter(|| (paths.call)()));
    group.finish();
}

/// Time per call of `f` over `n` calls, in nanoseconds.
fn per_call(n: u32, f: &dyn Fn() -> String) -> f64 {
    let start = Instant::now();
    for _ in 0..n {
        black_box(f());
    }
    start.elapsed().as_nanos() as f64 / f64::from(n)
}

/// The tool paths' cost relative to the floor, robust to a machine whose speed drifts: short
/// blocks of each path, alternating, many rounds; the median and the quartiles of the ratios
/// of neighbouring blocks.
fn interleaved(name: &str, paths: &Paths<'_>, calls_per_block: u32) {
    const ROUNDS: usize = 41;
    let mut call_ratios = Vec::with_capacity(ROUNDS);
    let mut handle_ratios = Vec::with_capacity(ROUNDS);
    for _ in 0..3 {
        per_call(calls_per_block, &*paths.raw);
        per_call(calls_per_block, &*paths.call);
    }
    for round in 0..ROUNDS {
        let (raw, call, handle) = if round % 2 == 0 {
            let raw = per_call(calls_per_block, &*paths.raw);
            let call = per_call(calls_per_block, &*paths.call);
            (raw, call, per_call(calls_per_block, &*paths.handle))
        } else {
            let handle = per_call(calls_per_block, &*paths.handle);
            let call = per_call(calls_per_block, &*paths.call);
            (per_call(calls_per_block, &*paths.raw), call, handle)
        };
        call_ratios.push(call / raw);
        handle_ratios.push(handle / raw);
    }
    for (path, ratios) in [("call", &mut call_ratios), ("new_func", &mut handle_ratios)] {
        ratios.sort_by(f64::total_cmp);
        println!(
            "{name}/{path} over raw, interleaved: {:.3}x (quartiles {:.3}-{:.3}, {ROUNDS} rounds of {calls_per_block} calls)",
            ratios[ROUNDS / 2],
            ratios[ROUNDS / 4],
            ratios[3 * ROUNDS / 4],
        );
    }
}

/// Runs both groups, as `criterion_main!` would, then (in a bench run, not a test run) the
/// interleaved ratios.
pub fn main() {
    let mut c = Criterion::default().configure_from_args();
    let bench_run = std::env::args().any(|arg| arg == "--bench");

    let tool = tinyagent_demo::calculator_tool();
    let ctx = ToolContext::default();
    let input = r#"{"operation":"add","a":10,"b":3}"#;
    let calculator = tool_paths(tool.as_ref(), &ctx, input, tinyagent_demo::calculate_sync);
    bench_group(&mut c, "calculator", &calculator);

    let values: Vec<String> = (0..1000)
        .map(|i| format!("{}.{}", i * 7 % 1000, i % 97))
        .collect();
    let floats_input = format!(r#"{{"values":[{}]}}"#, values.join(","));
    let stats_tool: Arc<dyn Tool> = Arc::new(tools::new_func("stats", "Summarizes numbers", stats));
    let floats = tool_paths(stats_tool.as_ref(), &ctx, &floats_input, stats_sync);
    bench_group(&mut c, "floats_1000", &floats);
    c.final_summary();

    if bench_run {
        interleaved("calculator", &calculator, 20_000);
        interleaved("floats_1000", &floats, 1_000);
    }
}
