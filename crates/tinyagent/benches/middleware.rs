//! The cost of the middleware stack: the tutorial's calculator bare, and wrapped in logging (no
//! subscriber listening) + timeout + retry.
//!
//! Run with `cargo bench --bench middleware -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tinyagent::{Tool, ToolContext, tools};

const INPUT: &str = r#"{"operation":"add","a":10,"b":3}"#;

fn bench_calls(c: &mut Criterion, name: &str, tool: Arc<dyn Tool>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    let ctx = ToolContext::default().with_call_id("call_1");
    c.bench_function(name, |b| {
        // One runtime entry per batch, so the figure is the call, not `block_on`.
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let out = tool.handle(&ctx, black_box(INPUT)).await;
                    black_box(out.expect("the calculator adds"));
                }
                start.elapsed()
            })
        });
    });
}

fn middleware(c: &mut Criterion) {
    let bare = tinyagent_demo::calculator_tool();
    let wrapped = tools::wrap_tool(
        tinyagent_demo::calculator_tool(),
        [
            tools::with_logging(),
            tools::with_timeout(Duration::from_secs(3)),
            tools::with_retry(2),
        ],
    );
    bench_calls(c, "calculator/bare", bare);
    bench_calls(c, "calculator/logging+timeout+retry", wrapped);
}

criterion_group!(benches, middleware);
criterion_main!(benches);
