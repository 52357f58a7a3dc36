//! Edge cases of the agent loop: panics before a tool's future exists, `null` for optional
//! fields, middleware state of resolved tools, the last step, ids, limits and error kinds.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, ToolInput, ToolOutput, resolver_fn};
use tinyagent::{
    AgentError, AgentExt, BoxFuture, Handler, Invocation, LlmAgent, ModelError, Role, Session,
    Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, ToolResult, handler_fn,
    model::{ModelErrorKind, ModelEvent, ModelResponseBuilder},
};

fn results_of(model: &ScriptedModel, request: usize) -> Vec<ToolResult> {
    let requests = model.requests();
    let last = requests[request].messages.last().unwrap();
    assert_eq!(last.role, Role::Tool);
    last.tool_results().cloned().collect()
}

fn counting_tool(name: &'static str, runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tools::new_tool(
        name,
        name,
        json!({"type": "object"}),
        move |_c: ToolContext, _i: String| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("ok".to_owned())
            }
        },
    )
}

/// Slices its input at byte 3 before making its future: panics on `aaé`.
struct SlicesEagerly(Value);

impl Tool for SlicesEagerly {
    fn name(&self) -> &str {
        "eager"
    }
    fn description(&self) -> &str {
        "slices its input before returning a future"
    }
    fn input_schema(&self) -> &Value {
        &self.0
    }
    // Plain text reaches only tools that take it.
    fn hints(&self) -> ToolHints {
        ToolHints::default().plain_text(true)
    }
    fn call<'a>(
        &'a self,
        _ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        let head = input.text()[..3].to_owned();
        Box::pin(async move { Ok(ToolOutput::text(head)) })
    }
}

#[tokio::test]
async fn a_panic_before_the_tools_future_exists_is_a_result() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "eager", "aaé"),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(Arc::new(SlicesEagerly(json!({"type": "object"}))))
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "hi").await.unwrap(), "done");
    let result = &results_of(&model, 1)[0];
    assert!(result.is_error);
    assert!(
        result.content.starts_with("tool \"eager\" panicked: ")
            && result.content.contains("char boundary"),
        "{}",
        result.content
    );
}

#[tokio::test]
async fn null_for_an_optional_field_is_accepted() {
    let args = r#"{"city":"北京","unit":null}"#;
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "get_weather", args),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tinyagent_demo::weather_tool())
        .build()
        .unwrap();
    agent.ask(&Session::new(), "hi").await.unwrap();
    let result = &results_of(&model, 1)[0];
    assert!(!result.is_error, "{}", result.content);
    assert!(result.content.contains("22.5"));
    // A null where a value is required is still refused.
    let strict = tools::wrap_tool(
        tinyagent_demo::weather_tool(),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let err = strict
        .handle(&ToolContext::new(), r#"{"city":null}"#)
        .await
        .unwrap_err();
    assert!(err.message().contains("/city"), "{err}");
}

#[tokio::test]
async fn middleware_state_of_resolved_tools_lasts_across_invocations() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = counting_tool("lookup", runs.clone());
    let resolver = resolver_fn(move |_inv: &Invocation| {
        let tool = tool.clone();
        async move { Ok::<_, ToolError>(vec![tool]) }
    });
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "lookup", "{}"),
        reply::text("one"),
        reply::tool_call("c2", "lookup", "{}"),
        reply::text("two"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool_resolver(resolver)
        .middleware([
            tools::middleware::RateLimitLayer::new(1, Duration::from_secs(3600))
                .max_wait(Duration::ZERO)
                .into(),
        ])
        .build()
        .unwrap();
    let session = Session::new();
    agent.ask(&session, "1").await.unwrap();
    agent.ask(&session, "2").await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "one call per hour");
    let second = &results_of(&model, 3)[0];
    assert!(
        second.is_error && second.content.contains("rate"),
        "{}",
        second.content
    );
}

#[tokio::test]
async fn refused_calls_pass_through_the_agents_middleware() {
    let seen = Arc::new(AtomicUsize::new(0));
    let counter = seen.clone();
    let count = tools::middleware::layer_fn(move |next: Arc<dyn Handler>| -> Arc<dyn Handler> {
        let counter = counter.clone();
        Arc::new(handler_fn(move |ctx: ToolContext, input: String| {
            let (next, counter) = (next.clone(), counter.clone());
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                next.handle(&ctx, &input).await
            }
        }))
    });
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "calculator", r#"{"operation":"modulo","a":1}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tinyagent_demo::calculator_tool())
        .middleware([count.into()])
        .build()
        .unwrap();
    agent.ask(&Session::new(), "hi").await.unwrap();
    let result = &results_of(&model, 1)[0];
    assert!(
        result.is_error && result.content.contains("/operation"),
        "{}",
        result.content
    );
    assert_eq!(
        seen.load(Ordering::SeqCst),
        1,
        "the middleware saw the refused call"
    );
}

#[tokio::test]
async fn the_last_steps_calls_are_not_run() {
    let runs = Arc::new(AtomicUsize::new(0));
    let model = Arc::new(ScriptedModel::new([reply::tool_call(
        "c1",
        "send_email",
        "{}",
    )]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(counting_tool("send_email", runs.clone()))
        .max_steps(1)
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "send it").await.unwrap_err();
    assert!(
        matches!(err, AgentError::StepLimit { max_steps: 1, .. }),
        "{err:?}"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "no email went out unseen");
}

#[tokio::test]
async fn duplicate_and_missing_call_ids_are_replaced() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([
            ("c1", "get_weather", r#"{"city":"北京"}"#),
            ("c1", "get_weather", r#"{"city":"上海"}"#),
            ("", "get_weather", r#"{"city":"广州"}"#),
        ]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tinyagent_demo::weather_tool())
        .build()
        .unwrap();
    agent.ask(&Session::new(), "hi").await.unwrap();
    let results = results_of(&model, 1);
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(ids[0], "c1");
    assert!(ids[1] != "c1" && !ids[1].is_empty() && ids[2] != ids[1] && !ids[2].is_empty());
    // The assistant message the model sees next carries the same ids as the results.
    let assistant = &model.requests()[1].messages[1];
    let call_ids: Vec<&str> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(call_ids, ids);
    assert!(results[1].content.contains("上海") && results[2].content.contains("广州"));
}

#[test]
fn zero_calls_per_step_is_refused_when_built() {
    let err = LlmAgent::builder("a")
        .model(Arc::new(ScriptedModel::default()))
        .max_tool_calls_per_step(0)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("max_tool_calls_per_step"), "{err}");
}

#[test]
fn streamed_calls_without_ids_stay_apart() {
    let mut builder = ModelResponseBuilder::new();
    for event in [
        ModelEvent::ToolCallStart {
            id: String::new(),
            name: "get_weather".into(),
        },
        ModelEvent::ToolCallDelta {
            id: String::new(),
            arguments_fragment: r#"{"city":"#.into(),
        },
        ModelEvent::ToolCallDelta {
            id: String::new(),
            arguments_fragment: r#""北京"}"#.into(),
        },
        ModelEvent::ToolCallStart {
            id: String::new(),
            name: "calculator".into(),
        },
        ModelEvent::ToolCallDelta {
            id: String::new(),
            arguments_fragment: r#"{"a":1}"#.into(),
        },
    ] {
        builder.push(&event);
    }
    let response = builder.build();
    let calls: Vec<_> = response.message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("get_weather", r#"{"city":"北京"}"#)
    );
    assert_eq!(
        (calls[1].name.as_str(), calls[1].arguments.as_str()),
        ("calculator", r#"{"a":1}"#)
    );
}

#[tokio::test]
async fn a_rate_limit_with_an_endless_period_refuses_the_second_call() {
    let runs = Arc::new(AtomicUsize::new(0));
    let limited = tools::wrap_tool(
        counting_tool("t", runs.clone()),
        [tools::middleware::RateLimitLayer::new(1, Duration::MAX)
            .max_wait(Duration::ZERO)
            .into()],
    );
    let ctx = ToolContext::new();
    assert!(limited.handle(&ctx, "{}").await.is_ok());
    for _ in 0..3 {
        let err = limited.handle(&ctx, "{}").await.unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::RateLimited);
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_agent_tool_keeps_the_sub_agents_retryable_model_errors() {
    let model = Arc::new(ScriptedModel::default());
    model.push_error(ModelError::new(
        ModelErrorKind::RateLimited,
        "429 from the provider",
    ));
    let sub = LlmAgent::builder("sub").model(model).build().unwrap();
    let tool = tools::new_agent_tool(sub);
    let err = tool.handle(&ToolContext::new(), "hi").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::RateLimited);
    assert!(err.is_retryable());
    assert!(err.message().contains("429 from the provider"), "{err}");
}

#[tokio::test]
async fn a_json_error_inside_a_tool_is_a_failure_not_bad_arguments() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct NoArgs {}
    let tool = tools::new_func("fetch", "f", |_i: NoArgs| async move {
        let upstream = "<html>502 Bad Gateway</html>";
        let parsed: Value = serde_json::from_str(upstream)?;
        Ok::<_, ToolError>(parsed)
    });
    let err = tool.handle(&ToolContext::new(), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert!(
        err.message().starts_with("JSON error: expected value"),
        "{err}"
    );
}
