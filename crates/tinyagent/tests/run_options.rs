//! Options of one invocation over the agent's own settings: what the model is sent.

use std::sync::Arc;

use futures::StreamExt;
use tinyagent::agent::RunOptions;
use tinyagent::model::{ResponseFormat, Sampling, ToolChoice};
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
    assert_eq!(sent[0].sampling.temperature, Some(0.2));
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

/// A model that takes only the temperature (the trait's default) and counts its calls.
#[derive(Default)]
struct TemperatureOnly {
    calls: std::sync::atomic::AtomicUsize,
}

impl tinyagent::Model for TemperatureOnly {
    fn generate<'a>(
        &'a self,
        _req: &'a tinyagent::ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::ModelResponse, tinyagent::ModelError>> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Box::pin(async { Ok(reply::text("ok")) })
    }
}

#[tokio::test]
async fn sampling_options_reach_a_model_that_takes_them_and_fail_one_that_does_not() {
    let options = RunOptions::new().sampling(
        Sampling::new()
            .top_p(0.9)
            .stop(["END"])
            .seed(7)
            .presence_penalty(0.5)
            .frequency_penalty(0.25),
    );
    let model = Arc::new(ScriptedModel::new([reply::text("56")]));
    let takes_all = agent(model.clone(), None);
    assert!(takes_all.check_options(&options).is_ok());
    run(&takes_all, options.clone()).await.unwrap();
    assert_eq!(model.requests()[0].sampling, options.sampling);

    // A model that would drop them: refused before the run and by the run, nothing sent.
    let plain = Arc::new(TemperatureOnly::default());
    let agent = LlmAgent::builder("plain")
        .model(plain.clone())
        .build()
        .unwrap();
    let err = agent.check_options(&options).unwrap_err();
    let AgentError::Options {
        option, problem, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(option, "top_p");
    assert!(problem.contains("does not take `top_p`"), "{problem}");
    let err = run(&agent, RunOptions::new().sampling(Sampling::new().seed(1)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, AgentError::Options { option, .. } if option == "seed"),
        "{err:?}"
    );
    assert_eq!(plain.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // The temperature it takes.
    assert_eq!(
        run(&agent, RunOptions::new().temperature(0.3))
            .await
            .unwrap(),
        "ok"
    );

    // A fallback takes only what every one of its models takes.
    let fallback = tinyagent::model::FallbackModel::new([
        model as Arc<dyn tinyagent::Model>,
        plain as Arc<dyn tinyagent::Model>,
    ]);
    use tinyagent::Model;
    use tinyagent::model::SamplingOption;
    // The agent's own temperature and the invocation's other settings combine.
    let mut req = tinyagent::ModelRequest::new(vec![]).temperature(0.1);
    req.sampling.overlay(&Sampling::new().seed(3));
    assert_eq!(req.sampling, Sampling::new().temperature(0.1).seed(3));
    assert!(fallback.supports(SamplingOption::Temperature));
    assert!(!fallback.supports(SamplingOption::Seed));
}
