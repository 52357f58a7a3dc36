//! What tool search costs per turn: resolving the tools of one invocation over 504 tools
//! (500 generated ones and the demo's four), with and without earlier user messages to search
//! with, and indexing the set once.
//!
//! ```text
//! cargo bench -p tinyagent --bench tool_search
//! ```

use criterion::{Criterion, criterion_group, criterion_main};
use tinyagent::testing::many_tools;
use tinyagent::tools::{ToolResolver, ToolSearch};
use tinyagent::{Invocation, Message, Session};

fn tools() -> Vec<std::sync::Arc<dyn tinyagent::Tool>> {
    let mut tools = many_tools(500);
    tools.extend(tinyagent_demo::all_tools());
    tools
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let search = ToolSearch::new(tools());
    let fresh = Invocation::new(Session::new(), "北京天气怎么样？");
    c.bench_function("tool_search/resolve, 504 tools, one question", |b| {
        b.iter(|| rt.block_on(search.resolve_tools(&fresh)).expect("tools"))
    });
    let session = Session::new();
    for i in 0..20 {
        session.append([
            Message::user(format!("Look up the shipment SH-{i} and export its report")),
            Message::assistant("Done."),
        ]);
    }
    let follow_up = Invocation::new(session, "and cancel it");
    c.bench_function(
        "tool_search/resolve, 504 tools, a follow-up in a 40-message session",
        |b| {
            b.iter(|| {
                rt.block_on(search.resolve_tools(&follow_up))
                    .expect("tools")
            })
        },
    );
    c.bench_function("tool_search/index 504 tools", |b| {
        let set = tools();
        b.iter(|| ToolSearch::new(set.clone()))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
