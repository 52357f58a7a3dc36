//! Cost of calling a tool: the calculator through its JSON adapter, bare and wrapped.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use tinyagent::ToolContext;
use tinyagent::demo::{self, CalcInput, Operation};
use tinyagent::tools;

fn tool_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let ctx = ToolContext::default();
    let calc = demo::calculator_tool();
    let input = r#"{"operation": "add", "a": 10, "b": 3}"#;

    c.bench_function("calculator_work_only", |b| {
        let input = CalcInput {
            operation: Operation::Add,
            a: 10.0,
            b: Some(3.0),
        };
        b.iter(|| demo::calculate_sync(black_box(&input)))
    });
    c.bench_function("calculator_via_tool", |b| {
        b.iter(|| rt.block_on(calc.handle(&ctx, black_box(input))))
    });
    let wrapped = tools::wrap_tool(calc.clone(), []);
    c.bench_function("calculator_via_wrapped_tool", |b| {
        b.iter(|| rt.block_on(wrapped.handle(&ctx, black_box(input))))
    });
}

criterion_group!(benches, tool_call);
criterion_main!(benches);
