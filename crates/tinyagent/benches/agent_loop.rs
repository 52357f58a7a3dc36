//! Overhead of the agent loop per model step, excluding the model's and the tools' own work.
//!
//! An in-process model asks for three tool calls (one per tool) in each of the first
//! `STEPS - 1` steps and answers in text in the last; the tools return a constant. The
//! `work_only` benchmark does the same model and tool work without the loop; the loop's
//! overhead per step is the difference divided by `STEPS`.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use serde_json::json;
use tinyagent::{
    Agent, AgentExt, BoxFuture, FinishReason, Invocation, LlmAgent, Message, Model, ModelError,
    ModelRequest, ModelResponse, Part, Role, Session, Tool, ToolCall, ToolContext, ToolError,
    ToolHints, Usage, tools,
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
    .with_hints(ToolHints::read_only());
    Arc::new(tool)
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
                let mut n = 0usize;
                while let Some(event) = events.next().await {
                    black_box(event.expect("an event"));
                    n += 1;
                }
                n
            })
        })
    });

    // The model's and the tools' own work, without the loop: the same replies and calls.
    group.bench_function("work_only", |b| {
        let ctx = ToolContext::default();
        b.iter(|| {
            rt.block_on(async {
                let mut req = ModelRequest::new(vec![Message::user("go")]);
                for _ in 0..STEPS {
                    let resp = model.generate(&req).await.expect("a reply");
                    for call in resp.message.tool_calls() {
                        let tool = tool_set
                            .iter()
                            .find(|t| t.name() == call.name)
                            .expect("a tool");
                        black_box(tool.handle(&ctx, &call.arguments).await.expect("ok"));
                    }
                    req.messages.push(resp.message);
                }
                black_box(req.messages.len())
            })
        })
    });
    group.finish();
}

criterion_group!(benches, agent_loop);
criterion_main!(benches);
