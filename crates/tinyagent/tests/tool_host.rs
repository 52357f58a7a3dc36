//! Tool-side context: a tool reports progress and logs through its `ToolContext`; run by an
//! agent, progress becomes `Event::ToolProgress` (with a stable JSON shape), and sampling and
//! elicitation go to the host the agent runs under, or fail clearly without one.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools;
use tinyagent::{
    Agent, BoxFuture, Event, Invocation, LlmAgent, Session, ToolContext, ToolError, ToolErrorKind,
    host::{Elicitation, ElicitationRequest, LogLevel, SamplingReply, SamplingRequest, ToolHost},
};

#[derive(Deserialize, JsonSchema)]
struct Steps {
    steps: u32,
}

fn slow_tool() -> impl tinyagent::tools::IntoTool {
    tools::new_func(
        "slow",
        "Works in steps",
        |ctx: ToolContext, s: Steps| async move {
            for i in 1..=s.steps {
                ctx.progress(
                    f64::from(i),
                    Some(f64::from(s.steps)),
                    Some(&format!("step {i}")),
                )
                .await;
            }
            ctx.log(LogLevel::Info, "all steps done").await;
            Ok::<_, ToolError>(format!("{} steps", s.steps))
        },
    )
}

#[tokio::test]
async fn progress_of_a_tool_becomes_agent_events_in_order() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "slow", r#"{"steps": 3}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model)
        .tool(slow_tool())
        .build()
        .unwrap();
    let events: Vec<Event> = agent
        .run(Invocation::new(Session::new(), "go"))
        .map(Result::unwrap)
        .collect()
        .await;
    let seen: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call } => Some(format!("start {}", call.id)),
            Event::ToolProgress {
                call_id,
                progress,
                total,
                message,
            } => Some(format!(
                "{call_id} {progress}/{} {}",
                total.unwrap(),
                message.as_deref().unwrap()
            )),
            Event::ToolCallFinished { result, .. } => Some(format!("end {}", result.content)),
            _ => None,
        })
        .collect();
    assert_eq!(
        seen,
        [
            "start c1",
            "c1 1/3 step 1",
            "c1 2/3 step 2",
            "c1 3/3 step 3",
            "end 3 steps"
        ]
    );
}

#[test]
fn the_progress_event_has_a_stable_json_shape() {
    let event = Event::ToolProgress {
        call_id: "call_1".into(),
        progress: 1.0,
        total: Some(3.0),
        message: Some("fetching".into()),
    };
    let v = serde_json::to_value(&event).unwrap();
    assert_eq!(
        v,
        json!({"type": "tool_progress", "id": "call_1", "progress": 1.0, "total": 3.0, "message": "fetching"})
    );
    assert_eq!(serde_json::from_value::<Event>(v).unwrap(), event);
    let bare: Event =
        serde_json::from_value(json!({"type": "tool_progress", "id": "c", "progress": 0.5}))
            .unwrap();
    assert_eq!(
        bare,
        Event::ToolProgress {
            call_id: "c".into(),
            progress: 0.5,
            total: None,
            message: None
        }
    );
}

/// A host standing for an MCP client: answers sampling with a fixed text, elicitation by
/// accepting, and records progress.
#[derive(Default)]
struct Client {
    progress: Mutex<Vec<f64>>,
}

impl ToolHost for Client {
    fn progress(&self, p: f64, _total: Option<f64>, _m: Option<String>) -> BoxFuture<'_, ()> {
        self.progress.lock().unwrap().push(p);
        Box::pin(async {})
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingReply, ToolError>> {
        Box::pin(async move {
            let asked = request.messages[0].content.as_text().unwrap().to_owned();
            Ok(SamplingReply::text(
                format!("summary of {asked}"),
                "client-model",
            ))
        })
    }

    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, Result<Elicitation, ToolError>> {
        Box::pin(async move {
            assert_eq!(request.schema["properties"]["ok"]["type"], "boolean");
            Ok(Elicitation::Accept(json!({"ok": true})))
        })
    }
}

fn asking_tool() -> impl tinyagent::tools::IntoTool {
    tools::new_func(
        "ask",
        "Asks the client",
        |ctx: ToolContext, _: Steps| async move {
            ctx.progress(0.5, None, None).await;
            let summary = ctx.sample(SamplingRequest::text("the report", 100)).await?;
            let answer = ctx
                .elicit(
                    "Go on?",
                    json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
                )
                .await?;
            Ok::<_, ToolError>(format!("{} / {answer:?}", summary.as_text()))
        },
    )
}

#[tokio::test]
async fn sampling_and_elicitation_reach_the_host_the_agent_runs_under() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "ask", r#"{"steps": 0}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(asking_tool())
        .build()
        .unwrap();
    let client = Arc::new(Client::default());
    let inv = Invocation::new(Session::new(), "go");
    let inv = inv.with_host(client.clone());
    let events: Vec<Event> = agent.run(inv).map(Result::unwrap).collect().await;
    let result = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished { result, .. } => Some(result.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        result.content,
        r#"summary of the report / Accept(Object {"ok": Bool(true)})"#
    );
    assert_eq!(*client.progress.lock().unwrap(), [0.5]);
}

#[tokio::test]
async fn without_a_client_sampling_fails_clearly_and_the_model_reads_why() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "ask", r#"{"steps": 0}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(asking_tool())
        .build()
        .unwrap();
    let events: Vec<Event> = agent
        .run(Invocation::new(Session::new(), "go"))
        .map(Result::unwrap)
        .collect()
        .await;
    let (result, kind) = events
        .iter()
        .find_map(|e| match e {
            Event::ToolCallFinished {
                result, error_kind, ..
            } => Some((result.clone(), *error_kind)),
            _ => None,
        })
        .unwrap();
    assert!(result.is_error);
    assert_eq!(kind, Some(ToolErrorKind::Unavailable));
    assert_eq!(
        result.content,
        "sampling (asking the client's model) is not supported here: the tool runs without a \
         client that answers it"
    );
}
