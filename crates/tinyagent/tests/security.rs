//! Safe under anything a model sends: arguments that fail a tool's schema never reach it, logs
//! are redacted, messages are bounded, invocation trees have one budget, cache keys are exact,
//! tool output is bounded, blocking tools do not defeat timeouts.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, IntoTool};
use tinyagent::{
    AgentError, AgentExt, BoxFuture, Budget, Invocation, LlmAgent, Model, ModelError, ModelRequest,
    ModelResponse, Session, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, ToolResult,
    Usage, budget::BudgetResource,
};

// ---------------------------------------------------------------------------------------------
// Helpers

/// The tutorial's weather input: `unit` is a string whose schema allows two values.
#[derive(Debug, Deserialize, JsonSchema)]
struct WeatherInput {
    /// The city
    city: String,
    /// The unit
    #[schemars(extend("enum" = ["celsius", "fahrenheit"]))]
    unit: Option<String>,
}

/// A typed weather tool that counts its runs and reports the unit it got.
fn counting_weather(runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tools::new_func("get_weather", "weather", move |input: WeatherInput| {
        let runs = runs.clone();
        async move {
            runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, ToolError>(format!("{} {:?}", input.city, input.unit))
        }
    })
    .into_tool()
}

/// A hand-written tool with the same schema that counts its runs.
fn counting_manual(runs: Arc<AtomicUsize>) -> Arc<dyn Tool> {
    tools::new_tool(
        "manual",
        "weather, by hand",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"]
        }),
        move |_ctx: ToolContext, input: String| {
            let runs = runs.clone();
            async move {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(input)
            }
        },
    )
}

/// The tool results the model read in its request number `n` (0-based).
fn results_of(model: &ScriptedModel, n: usize) -> Vec<ToolResult> {
    model.requests()[n]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .cloned()
        .collect()
}

/// Runs one agent step with these calls of `tool` and returns what the model read back.
async fn agent_results(tool: Arc<dyn Tool>, arguments: &[&str]) -> Vec<ToolResult> {
    let name = tool.name().to_owned();
    let calls: Vec<(String, String, String)> = arguments
        .iter()
        .enumerate()
        .map(|(i, a)| (format!("c{i}"), name.clone(), (*a).to_owned()))
        .collect();
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls(calls),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tool)
        .max_tool_calls_per_step(64)
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "hi").await.unwrap(), "done");
    results_of(&model, 1)
}

/// Everything a fmt subscriber writes.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// A subscriber writing here at every level, for this thread.
    fn install(&self) -> tracing::subscriber::DefaultGuard {
        let writer = self.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .with_max_level(tracing::Level::TRACE)
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .finish();
        tracing::subscriber::set_default(subscriber)
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Arguments that fail the schema never reach the tool

#[tokio::test]
async fn arguments_a_lenient_reader_skips_do_not_bypass_the_schema() {
    for make in [counting_weather, counting_manual] {
        let runs = Arc::new(AtomicUsize::new(0));
        let tool = make(runs.clone());
        let bad = [
            // The reported cases: junk that serde_json's Value refuses but a typed decode skips.
            r#"{"city":"x","unit":"kelvin","junk":"\ud800"}"#,
            r#"{"city":"x","unit":"kelvin","junk":1e999}"#,
            // Variants: a lone trailing surrogate, a huge negative number, junk nested deep.
            r#"{"city":"x","unit":"kelvin","junk":"\udc00"}"#,
            r#"{"city":"x","unit":"kelvin","junk":[{"a":-1e400}]}"#,
            // Duplicate keys: the schema would see one value, the tool another.
            r#"{"city":"x","unit":"celsius","unit":"kelvin"}"#,
            r#"{"city":"x","unit":"kelvin","unit":"celsius"}"#,
            // Not JSON at all, or not only JSON.
            "{not json",
            r#"{"city":"x"} trailing"#,
            r#"{"city":"x","unit":"kelvin""#,
            "北京",
            r#"["x"]"#,
        ];
        let results = agent_results(tool.clone(), &bad).await;
        assert_eq!(
            runs.load(Ordering::SeqCst),
            0,
            "{}: the tool ran",
            tool.name()
        );
        for (result, input) in results.iter().zip(bad) {
            assert!(result.is_error, "{input}: {}", result.content);
            assert!(
                result.content.contains("invalid arguments"),
                "{input}: {}",
                result.content
            );
        }
        assert!(
            results[4].content.contains("duplicate key \"unit\""),
            "{}",
            results[4].content
        );
        // Valid arguments still run, once each.
        let ok = agent_results(tool, &[r#"{"city":"北京","unit":"celsius"}"#, " {} "]).await;
        assert!(!ok[0].is_error, "{}", ok[0].content);
        assert!(ok[1].is_error, "city is required: {}", ok[1].content);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }
}

#[tokio::test]
async fn typed_tools_decode_the_value_that_passed_the_schema() {
    let runs = Arc::new(AtomicUsize::new(0));
    let tool = tools::wrap_tool(
        counting_weather(runs.clone()),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let ctx = ToolContext::default();
    // JSON whitespace around the arguments is trimmed and not forwarded.
    let out = tool
        .handle(&ctx, "{\"city\":\"北京\",\"unit\":\"celsius\"}\r\n\t ")
        .await
        .unwrap();
    assert_eq!(
        out, r#"北京 Some("celsius")"#,
        "text results are not JSON-quoted"
    );
    let out = tool.handle(&ctx, " {\"city\":\"上海\"}\n").await.unwrap();
    assert_eq!(out, "上海 None");
    for bad in [
        r#"{"city":"x","unit":"kelvin","junk":"\ud800"}"#,
        r#"{"city":"x","unit":"kelvin"}"#,
    ] {
        let err = tool.handle(&ctx, bad).await.unwrap_err();
        assert_eq!(err.kind(), ToolErrorKind::InvalidInput, "{err}");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // A hand-written tool behind validation gets the text that was checked, trimmed of JSON
    // whitespace.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let echo = tools::new_tool(
        "echo",
        "echo",
        json!({"type": "object"}),
        move |_ctx: ToolContext, input: String| {
            log.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(input) }
        },
    );
    let echo = tools::wrap_tool(echo, [tools::middleware::ValidationLayer::new().into()]);
    echo.handle(&ctx, "  {\"a\":1}\r\n\t").await.unwrap();
    echo.handle(&ctx, "   ").await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [r#"{"a":1}"#, "{}"]);
}

#[tokio::test]
async fn plain_text_reaches_only_tools_that_declare_it() {
    let got = Arc::new(Mutex::new(Vec::new()));
    let log = got.clone();
    let translator = tools::new_agent_tool_fn(
        "translator",
        "translates",
        move |_ctx: ToolContext, message: String| {
            log.lock().unwrap().push(message.clone());
            async move { Ok::<_, ToolError>(format!("ok: {message}")) }
        },
    );
    assert!(translator.hints().plain_text);
    let results = agent_results(
        translator.into_tool(),
        &[
            "你好世界",
            r#"{"message": "hi"}"#,
            r#""a JSON string""#,
            // An object must pass the schema, also for a tool that takes text.
            r#"{"msg": "hi"}"#,
            r#"{"message": "hi", "message": "bye"}"#,
            r#"{"message": "hi", "junk": "\ud800"}"#,
            // Text that starts like an object must be one.
            r#"{"message": "hi""#,
        ],
    )
    .await;
    let errors: Vec<bool> = results.iter().map(|r| r.is_error).collect();
    assert_eq!(
        errors,
        [false, false, false, true, true, true, true],
        "{results:#?}"
    );
    assert_eq!(*got.lock().unwrap(), ["你好世界", "hi", "a JSON string"]);
}

#[tokio::test]
async fn a_tool_whose_schema_does_not_compile_still_gets_only_json_objects() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let odd = tools::new_tool(
        "odd",
        "a schema jsonschema refuses",
        json!({"type": "object", "properties": {"a": {"type": 12}}}),
        move |_ctx: ToolContext, input: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(input) }
        },
    );
    let results = agent_results(odd, &["{not json", "[1]", r#"{"a":1,"a":2}"#, r#"{"a":1}"#]).await;
    let errors: Vec<bool> = results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [true, true, true, false]);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

// ---------------------------------------------------------------------------------------------
// 2. Secrets stay out of logs

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Login {
    user: String,
    password: String,
}

fn login_tool() -> Arc<dyn Tool> {
    tools::new_func("login", "logs in", |i: Login| async move {
        Ok::<_, ToolError>(format!("welcome {}", i.user))
    })
    .into_tool()
}

#[tokio::test]
async fn errors_quoting_the_input_are_redacted_in_logs_but_not_for_the_model() {
    let captured = Captured::default();
    let _guard = captured.install();
    let logged = tools::wrap_tool(login_tool(), [tools::with_logging()]);
    // The reported case: a missing field, recording off.
    let err = logged
        .handle(&ToolContext::default(), r#"{"password":"S3CR3T"}"#)
        .await
        .unwrap_err();
    assert!(err.message().contains("missing field `user`"), "{err}");
    assert!(
        err.message().contains("S3CR3T"),
        "the model reads its own input: {err}"
    );
    // Variants: not JSON, a wrong type, a secret in an authorization header.
    for input in [
        r#"{"user":"ann","password":"S3CR3T""#,
        r#"{"user":1,"password":"S3CR3T"}"#,
        r#"{"user":"ann","pwd":"S3CR3T"} trailing"#,
        "user=ann&password=S3CR3T",
        r#"{"user":"Authorization: Bearer S3CR3T-abcdef"}"#,
    ] {
        let _ = logged.handle(&ToolContext::default(), input).await;
    }
    let logs = captured.text();
    assert!(logs.contains("tool call failed"), "{logs}");
    assert!(logs.contains("[REDACTED]"), "{logs}");
    assert!(!logs.contains("S3CR3T"), "{logs}");
}

#[tokio::test]
async fn recorded_arguments_and_results_are_redacted_whatever_their_shape() {
    let captured = Captured::default();
    let _guard = captured.install();
    let secrets = [
        r#"{"pwd":"S3CR3T-1","city":"北京"}"#,
        r#"{"pass":"S3CR3T-2"}"#,
        r#"{"pin":"S3CR3T-3","otp":"S3CR3T-4"}"#,
        r#"{"ssh_key":"S3CR3T-5","aws_access_key_id":"S3CR3T-6","aws_secret_access_key":"S3CR3T-7"}"#,
        r#"{"headers":{"Authorization":"Bearer S3CR3T-8"}}"#,
        r#"{"url":"https://ann:S3CR3T-9@db.example/x"}"#,
        r#"{"url":"https://api.example/v1?q=1&api_key=S3CR3T-10"}"#,
        r#"{"note":"curl -H 'Authorization: Bearer S3CR3T-11' https://x"}"#,
        // Not parseable: truncated, trailing text, nested past serde_json's limit.
        r#"{"password":"S3CR3T-12","city":"#,
        r#"{"token":"S3CR3T-13"} and more"#,
    ];
    let deep = format!(
        "{}{{\"secret\":\"S3CR3T-14\"}}{}",
        "[".repeat(200),
        "]".repeat(200)
    );
    let echo = tools::new_tool(
        "echo",
        "echo",
        json!({"type": "object"}),
        |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) },
    );
    let logged = tools::wrap_tool(
        echo,
        [tools::middleware::LoggingLayer::new()
            .record_arguments(true)
            .record_results(true)
            .into()],
    );
    let ctx = ToolContext::default();
    for input in secrets.iter().copied().chain([deep.as_str()]) {
        let out = logged.handle(&ctx, input).await.unwrap();
        assert_eq!(out, input, "the tool's result is not changed");
    }
    // A plain-text result that carries a credential.
    let plain = tools::new_tool(
        "plain",
        "plain",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move {
            Ok::<_, ToolError>("connected with password=S3CR3T-15 as ann".to_owned())
        },
    );
    let plain = tools::wrap_tool(
        plain,
        [tools::middleware::LoggingLayer::new()
            .record_results(true)
            .into()],
    );
    plain.handle(&ctx, "{}").await.unwrap();

    let logs = captured.text();
    for n in 1..=15 {
        assert!(
            !logs.contains(&format!("S3CR3T-{n}\"")),
            "secret {n} leaked: {logs}"
        );
        assert!(
            !logs.contains(&format!("S3CR3T-{n}")),
            "secret {n} leaked: {logs}"
        );
    }
    assert!(logs.contains("北京"), "other values stay: {logs}");
    assert!(logs.contains("q=1"), "other query parameters stay: {logs}");
    assert!(logs.contains("as ann"), "{logs}");
}

#[tokio::test]
async fn the_agent_loop_logs_failed_calls_redacted() {
    let captured = Captured::default();
    let _guard = captured.install();
    let results = agent_results(
        login_tool(),
        &[
            r#"{"password":["S3CR3T"],"usr":"ann"}"#,
            r#"{"user":"ann","password":"S3CR3T"} trailing"#,
        ],
    )
    .await;
    assert!(results.iter().all(|r| r.is_error));
    // The model reads the offending value; the log does not.
    assert!(
        results[0]
            .content
            .contains(r#"/password: ["S3CR3T"] is not of type"#),
        "{}",
        results[0].content
    );
    assert!(
        results[1].content.contains("S3CR3T"),
        "{}",
        results[1].content
    );
    let logs = captured.text();
    assert!(logs.contains("tool call failed"), "{logs}");
    assert!(!logs.contains("S3CR3T"), "{logs}");
}

// ---------------------------------------------------------------------------------------------
// 3. Bounded messages

#[tokio::test]
async fn error_messages_are_bounded_whatever_the_input() {
    let ctx = ToolContext::default();
    let calc = tinyagent_demo::calculator_tool();
    // The reported case: a 300 KB argument in the wrong place.
    let huge = format!(r#"{{"operation":"add","a":"{}"}}"#, "7".repeat(300_000));
    let err = calc.handle(&ctx, &huge).await.unwrap_err();
    assert!(err.message().len() < 2_000, "{} bytes", err.message().len());
    assert!(
        err.message().contains("at `a`"),
        "{}",
        &err.message()[..200]
    );
    let checked = tools::wrap_tool(
        calc.clone(),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let err = checked.handle(&ctx, &huge).await.unwrap_err();
    assert!(err.message().len() < 2_000, "{} bytes", err.message().len());
    assert!(err.message().contains("/a: "), "{}", &err.message()[..200]);

    // 500 unexpected keys: ten are listed, the rest counted.
    let strict = tools::wrap_tool(
        tools::new_tool(
            "strict",
            "strict",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) },
        ),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let many: serde_json::Map<String, Value> =
        (0..500).map(|i| (format!("key_{i}"), json!(i))).collect();
    let err = strict
        .handle(&ctx, &Value::Object(many).to_string())
        .await
        .unwrap_err();
    let message = err.message();
    assert!(message.len() < 2_000, "{} bytes: {message}", message.len());
    assert!(
        message.starts_with("invalid arguments (500 problems)"),
        "{message}"
    );
    assert!(message.ends_with("; and 490 more"), "{message}");
    assert_eq!(
        message.matches("unexpected property").count(),
        10,
        "{message}"
    );

    // Many violations of different kinds, and a huge key name.
    let typed = tools::wrap_tool(
        tools::new_tool(
            "typed",
            "typed",
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            |_ctx: ToolContext, input: String| async move { Ok::<_, ToolError>(input) },
        ),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let mut bad: serde_json::Map<String, Value> = (0..100)
        .map(|i| (format!("k{i}"), json!("x".repeat(10_000))))
        .collect();
    bad.insert("k".repeat(100_000), json!("y"));
    let err = typed
        .handle(&ctx, &Value::Object(bad).to_string())
        .await
        .unwrap_err();
    assert!(err.message().len() < 5_000, "{} bytes", err.message().len());
    assert!(err.message().contains("and 91 more"), "{}", err.message());
}

// ---------------------------------------------------------------------------------------------
// 4. One budget per invocation tree

/// A model that always calls the tool `call`, counting its calls and reporting `tokens` each.
struct AlwaysCalls {
    tool: &'static str,
    calls: AtomicUsize,
    tokens: u64,
}

impl AlwaysCalls {
    fn new(tool: &'static str, tokens: u64) -> Arc<Self> {
        Arc::new(Self {
            tool,
            calls: AtomicUsize::new(0),
            tokens,
        })
    }
}

impl Model for AlwaysCalls {
    fn name(&self) -> &str {
        "always-calls"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let args = if self.tool == "self" {
            r#"{"message": "again"}"#
        } else {
            "{}"
        };
        let reply =
            reply::tool_call(format!("c{n}"), self.tool, args).usage(Usage::new(self.tokens, 0));
        Box::pin(async move { Ok(reply) })
    }
}

/// An agent named `self` whose only tool is itself, as an agent tool.
fn self_calling(model: Arc<AlwaysCalls>, budget: Option<Budget>) -> LlmAgent {
    let me: Arc<OnceLock<LlmAgent>> = Arc::new(OnceLock::new());
    let handle = me.clone();
    let mut builder = LlmAgent::builder("self").model(model).tool_resolver(tools::resolver_fn(
        move |_inv: &Invocation| {
            let agent = handle.get().cloned();
            async move { Ok::<_, ToolError>(agent.map(tools::new_agent_tool).into_iter().collect()) }
        },
    ));
    if let Some(budget) = budget {
        builder = builder.budget(budget);
    }
    let agent = builder.build().unwrap();
    me.set(agent.clone()).unwrap();
    agent
}

#[tokio::test]
async fn an_agent_calling_itself_stops_at_the_shared_budget() {
    // The reported case: the default max_steps (16) and depth (4) alone allowed ~868,000 model
    // calls for one message. The default budget allows 64 in the whole tree.
    let model = AlwaysCalls::new("self", 10);
    let agent = self_calling(model.clone(), None);
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    match &err {
        AgentError::BudgetExhausted {
            agent,
            resource,
            limit,
            used,
        } => {
            assert_eq!(agent, "self");
            assert_eq!(*resource, BudgetResource::ModelCalls);
            assert_eq!((*limit, *used), (64, 65));
        }
        other => panic!("expected BudgetExhausted, got {other:?}"),
    }
    assert_eq!(model.calls.load(Ordering::SeqCst), 64);
    assert!(
        err.to_string().contains("budget of 64 model calls"),
        "{err}"
    );

    // Variant: a tighter budget on the top agent bounds the nested ones too.
    let model = AlwaysCalls::new("self", 10);
    let agent = self_calling(model.clone(), Some(Budget::default().max_model_calls(7)));
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(err, AgentError::BudgetExhausted { limit: 7, .. }),
        "{err:?}"
    );
    assert_eq!(model.calls.load(Ordering::SeqCst), 7);
}

#[tokio::test]
async fn tool_call_and_token_budgets_end_the_run() {
    let model = AlwaysCalls::new("get_weather", 0);
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tinyagent_demo::weather_tool())
        .budget(Budget::UNLIMITED.max_tool_calls(3))
        .max_steps(100)
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::BudgetExhausted {
                resource: BudgetResource::ToolCalls,
                limit: 3,
                used: 4,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(model.calls.load(Ordering::SeqCst), 4);

    let model = AlwaysCalls::new("get_weather", 1_000);
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(tinyagent_demo::weather_tool())
        .budget(Budget::UNLIMITED.max_tokens(4_500))
        .max_steps(100)
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::BudgetExhausted {
                resource: BudgetResource::Tokens,
                limit: 4_500,
                used: 5_000,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(model.calls.load(Ordering::SeqCst), 5);
}

#[tokio::test(start_paused = true)]
async fn the_wall_time_budget_interrupts_a_tool_in_flight() {
    let slow = tools::new_tool(
        "slow",
        "sleeps an hour",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move {
            tokio::time::sleep(Duration::from_secs(3_600)).await;
            Ok::<_, ToolError>("done".to_owned())
        },
    );
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "slow", "{}"),
        reply::text("no"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(slow)
        .budget(Budget::default().max_duration(Duration::from_secs(60)))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(
            err,
            AgentError::BudgetExhausted {
                resource: BudgetResource::WallTime,
                limit: 60_000,
                ..
            }
        ),
        "{err:?}"
    );
    // Paused clock: exactly the budget passed, not the tool's hour.
    assert_eq!(started.elapsed(), Duration::from_secs(60));
    assert_eq!(model.request_count(), 1);
}

#[tokio::test]
async fn nested_agents_draw_from_the_callers_budget() {
    // The sub-agent's own budget is generous; the caller's is what counts.
    let inner_model = Arc::new(ScriptedModel::new([
        reply::text("inner 1"),
        reply::text("inner 2"),
    ]));
    let inner = LlmAgent::builder("inner")
        .model(inner_model.clone())
        .budget(Budget::UNLIMITED)
        .build()
        .unwrap();
    let outer_model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "inner", r#"{"message":"one"}"#),
        reply::tool_call("c2", "inner", r#"{"message":"two"}"#),
        reply::text("never"),
    ]));
    let outer = LlmAgent::builder("outer")
        .model(outer_model.clone())
        .tool(tools::new_agent_tool(inner))
        .budget(Budget::UNLIMITED.max_model_calls(3))
        .build()
        .unwrap();
    let err = outer.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(err, AgentError::BudgetExhausted { limit: 3, .. }),
        "{err:?}"
    );
    // outer 1, inner 1, outer 2 — then the second inner call is refused by the budget.
    assert_eq!(outer_model.request_count(), 2);
    assert_eq!(inner_model.request_count(), 1);
    let refused = &results_of(&outer_model, 1)[0];
    assert!(refused.content.contains("inner 1"), "{refused:?}");
}

// ---------------------------------------------------------------------------------------------
// 5. Exact cache keys

#[tokio::test]
async fn cache_keys_are_exact() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let echo = tools::try_new_tool(
        "echo",
        "echo",
        json!({"type": "object"}),
        move |_ctx: ToolContext, input: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move { Ok::<_, ToolError>(input) }
        },
    )
    .unwrap()
    .with_hints(ToolHints::READ_ONLY);
    let cached = tools::wrap_tool(
        Arc::new(echo),
        [
            tools::middleware::CacheLayer::new()
                .ttl(Duration::from_secs(60))
                .capacity(100)
                .into(),
            tools::middleware::ValidationLayer::new().into(),
        ],
    );
    let ctx = ToolContext::default();
    let call = async |input: &str| cached.handle(&ctx, input).await;
    for (a, b) in [
        (
            r#"{"id":18446744073709551616}"#,
            r#"{"id":18446744073709551617}"#,
        ),
        (r#"{"x":0.1}"#, r#"{"x":0.10000000000000000555}"#),
        (r#"{"x":1}"#, r#"{"x":1.0}"#),
    ] {
        let before = runs.load(Ordering::SeqCst);
        assert_eq!(call(a).await.unwrap(), a);
        assert_eq!(call(b).await.unwrap(), b, "{b} was served {a}'s result");
        assert_eq!(runs.load(Ordering::SeqCst), before + 2);
    }
    // Same value, other spelling: one run.
    let before = runs.load(Ordering::SeqCst);
    call(r#"{"a":2,"b":[1,2]}"#).await.unwrap();
    call(r#" { "b" : [1, 2], "a" : 2 } "#).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
    // Duplicate keys never hit an entry: they go on to validation, which refuses them.
    let err = call(r#"{"a":1,"a":2,"b":[1,2]}"#).await.unwrap_err();
    assert!(err.message().contains("duplicate key"), "{err}");
    assert_eq!(runs.load(Ordering::SeqCst), before + 1);
}

// ---------------------------------------------------------------------------------------------
// 6. A default bound on tool output

#[tokio::test]
async fn agents_bound_tool_output_by_default() {
    let big = || {
        tools::new_tool(
            "big",
            "returns a lot",
            json!({"type": "object"}),
            |_ctx: ToolContext, input: String| async move {
                if input.contains("fail") {
                    Err(ToolError::failed("e".repeat(1 << 20)))
                } else {
                    Ok::<_, ToolError>("x".repeat(5 << 20))
                }
            },
        )
    };
    let results = agent_results(big(), &["{}", r#"{"fail":true}"#]).await;
    for result in &results {
        assert!(result.content.chars().count() <= tinyagent::agent::DEFAULT_MAX_TOOL_OUTPUT);
        assert!(
            result.content.contains("characters omitted"),
            "{}",
            &result.content[..100]
        );
    }
    assert!(results[1].is_error);

    // Configurable, and off on request.
    for (limit, expected) in [(Some(1_000), 1_000), (None, 5 << 20)] {
        let model = Arc::new(ScriptedModel::new([
            reply::tool_call("c", "big", "{}"),
            reply::text("ok"),
        ]));
        let agent = LlmAgent::builder("a")
            .model(model.clone())
            .tool(big())
            .max_tool_output(limit)
            .build()
            .unwrap();
        agent.ask(&Session::new(), "go").await.unwrap();
        let content = &results_of(&model, 1)[0].content;
        assert!(content.chars().count() <= expected);
        assert!(content.chars().count() > expected / 2);
    }
}

// ---------------------------------------------------------------------------------------------
// 7. Blocking tools

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_returns_while_a_declared_blocking_tool_still_blocks() {
    let (release, wait) = mpsc::channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    let finished = Arc::new(AtomicBool::new(false));
    let done = finished.clone();
    let blocking = tools::try_new_tool(
        "blocking",
        "blocks its thread until released",
        json!({"type": "object"}),
        move |_ctx: ToolContext, _input: String| {
            let (wait, done) = (wait.clone(), done.clone());
            async move {
                // Blocks the thread, as synchronous code does, until the test says so.
                let _ = wait.lock().unwrap().recv();
                done.store(true, Ordering::SeqCst);
                Ok::<_, ToolError>("finished".to_owned())
            }
        },
    )
    .unwrap()
    .with_hints(ToolHints::READ_ONLY.blocking(true));
    let quick = tools::try_new_tool(
        "quick",
        "answers at once",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move { Ok::<_, ToolError>("quick".to_owned()) },
    )
    .unwrap()
    .with_hints(ToolHints::READ_ONLY);
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([("c1", "blocking", "{}"), ("c2", "quick", "{}")]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tools([Arc::new(blocking) as Arc<dyn Tool>, Arc::new(quick)])
        .tool_timeout(Duration::from_millis(100))
        .build()
        .unwrap();
    let answer = agent.ask(&Session::new(), "go").await.unwrap();
    assert_eq!(answer, "done");
    // The run is over while the tool is still blocked: the timeout returned on its own.
    assert!(!finished.load(Ordering::SeqCst));
    let results = results_of(&model, 1);
    assert!(
        results[0].is_error && results[0].content.contains("timed out"),
        "{results:?}"
    );
    assert_eq!(results[1].content, "quick");
    release.send(()).unwrap();
}

// ---------------------------------------------------------------------------------------------
// 8. Smaller ones

#[derive(Debug, Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Count {
    n: u32,
    small: i16,
}

#[tokio::test]
async fn bounded_integers_are_refused_by_the_schema_not_only_the_decoder() {
    let schema = tools::generate_schema::<Count>();
    assert_eq!(schema["properties"]["n"]["maximum"], u32::MAX);
    assert_eq!(schema["properties"]["small"]["minimum"], i16::MIN);
    let tool = tools::wrap_tool(
        tools::new_func("count", "counts", |c: Count| async move {
            Ok::<_, ToolError>(c.n)
        }),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let ctx = ToolContext::default();
    assert_eq!(
        tool.handle(&ctx, r#"{"n":4294967295,"small":-32768}"#)
            .await
            .unwrap(),
        "4294967295"
    );
    for bad in [
        r#"{"n":4294967296,"small":0}"#,
        r#"{"n":1,"small":-32769}"#,
        r#"{"n":-1,"small":0}"#,
    ] {
        let err = tool.handle(&ctx, bad).await.unwrap_err();
        assert!(
            err.message().starts_with("invalid arguments (1 problem)"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn strict_schema_keeps_required_names_and_drops_non_schema_values() {
    let strict = tools::schema::strict_schema(&json!({
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "required": ["a", "b"],
        "additionalProperties": "yes"
    }));
    assert_eq!(strict["required"], json!(["a", "b"]));
    assert_eq!(strict["properties"]["b"], json!({}));
    assert_eq!(strict["additionalProperties"], json!(false));
    let validator = tools::schema::SchemaValidator::new(&strict).unwrap();
    assert!(validator.validate(&json!({"a": "x", "b": 1})).is_ok());
    assert!(validator.validate(&json!({"a": "x"})).is_err());
    assert!(
        validator
            .validate(&json!({"a": "x", "b": 1, "c": 2}))
            .is_err()
    );
    for value in [json!(1), json!(null), json!(["x"]), json!(true)] {
        let strict =
            tools::schema::strict_schema(&json!({"type": "object", "additionalProperties": value}));
        assert_eq!(strict["additionalProperties"], json!(false), "{value}");
    }
    // A map's value schema cannot be made strict; it is kept.
    let map = tools::schema::strict_schema(
        &json!({"type": "object", "additionalProperties": {"type": "number"}}),
    );
    assert_eq!(map["additionalProperties"], json!({"type": "number"}));
}

#[tokio::test]
async fn a_null_the_schema_refuses_counts_as_left_out_and_the_tool_gets_valid_arguments() {
    use std::sync::{Arc, Mutex};
    let got: Arc<Mutex<Vec<String>>> = Arc::default();
    let record = got.clone();
    let tool = tinyagent::tools::new_tool(
        "weather",
        "weather",
        serde_json::json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "note": {"type": ["string", "null"]}
            },
            "required": ["city"],
            "additionalProperties": false
        }),
        move |_ctx: tinyagent::ToolContext, raw: String| {
            record.lock().unwrap().push(raw);
            async move { Ok::<_, tinyagent::ToolError>("ok".to_owned()) }
        },
    );
    let checked = tinyagent::tools::wrap_tool(
        tool,
        [tinyagent::tools::middleware::ValidationLayer::new().into()],
    );
    let ctx = tinyagent::ToolContext::default();
    // OpenAI's strict mode sends null for an optional field: the tool gets it left out.
    checked
        .handle(&ctx, r#"{"city":"x","unit":null}"#)
        .await
        .unwrap();
    // A null the schema allows is kept as sent.
    checked
        .handle(&ctx, r#"{"city":"x","note":null}"#)
        .await
        .unwrap();
    // A null for a required field is still an error, and the tool does not run.
    let err = checked.handle(&ctx, r#"{"city":null}"#).await.unwrap_err();
    assert_eq!(err.kind(), tinyagent::ToolErrorKind::InvalidInput);
    assert!(err.message().contains("/city"), "{err}");
    assert_eq!(
        *got.lock().unwrap(),
        [r#"{"city":"x"}"#, r#"{"city":"x","note":null}"#]
    );
}

/// Validation and the tool agree on what JSON is: whitespace JSON does not allow (`\v`, `\f`,
/// U+2028, U+3000, U+00A0) around the arguments is refused by the schema check, as the tool's
/// own `serde_json` parse refuses it, never passed on for the tool to fail on.
#[tokio::test]
async fn validation_and_the_tool_share_one_definition_of_json_whitespace() {
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let manual = tools::new_tool(
        "add",
        "adds",
        json!({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}),
        move |_ctx: ToolContext, input: String| {
            counter.fetch_add(1, Ordering::SeqCst);
            async move {
                let value: Value = serde_json::from_str(&input).map_err(|e| {
                    ToolError::invalid_input(format!("the tool could not parse {input:?}: {e}"))
                })?;
                Ok::<_, ToolError>(format!("{}", value["a"].as_i64().unwrap_or(0) + 1))
            }
        },
    );
    let checked = tools::wrap_tool(
        manual.clone(),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let typed = tools::wrap_tool(
        counting_weather(Arc::new(AtomicUsize::new(0))),
        [tools::middleware::ValidationLayer::new().into()],
    );
    let ctx = ToolContext::default();
    for ws in [
        '\u{0b}', '\u{0c}', '\u{2028}', '\u{3000}', '\u{a0}', '\u{feff}',
    ] {
        for input in [format!("{ws}{{\"a\":1}}"), format!("{{\"a\":1}}{ws}")] {
            // Unchecked, the tool's own parse refuses it …
            let direct = manual.handle(&ctx, &input).await.unwrap_err();
            assert_eq!(
                direct.kind(),
                ToolErrorKind::InvalidInput,
                "{input:?}: {direct}"
            );
            // … and checked, validation refuses it first, saying it is not JSON.
            let before = runs.load(Ordering::SeqCst);
            let err = checked.handle(&ctx, &input).await.unwrap_err();
            assert_eq!(err.kind(), ToolErrorKind::InvalidInput, "{input:?}: {err}");
            assert!(err.message().contains("not valid JSON"), "{input:?}: {err}");
            assert_eq!(
                runs.load(Ordering::SeqCst),
                before,
                "{input:?}: the tool ran"
            );
            assert!(tools::parse_arguments(&input).is_err(), "{input:?}");
            assert!(tools::canonical_json(&input).is_none(), "{input:?}");
        }
        let blank = ws.to_string();
        let err = checked.handle(&ctx, &blank).await.unwrap_err();
        assert!(err.message().contains("not valid JSON"), "{blank:?}: {err}");
        let typed_input = format!("{{\"city\":\"北京\"}}{ws}");
        let err = typed.handle(&ctx, &typed_input).await.unwrap_err();
        assert_eq!(
            err.kind(),
            ToolErrorKind::InvalidInput,
            "{typed_input:?}: {err}"
        );
    }
    // JSON's own whitespace passes both, and the tool gets the trimmed text.
    for ws in [' ', '\t', '\n', '\r'] {
        let input = format!("{ws}{{\"a\":41}}{ws}");
        assert_eq!(
            checked.handle(&ctx, &input).await.unwrap(),
            "42",
            "{input:?}"
        );
        assert_eq!(
            manual.handle(&ctx, &input).await.unwrap(),
            "42",
            "{input:?}"
        );
    }
}

/// Field names are compared after Unicode compatibility normalisation and case folding, `key`
/// on its own is a secret's name, and token-shaped strings are masked in plain-text results
/// too; default logging records neither arguments nor results.
#[tokio::test]
async fn recorded_text_masks_keys_full_width_names_and_token_shapes() {
    let captured = Captured::default();
    let _guard = captured.install();
    let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbm4ifQ.c2lnbmF0dXJlLVMzQ1IzVC0x";
    let arguments = [
        r#"{"key":"S3CR3T-A1","city":"北京"}"#.to_owned(),
        r#"{"ｐａｓｓｗｏｒｄ":"S3CR3T-A2"}"#.to_owned(),
        r#"{"ＡＰＩ＿ＫＥＹ":"S3CR3T-A3"}"#.to_owned(),
        r#"{"Key":{"id":"S3CR3T-A4"}}"#.to_owned(),
        "ｐａｓｓｗｏｒｄ：S3CR3T-A5 for ann".to_owned(),
    ];
    let results = [
        "your key is sk-proj-S3CR3TB1abcdefghijklmnop, keep it safe".to_owned(),
        "use Authorization: Bearer S3CR3TB2xyz to call".to_owned(),
        format!("session {jwt} issued"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nS3CR3TB4\n-----END OPENSSH PRIVATE KEY-----"
            .to_owned(),
        "stripe sk_live_S3CR3TB5abcdefghijkl ok".to_owned(),
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nS3CR3TB6\n-----END PGP PRIVATE KEY BLOCK-----"
            .to_owned(),
        "gitlab glpat-S3CR3TB7abcdefghijklmn".to_owned(),
    ];
    let replies = Arc::new(Mutex::new(results.to_vec()));
    let source = replies.clone();
    let tool = tools::new_tool(
        "echo",
        "echo",
        json!({"type": "object"}),
        move |_ctx: ToolContext, _input: String| {
            let next = source.lock().unwrap().pop().unwrap_or_default();
            async move { Ok::<_, ToolError>(next) }
        },
    );
    let recorded = tools::wrap_tool(
        tool.clone(),
        [tools::middleware::LoggingLayer::new()
            .record_arguments(true)
            .record_results(true)
            .into()],
    );
    let ctx = ToolContext::default();
    for input in &arguments {
        recorded.handle(&ctx, input).await.unwrap();
    }
    for _ in 0..results.len() - arguments.len() {
        recorded.handle(&ctx, "{}").await.unwrap();
    }
    assert!(
        replies.lock().unwrap().is_empty(),
        "every result was returned"
    );
    let logs = captured.text();
    for secret in [
        "S3CR3T-A1",
        "S3CR3T-A2",
        "S3CR3T-A3",
        "S3CR3T-A4",
        "S3CR3T-A5",
        "S3CR3TB1",
        "S3CR3TB2",
        "c2lnbmF0dXJl",
        "S3CR3TB4",
        "S3CR3TB5",
        "S3CR3TB6",
        "S3CR3TB7",
    ] {
        assert!(!logs.contains(secret), "{secret} leaked: {logs}");
    }
    assert!(logs.contains("北京"), "other values stay: {logs}");
    assert!(
        logs.contains("keep it safe"),
        "the text around a token stays: {logs}"
    );
    assert!(logs.contains("for ann"), "{logs}");
    // Names that only contain the word stay readable.
    for harmless in [
        r#"{"keyword":"rust","monkey":"george","keys_pressed":3}"#,
        "keyboard: qwerty, turkey=roast",
    ] {
        assert_eq!(tinyagent::redact::text(harmless), harmless);
    }

    // Default logging records no arguments or results at all.
    let before = captured.text().len();
    let quiet = tools::wrap_tool(tool, [tools::middleware::LoggingLayer::new().into()]);
    quiet.handle(&ctx, r#"{"key":"S3CR3T-C1"}"#).await.unwrap();
    let logs = captured.text();
    assert!(logs.len() > before, "the call was logged: {logs}");
    assert!(!logs.contains("S3CR3T-C1"), "{logs}");
}
