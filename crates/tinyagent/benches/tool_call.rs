//! The cost of the tool path: raw `serde_json::from_str` + the function + `serde_json::to_string`
//! versus the same function called through a tool made by `tools::new_func`: by `Tool::call`
//! with the model's text, as the agent loop calls it (`call`), and by the text-in, text-out
//! shortcut `Tool::handle` (`new_func`), which boxes one more future.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{Criterion, criterion_group, criterion_main};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tinyagent::Tool;
use tinyagent::tools::ToolInput;
use tinyagent::{ToolContext, ToolError, tools};
use tinyagent_demo::{self, CalcInput};

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

fn bench_calculator(c: &mut Criterion) {
    let input = r#"{"operation":"add","a":10,"b":3}"#;
    let tool = tinyagent_demo::calculator_tool();
    let ctx = ToolContext::default();
    let mut group = c.benchmark_group("calculator");
    group.bench_function("raw", |b| {
        b.iter(|| {
            let parsed: CalcInput = serde_json::from_str(black_box(input)).unwrap();
            let out = tinyagent_demo::calculate_sync(&parsed).unwrap();
            serde_json::to_string(&out).unwrap()
        })
    });
    group.bench_function("new_func", |b| {
        b.iter(|| ready(tool.handle(&ctx, black_box(input))).unwrap())
    });
    group.bench_function("call", |b| {
        b.iter(|| {
            let input = ToolInput::from_text(black_box(input));
            ready(tool.call(&ctx, input))
                .unwrap()
                .into_result()
                .unwrap()
        })
    });
    group.finish();
}

fn bench_floats(c: &mut Criterion) {
    let values: Vec<String> = (0..1000)
        .map(|i| format!("{}.{}", i * 7 % 1000, i % 97))
        .collect();
    let input = format!(r#"{{"values":[{}]}}"#, values.join(","));
    let tool = tools::new_func("stats", "Summarizes numbers", stats);
    let ctx = ToolContext::default();
    let mut group = c.benchmark_group("floats_1000");
    group.bench_function("raw", |b| {
        b.iter(|| {
            let parsed: StatsInput = serde_json::from_str(black_box(&input)).unwrap();
            let out = stats_sync(&parsed).unwrap();
            serde_json::to_string(&out).unwrap()
        })
    });
    group.bench_function("new_func", |b| {
        b.iter(|| ready(tool.handle(&ctx, black_box(&input))).unwrap())
    });
    group.bench_function("call", |b| {
        b.iter(|| {
            let input = ToolInput::from_text(black_box(input.as_str()));
            ready(tool.call(&ctx, input))
                .unwrap()
                .into_result()
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench_calculator, bench_floats);
criterion_main!(benches);
