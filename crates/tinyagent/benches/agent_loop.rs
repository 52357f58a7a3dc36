//! Overhead of the agent loop per model step, excluding the model's and the tools' own work.
//!
//! An in-process model asks for three tool calls (one per tool) in each of the first
//! `STEPS - 1` steps and answers in text in the last; the tools return a constant. Before
//! anything is timed, one run is checked: every one of its `3 * (STEPS - 1)` tool calls
//! succeeded with the tools' answer, and the run finished in `STEPS` steps with the model's
//! answer (a loop that refused the calls would otherwise look fast). The `_events` benchmark
//! checks every timed run the same way.
//!
//! What each benchmark times:
//!
//! - `run_10_steps_3_tools` (and `_events`, which also reads every event): the whole loop.
//!   Besides the model's replies and the tools' handlers, that is building each model request,
//!   resolving and offering the tools, validating every call's arguments against its tool's
//!   input schema (the JSON is parsed and checked), scheduling the calls, and recording the
//!   results in the history and as events.
//! - `work_only`: the same model replies and tool handlers called directly, no validation.
//! - `work_validated`: `work_only` with each tool wrapped in the argument validation the loop
//!   applies ([`tools::middleware::ValidationLayer`]).
//!
//! So, per step: `(run - work_only) / STEPS` is the loop's overhead *including* argument
//! validation; `(run - work_validated) / STEPS` is the overhead of the loop's own machinery,
//! validation excluded; `(work_validated - work_only) / STEPS` is validation's share.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::json;
use tinyagent::{
    Agent, AgentExt, BoxFuture, Event, Invocation, LlmAgent, Message, Model, ModelError,
    ModelRequest, ModelResponse, Part, Role, Session, Tool, ToolCall, ToolContext, ToolError,
    ToolHints, ToolResult, Usage, model::FinishReason, tools,
};

const STEPS: usize = 10;

/// Replies from prepared responses, choosing by how many assistant messages came before.
struct InProcessModel {
    calls: ModelResponse,
    answer: ModelResponse,
}

impl InProcessModel {
    fn new() -> Self {
        let parts = [("c1", "alpha"), ("c2", "beta"), ("c3", "gamma")]
            .into_iter()
            .map(|(id, name)| Part::ToolCall(ToolCall::new(id, name, r#"{"q": "x"}"#)))
            .collect();
        Self {
            calls: ModelResponse::new(
                Message::new(Role::Assistant, parts),
                Usage::new(100, 10),
                FinishReason::ToolCalls,
            ),
            answer: ModelResponse::new(
                Message::assistant("done"),
                Usage::new(100, 1),
                FinishReason::Stop,
            ),
        }
    }

    fn reply(&self, req: &ModelRequest) -> ModelResponse {
        let asked = req
            .messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .count();
        if asked + 1 < STEPS {
            self.calls.clone()
        } else {
            self.answer.clone()
        }
    }
}

impl Model for InProcessModel {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let reply = self.reply(req);
        Box::pin(async move { Ok(reply) })
    }
}

fn tool(name: &'static str) -> Arc<dyn Tool> {
    let tool = tools::try_new_tool(
        name,
        "returns a constant",
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}),
        |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>("ok".to_owned()) },
    )
    .expect("a valid tool")
    .with_hints(ToolHints::READ_ONLY);
    Arc::new(tool)
}

/// Runs the agent once and checks it did the work the benchmark claims to time; panics (so the
/// benchmark stops) otherwise.
fn check_run(rt: &tokio::runtime::Runtime, agent: &LlmAgent) {
    let events: Vec<Event> = rt.block_on(async {
        agent
            .run(Invocation::new(Session::new(), "go"))
            .map(|event| event.expect("an event"))
            .collect()
            .await
    });
    let results: Vec<&ToolResult> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { result, .. } => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3 * (STEPS - 1), "tool calls in one run");
    for result in &results {
        assert!(
            !result.is_error && result.content == "ok",
            "a tool call failed: {result:?}"
        );
    }
    match events.last() {
        Some(Event::Finished { answer, steps, .. }) => {
            assert_eq!((answer.as_str(), *steps), ("done", STEPS), "the run's end");
        }
        other => panic!("the run did not finish: {other:?}"),
    }
}

/// Counts the failed tool calls among a run's events.
fn failed_calls(event: &Event) -> usize {
    match event {
        Event::ToolCallFinished { result, .. } if result.is_error => 1,
        _ => 0,
    }
}

fn agent_loop(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let model = Arc::new(InProcessModel::new());
    let tool_set = [tool("alpha"), tool("beta"), tool("gamma")];
    let agent = LlmAgent::builder("bench")
        .model(model.clone())
        .instruction("you are a benchmark")
        .tools(tool_set.clone())
        .build()
        .expect("an agent");
    check_run(&rt, &agent);

    let mut group = c.benchmark_group("agent_loop");
    group.throughput(Throughput::Elements(STEPS as u64));

    group.bench_function("run_10_steps_3_tools", |b| {
        b.iter(|| {
            rt.block_on(async {
                let answer = agent.ask(&Session::new(), "go").await.expect("an answer");
                black_box(answer)
            })
        })
    });

    group.bench_function("run_10_steps_3_tools_events", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut events = agent.run(Invocation::new(Session::new(), "go"));
                let (mut n, mut failed) = (0usize, 0usize);
                while let Some(event) = events.next().await {
                    let event = event.expect("an event");
                    failed += failed_calls(&event);
                    black_box(event);
                    n += 1;
                }
                assert_eq!(failed, 0, "tool calls failed in a timed run");
                n
            })
        })
    });

    // The model's and the tools' own work, without the loop: the same replies and calls.
    group.bench_function("work_only", |b| {
        b.iter(|| rt.block_on(work(&model, &tool_set)))
    });

    // The same, with the argument validation the loop applies to every call.
    let validated: Vec<Arc<dyn Tool>> = tool_set
        .iter()
        .map(|t| {
            tools::wrap_tool(
                t.clone(),
                [tools::middleware::ValidationLayer::new().into()],
            )
        })
        .collect();
    group.bench_function("work_validated", |b| {
        b.iter(|| rt.block_on(work(&model, &validated)))
    });
    group.finish();
}

/// The model's replies and the tool calls of one run, without the loop.
async fn work(model: &InProcessModel, tool_set: &[Arc<dyn Tool>]) -> usize {
    let ctx = ToolContext::default();
    let mut req = ModelRequest::new(vec![Message::user("go")]);
    for _ in 0..STEPS {
        let resp = model.generate(&req).await.expect("a reply");
        for call in resp.message.tool_calls() {
            let tool = tool_set
                .iter()
                .find(|t| t.name() == call.name)
                .expect("a tool");
            let out = tool.handle(&ctx, &call.arguments).await.expect("ok");
            assert_eq!(out, "ok");
            black_box(out);
        }
        req.messages.push(resp.message);
    }
    black_box(req.messages.len())
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
