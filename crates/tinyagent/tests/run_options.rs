//! Options of one invocation over the agent's own settings: what the model is sent.

use std::sync::Arc;

use futures::StreamExt;
use tinyagent::agent::RunOptions;
use tinyagent::model::{ResponseFormat, ToolChoice};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{Agent, AgentError, Event, Invocation, LlmAgent, Session};

fn agent(model: Arc<ScriptedModel>, max_tokens: Option<u32>) -> LlmAgent {
    let mut builder = LlmAgent::builder("assistant")
        .model(model)
        .tool(tinyagent_demo::calculator_tool());
    if let Some(max) = max_tokens {
        builder = builder.max_tokens(max);
    }
    builder.build().unwrap()
}

async fn run(agent: &LlmAgent, options: RunOptions) -> Result<String, AgentError> {
    let inv = Invocation::new(Session::new(), "7 x 8?").with_options(options);
    let mut events = agent.run(inv);
    while let Some(event) = events.next().await {
        if let Event::Finished { answer, .. } = event? {
            return Ok(answer);
        }
    }
    panic!("no answer")
}

#[tokio::test]
async fn options_reach_the_model_and_a_token_limit_is_never_raised() {
    let model = Arc::new(ScriptedModel::new([reply::text("56"), reply::text("56")]));
    let with_limit = agent(model.clone(), Some(100));
    let format = ResponseFormat::json_schema("product", serde_json::json!({"type": "object"}));
    let options = RunOptions::new()
        .max_tokens(5)
        .temperature(0.2)
        .tool_choice(ToolChoice::None)
        .response_format(format.clone());
    run(&with_limit, options).await.unwrap();
    // A client asking for more than the operator allows gets the operator's limit.
    run(&with_limit, RunOptions::new().max_tokens(1_000))
        .await
        .unwrap();
    let sent = model.requests();
    assert_eq!(sent[0].max_tokens, Some(5));
    assert_eq!(sent[0].temperature, Some(0.2));
    assert_eq!(sent[0].tool_choice, Some(ToolChoice::None));
    assert_eq!(sent[0].response_format, Some(format));
    assert_eq!(sent[1].max_tokens, Some(100));
    assert_eq!(sent[1].tool_choice, None);
}

#[tokio::test]
async fn a_tool_choice_naming_a_tool_the_agent_lacks_runs_nothing() {
    let model = Arc::new(ScriptedModel::new([reply::text("56")]));
    let agent = agent(model.clone(), None);
    let err = run(
        &agent,
        RunOptions::new().tool_choice(ToolChoice::Tool("rm_rf".into())),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, AgentError::Options { .. }), "{err:?}");
    assert!(err.to_string().contains("calculator"), "{err}");
    assert_eq!(model.request_count(), 0);
    let answer = run(
        &agent,
        RunOptions::new().tool_choice(ToolChoice::Tool("calculator".into())),
    )
    .await
    .unwrap();
    assert_eq!(answer, "56");
    assert_eq!(
        model.requests()[0].tool_choice,
        Some(ToolChoice::Tool("calculator".into()))
    );
}

#[tokio::test]
async fn a_forced_tool_choice_holds_for_the_first_step_only() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call(
            "c1",
            "calculator",
            r#"{"operation":"multiply","a":7,"b":8}"#,
        ),
        reply::text("56"),
    ]));
    let agent = agent(model.clone(), None);
    let answer = run(&agent, RunOptions::new().tool_choice(ToolChoice::Required))
        .await
        .unwrap();
    assert_eq!(answer, "56");
    let sent = model.requests();
    assert_eq!(sent[0].tool_choice, Some(ToolChoice::Required));
    assert_eq!(
        sent[1].tool_choice, None,
        "the agent's own choice after the first step"
    );
}
