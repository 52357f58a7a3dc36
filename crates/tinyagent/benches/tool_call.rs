//! The cost of one tool call through the typed path: decode the JSON arguments, run the
//! function, encode the result (the seed's calculator and weather tools, no middleware).

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use tinyagent::ToolContext;

fn tool_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let ctx = ToolContext::default();
    for (name, tool, input) in [
        (
            "calculator",
            tinyagent::demo::calculator_tool(),
            r#"{"operation":"add","a":10,"b":3}"#,
        ),
        (
            "weather",
            tinyagent::demo::weather_tool(),
            r#"{"city":"上海"}"#,
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        black_box(tool.handle(&ctx, black_box(input)).await.ok());
                    }
                    start.elapsed()
                })
            });
        });
    }
}

criterion_group!(benches, tool_call);
criterion_main!(benches);
