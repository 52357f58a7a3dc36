//! Replies a provider did not deliver whole: a reply restarted after part of it streamed, and
//! tool calls cut off by the token limit, which must never run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use futures::stream::{self, BoxStream};
use serde_json::json;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools;
use tinyagent::{
    AgentError, BoxFuture, Event, Invocation, LlmAgent, Model, ModelError, ModelRequest,
    ModelResponse, Session, ToolContext, ToolError,
    model::{FinishReason, ModelEvent, ModelResponseBuilder},
};

fn counting_tool(runs: Arc<AtomicUsize>) -> Arc<dyn tinyagent::Tool> {
    tools::new_tool(
        "get_weather",
        "weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        move |_c: ToolContext, _i: String| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("晴".to_owned())
            }
        },
    )
}

/// A reply cut by the token limit in the middle of a tool call's arguments.
fn cut_call() -> ModelResponse {
    let mut r = reply::tool_call("c1", "get_weather", r#"{"city":"北"#);
    r.finish_reason = FinishReason::Length;
    r
}

async fn run_all(agent: &LlmAgent) -> (Vec<Event>, Option<AgentError>) {
    let mut events = Vec::new();
    let mut stream = tinyagent::Agent::run(agent, Invocation::new(Session::new(), "北京天气？"));
    while let Some(item) = stream.next().await {
        match item {
            Ok(e) => events.push(e),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

#[tokio::test]
async fn a_tool_call_cut_by_the_token_limit_never_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new([cut_call(), reply::text("never asked")]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(counting_tool(runs.clone()))
        .max_tokens(256)
        .build()
        .unwrap();
    let (events, err) = run_all(&agent).await;
    let err = err.expect("the run fails");
    assert_eq!(
        err.to_string(),
        "the model's reply was cut off by the token limit (max_tokens 256) while it was calling \
         get_weather; the calls were not run; raise the limit with `max_tokens`"
    );
    assert!(matches!(
        err,
        AgentError::ReplyTruncated { max_tokens: Some(256), ref tools, .. } if tools == &["get_weather"]
    ));
    assert_eq!(runs.load(Ordering::SeqCst), 0, "the cut call must not run");
    assert_eq!(model.request_count(), 1, "no second model call");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, Event::ToolCallStarted { .. })),
        "{events:?}"
    );
    // The step's usage is still reported: the tokens were spent.
    assert!(events.iter().any(|e| matches!(
        e,
        Event::Usage {
            finish_reason: FinishReason::Length,
            ..
        }
    )));
}

#[tokio::test]
async fn without_an_agent_limit_the_error_names_the_providers_default() {
    let model = Arc::new(ScriptedModel::new([cut_call()]));
    let agent = LlmAgent::builder("a")
        .model(model)
        .tool(counting_tool(Arc::default()))
        .build()
        .unwrap();
    let err = run_all(&agent).await.1.expect("the run fails");
    assert!(
        err.to_string()
            .contains("token limit (the provider's default max_tokens)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_text_answer_cut_by_the_token_limit_is_still_the_answer() {
    let mut cut = reply::text("北京今天");
    cut.finish_reason = FinishReason::Length;
    let model = Arc::new(ScriptedModel::new([cut]));
    let agent = LlmAgent::builder("a").model(model).build().unwrap();
    let (events, err) = run_all(&agent).await;
    assert!(err.is_none(), "{err:?}");
    assert!(matches!(events.last(), Some(Event::Finished { answer, .. }) if answer == "北京今天"));
}

/// Streams half a reply, restarts, then streams the whole reply.
struct RestartingModel;

impl Model for RestartingModel {
    fn name(&self) -> &str {
        "restarting"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async { Ok(reply::text("北京晴")) })
    }

    fn stream<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        let events = vec![
            ModelEvent::TextDelta("北京".into()),
            ModelEvent::Restart {
                reason: "the stream was cut".into(),
            },
            ModelEvent::TextDelta("北京".into()),
            ModelEvent::TextDelta("晴".into()),
            ModelEvent::Done(reply::text("北京晴")),
        ];
        Box::pin(stream::iter(events.into_iter().map(Ok)))
    }
}

#[tokio::test]
async fn a_restarted_reply_is_reported_between_its_two_streams() {
    let agent = LlmAgent::builder("a")
        .model(Arc::new(RestartingModel))
        .build()
        .unwrap();
    let (events, err) = run_all(&agent).await;
    assert!(err.is_none(), "{err:?}");
    let shown: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta(t) => Some(t.clone()),
            Event::ReplyRestarted { reason } => Some(format!("<restart: {reason}>")),
            _ => None,
        })
        .collect();
    assert_eq!(
        shown,
        ["北京", "<restart: the stream was cut>", "北京", "晴"]
    );
    assert!(matches!(events.last(), Some(Event::Finished { answer, .. }) if answer == "北京晴"));
}

#[test]
fn the_response_builder_forgets_what_came_before_a_restart() {
    let mut b = ModelResponseBuilder::new();
    for e in [
        ModelEvent::TextDelta("半".into()),
        ModelEvent::ToolCallStart {
            id: "c1".into(),
            name: "get_weather".into(),
        },
        ModelEvent::Restart {
            reason: "cut".into(),
        },
        ModelEvent::TextDelta("全".into()),
    ] {
        b.push(&e);
    }
    let r = b.build();
    assert_eq!(r.message.text(), "全");
    assert!(!r.message.has_tool_calls());
}
