//! The agent loop, end to end, against a scripted model.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tinyagent::agent::{ConfigProblem, ToolSource};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, AgentTool, resolver_fn};
use tinyagent::{
    Agent, AgentError, AgentExt, Event, Invocation, LlmAgent, ModelError, ModelRequest, Role,
    Session, Tool, ToolContext, ToolError, ToolErrorKind, ToolHints, ToolResult, Usage,
    model::ModelErrorKind,
};

/// Counts how often a tool ran.
#[derive(Default)]
struct Calls(AtomicUsize);

impl Calls {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A tool that records its calls and returns `"<name> ok"`.
fn counted(name: &'static str, calls: Arc<Calls>) -> Arc<dyn Tool> {
    tools::new_tool(
        name,
        format!("the {name} tool"),
        json!({"type": "object", "properties": {"q": {"type": "string"}}}),
        move |_ctx: ToolContext, _input: String| {
            let calls = calls.clone();
            async move {
                calls.0.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("{name} ok"))
            }
        },
    )
}

/// The results the model received in the tool message of request `n`.
fn results_of(requests: &[ModelRequest], n: usize) -> Vec<ToolResult> {
    let last = requests[n].messages.last().expect("a message");
    assert_eq!(last.role, Role::Tool);
    last.tool_results().cloned().collect()
}

fn tool_names(req: &ModelRequest) -> Vec<&str> {
    req.tools.iter().map(|t| t.name.as_str()).collect()
}

async fn collect(agent: &dyn Agent, inv: Invocation) -> (Vec<Event>, Option<AgentError>) {
    let mut events = Vec::new();
    let mut stream = agent.run(inv);
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(err) => return (events, Some(err)),
        }
    }
    (events, None)
}

// ---------------------------------------------------------------------------------------------
// The tutorial's role-based resolver
// ---------------------------------------------------------------------------------------------

struct RoleSetup {
    agent: LlmAgent,
    model: Arc<ScriptedModel>,
    search: Arc<Calls>,
    db_query: Arc<Calls>,
    db_write: Arc<Calls>,
}

fn role_setup() -> RoleSetup {
    let (search, db_query, db_write) = Default::default();
    let (s, q, w): (Arc<Calls>, Arc<Calls>, Arc<Calls>) = (search, db_query, db_write);
    let search_tool = counted("search", s.clone());
    let query_tool = counted("db_query", q.clone());
    let write_tool = counted("db_write", w.clone());
    let by_role = resolver_fn(move |inv: &Invocation| {
        let mut offered = vec![search_tool.clone()];
        if inv.session().get_str("role").as_deref() == Some("admin") {
            offered.push(query_tool.clone());
            offered.push(write_tool.clone());
        }
        async move { Ok::<_, ToolError>(offered) }
    });
    let model = Arc::new(ScriptedModel::default());
    let agent = LlmAgent::builder("admin-assistant")
        .model(model.clone())
        .tool_resolver(by_role)
        .build()
        .unwrap();
    RoleSetup {
        agent,
        model,
        search: s,
        db_query: q,
        db_write: w,
    }
}

#[tokio::test]
async fn role_based_resolver_gives_admins_the_database_tools() {
    let t = role_setup();
    let admin = Session::new();
    admin.set("role", "admin");
    t.model.push(reply::tool_calls([
        ("c1", "search", "{}"),
        ("c2", "db_query", r#"{"q": "select 1"}"#),
    ]));
    t.model.push(reply::text("done"));
    assert_eq!(t.agent.ask(&admin, "查一下").await.unwrap(), "done");

    let requests = t.model.requests();
    assert_eq!(tool_names(&requests[0]), ["search", "db_query", "db_write"]);
    let results = results_of(&requests, 1);
    assert_eq!(results[0], ToolResult::ok("c1", "search", "search ok"));
    assert_eq!(results[1], ToolResult::ok("c2", "db_query", "db_query ok"));
    assert_eq!((t.search.get(), t.db_query.get()), (1, 1));
}

#[tokio::test]
async fn a_user_asking_for_a_database_tool_gets_an_error_and_it_does_not_run() {
    let t = role_setup();
    // An admin invocation first: the database tools exist in the agent, just not for users.
    let admin = Session::new();
    admin.set("role", "admin");
    t.model.push(reply::text("hi admin"));
    t.agent.ask(&admin, "hi").await.unwrap();

    let user = Session::new();
    user.set("role", "user");
    t.model
        .push(reply::tool_call("c1", "db_write", r#"{"q": "drop table"}"#));
    t.model.push(reply::text("sorry, I cannot do that"));
    let answer = t.agent.ask(&user, "删掉那张表").await.unwrap();
    assert_eq!(answer, "sorry, I cannot do that");

    let requests = t.model.requests();
    assert_eq!(tool_names(&requests[1]), ["search"]);
    let results = results_of(&requests, 2);
    assert!(results[0].is_error);
    assert!(
        results[0].content.contains("unknown tool \"db_write\"")
            && results[0].content.contains("the offered tools are: search"),
        "{}",
        results[0].content
    );
    assert_eq!(t.db_write.get(), 0, "the database tool must not run");
    assert_eq!(t.db_query.get(), 0);
}

#[tokio::test]
async fn a_name_offered_twice_is_an_error_naming_both_sources() {
    let calls = Arc::new(Calls::default());
    let again = counted("search", calls.clone());
    let model = Arc::new(ScriptedModel::new([reply::text("unreachable")]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(counted("search", calls.clone()))
        .tool_resolver(resolver_fn(move |_inv: &Invocation| {
            let again = again.clone();
            async move { Ok::<_, ToolError>(vec![again]) }
        }))
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "hi").await.unwrap_err();
    assert!(
        matches!(
            &err,
            AgentError::ToolConflict { name, first: ToolSource::Agent, second: ToolSource::Resolver(1) }
                if name == "search"
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "tool name \"search\" is offered twice in this invocation: by the agent's static tools \
         and by tool resolver #1"
    );
    assert_eq!(model.request_count(), 0);
}

#[tokio::test]
async fn a_failing_resolver_ends_the_run_with_its_error() {
    let agent = LlmAgent::builder("a")
        .model(ScriptedModel::default())
        .tool_resolver(resolver_fn(|_inv: &Invocation| async {
            Err::<Vec<Arc<dyn Tool>>, _>(ToolError::unavailable("MCP server down"))
        }))
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "hi").await.unwrap_err();
    assert_eq!(err.to_string(), "tool resolver #1 failed: MCP server down");
}

#[tokio::test]
async fn tools_read_and_write_the_session_state() {
    let remember = tools::new_tool(
        "remember",
        "remembers a colour",
        json!({"type": "object", "properties": {"colour": {"type": "string"}}, "required": ["colour"]}),
        |ctx: ToolContext, input: String| async move {
            let v: serde_json::Value = serde_json::from_str(&input)?;
            let session = ctx.session().ok_or("no session")?;
            session.set("colour", v["colour"].clone());
            let inv = ctx.invocation().ok_or("no invocation")?;
            Ok::<_, ToolError>(format!(
                "{} remembered in {} (call {})",
                v["colour"],
                inv.agent().unwrap_or("?"),
                ctx.call_id().unwrap_or("?")
            ))
        },
    );
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c9", "remember", r#"{"colour": "blue"}"#),
        reply::text("ok"),
    ]));
    let agent = LlmAgent::builder("memo")
        .model(model.clone())
        .tool(remember)
        .build()
        .unwrap();
    let session = Session::new();
    agent.ask(&session, "remember blue").await.unwrap();
    assert_eq!(session.get_str("colour").as_deref(), Some("blue"));
    assert_eq!(
        results_of(&model.requests(), 1)[0].content,
        "\"blue\" remembered in memo (call c9)"
    );
}

// ---------------------------------------------------------------------------------------------
// Failures become results the model reads
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn tool_errors_bad_arguments_unknown_tools_and_panics_are_fed_back() {
    let panicky = tools::new_tool(
        "panicky",
        "always panics",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move {
            if true {
                panic!("index out of bounds");
            }
            Ok::<String, ToolError>(String::new())
        },
    );
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([
            ("c1", "get_weather", r#"{"city": "火星"}"#),
            ("c2", "calculator", r#"{"operation": "mul", "a": "x"}"#),
            ("c3", "send_email", r#"{"to": "x"}"#),
            ("c4", "panicky", "{}"),
            (
                "c5",
                "calculator",
                r#"{"operation": "add", "a": 1, "b": 2}"#,
            ),
        ]),
        reply::text("我尽力了"),
    ]));
    let mut seed = tinyagent_demo::all_tools();
    seed.push(panicky);
    let agent = LlmAgent::builder("smart-assistant")
        .model(model.clone())
        .tools(seed)
        .build()
        .unwrap();

    let (events, err) = collect(&agent, Invocation::new(Session::new(), "试试")).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        matches!(events.last(), Some(Event::Finished { answer, steps: 2, .. }) if answer == "我尽力了")
    );

    let results = results_of(&model.requests(), 1);
    let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
    assert_eq!(
        ids,
        ["c1", "c2", "c3", "c4", "c5"],
        "results in the model's order"
    );
    let errors: Vec<bool> = results.iter().map(|r| r.is_error).collect();
    assert_eq!(errors, [true, true, true, true, false]);

    assert!(
        results[0].content.contains("火星"),
        "{}",
        results[0].content
    );
    let bad = &results[1].content;
    assert!(bad.starts_with("invalid arguments (2 problems)"), "{bad}");
    assert!(
        bad.contains("/a: ") && bad.contains("/operation: "),
        "{bad}"
    );
    assert!(results[2].content.contains("unknown tool \"send_email\""));
    assert!(
        results[2]
            .content
            .contains("get_weather, calculator, get_current_time, translator, panicky")
    );
    assert!(
        results[3].content.contains("panic") && results[3].content.contains("index out of bounds")
    );
    assert!(results[4].content.contains("1.00 + 2.00 = 3.00"));

    let kinds: Vec<Option<ToolErrorKind>> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                result, error_kind, ..
            } => {
                assert_eq!(result.is_error, error_kind.is_some());
                Some((result.call_id.clone(), *error_kind))
            }
            _ => None,
        })
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_values()
        .collect();
    assert_eq!(
        kinds,
        [
            Some(ToolErrorKind::NotFound),
            Some(ToolErrorKind::InvalidInput),
            Some(ToolErrorKind::NotFound),
            Some(ToolErrorKind::Failed),
            None
        ]
    );
}

#[tokio::test]
async fn text_that_is_not_json_goes_to_the_tool() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([
            ("c1", "translator", "你好世界"),
            ("c2", "get_weather", "北京"),
        ]),
        reply::text("ok"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap();
    agent.ask(&Session::new(), "hi").await.unwrap();
    let results = results_of(&model.requests(), 1);
    assert_eq!(results[0].content, "[翻译结果] 你好世界 → Hello, World!");
    assert!(results[1].is_error);
    assert!(
        results[1].content.contains("北京"),
        "{}",
        results[1].content
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_misses_its_deadline_is_stopped_and_reported() {
    struct Flag(Arc<AtomicUsize>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    let (d, f) = (dropped.clone(), finished.clone());
    let slow = tools::new_tool(
        "slow",
        "takes ten seconds",
        json!({"type": "object"}),
        move |_ctx: ToolContext, _input: String| {
            let (d, f) = (d.clone(), f.clone());
            async move {
                let _flag = Flag(d);
                tokio::time::sleep(Duration::from_secs(10)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("late".to_owned())
            }
        },
    );
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "slow", "{}"),
        reply::text("it timed out"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(slow)
        .tool_timeout(Duration::from_secs(1))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    assert_eq!(
        agent.ask(&Session::new(), "go").await.unwrap(),
        "it timed out"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    let result = &results_of(&model.requests(), 1)[0];
    assert!(result.is_error && result.content.contains("tool execution timed out after 1s"));
    assert_eq!(
        (
            dropped.load(Ordering::SeqCst),
            finished.load(Ordering::SeqCst)
        ),
        (1, 0)
    );
}

#[tokio::test]
async fn calls_over_the_per_step_limit_are_refused() {
    let calls = Arc::new(Calls::default());
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([("c1", "t", "{}"), ("c2", "t", "{}"), ("c3", "t", "{}")]),
        reply::text("ok"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(counted("t", calls.clone()))
        .max_tool_calls_per_step(2)
        .build()
        .unwrap();
    agent.ask(&Session::new(), "go").await.unwrap();
    let results = results_of(&model.requests(), 1);
    assert_eq!(calls.get(), 2);
    assert!(!results[0].is_error && !results[1].is_error);
    assert!(results[2].is_error && results[2].content.contains("at most 2 run per step"));
}

#[tokio::test]
async fn the_step_limit_ends_the_run_with_a_clear_error() {
    let calls = Arc::new(Calls::default());
    let model = Arc::new(ScriptedModel::new(
        (0..5).map(|i| reply::tool_call(format!("c{i}"), "t", "{}")),
    ));
    let agent = LlmAgent::builder("looper")
        .model(model.clone())
        .tool(counted("t", calls.clone()))
        .max_steps(3)
        .build()
        .unwrap();
    let session = Session::new();
    let err = agent.ask(&session, "go").await.unwrap_err();
    assert!(
        matches!(err, AgentError::StepLimit { max_steps: 3, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("reached its limit of 3 model steps")
    );
    assert_eq!(model.request_count(), 3);
    // The calls of the last step are not run: no model call would read their results.
    assert_eq!(calls.get(), 2);
    assert!(session.is_empty(), "a failed run leaves the history alone");
}

#[tokio::test]
async fn at_the_step_limit_the_last_call_can_be_told_to_answer() {
    let calls = Arc::new(Calls::default());
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c0", "t", "{}"),
        reply::tool_call("c1", "t", "{}"),
        reply::text("what the two calls found"),
    ]));
    let agent = LlmAgent::builder("looper")
        .model(model.clone())
        .tool(counted("t", calls.clone()))
        .max_steps(3)
        .answer_at_step_limit(true)
        .build()
        .unwrap();
    let session = Session::new();
    let answer = agent.ask(&session, "go").await.unwrap();
    assert_eq!(answer, "what the two calls found");
    let choices: Vec<_> = model
        .requests()
        .iter()
        .map(|r| r.tool_choice.clone())
        .collect();
    assert_eq!(
        choices,
        [None, None, Some(tinyagent::model::ToolChoice::None)],
        "only the last call is told not to call tools"
    );
    assert_eq!(calls.get(), 2);
    // The work is kept: both calls and their results are in the history with the answer.
    assert_eq!(session.messages().len(), 6);

    // A model that calls tools anyway still ends the run with the step-limit error.
    let model = Arc::new(ScriptedModel::new(
        (0..3).map(|i| reply::tool_call(format!("c{i}"), "t", "{}")),
    ));
    let agent = LlmAgent::builder("looper")
        .model(model)
        .tool(counted("t", calls.clone()))
        .max_steps(3)
        .answer_at_step_limit(true)
        .build()
        .unwrap();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    assert!(
        matches!(err, AgentError::StepLimit { max_steps: 3, .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn a_model_error_ends_the_run() {
    let model = Arc::new(ScriptedModel::default());
    model.push_error(ModelError::new(ModelErrorKind::RateLimited, "429"));
    let agent = LlmAgent::builder("a").model(model).build().unwrap();
    let err = agent.ask(&Session::new(), "go").await.unwrap_err();
    match err {
        AgentError::Model(e) => assert_eq!(e.kind(), ModelErrorKind::RateLimited),
        other => panic!("unexpected {other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Concurrency
// ---------------------------------------------------------------------------------------------

/// A read-only tool that sleeps `ms` milliseconds (from its arguments) and tracks how many
/// calls are in flight.
fn sleeper(
    name: &'static str,
    in_flight: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    read_only: bool,
) -> Arc<dyn Tool> {
    let tool = tools::try_new_tool(
        name,
        "sleeps",
        json!({"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}),
        move |_ctx: ToolContext, input: String| {
            let (in_flight, peak) = (in_flight.clone(), peak.clone());
            async move {
                let v: serde_json::Value = serde_json::from_str(&input)?;
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(v["ms"].as_u64().unwrap_or(0))).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, ToolError>(format!("slept {}", v["ms"]))
            }
        },
    )
    .unwrap();
    let hints = if read_only {
        ToolHints::READ_ONLY
    } else {
        ToolHints::default()
    };
    Arc::new(tool.with_hints(hints))
}

fn sleep_calls(durations: &[u64]) -> tinyagent::ModelResponse {
    reply::tool_calls(
        durations
            .iter()
            .enumerate()
            .map(|(i, ms)| (format!("c{i}"), "sleep", format!(r#"{{"ms": {ms}}}"#))),
    )
}

#[tokio::test(start_paused = true)]
async fn calls_run_concurrently_up_to_the_limit_and_results_keep_the_models_order() {
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let durations = [80, 70, 60, 50, 40, 30, 20, 10];
    let model = Arc::new(ScriptedModel::new([
        sleep_calls(&durations),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(sleeper("sleep", in_flight.clone(), peak.clone(), true))
        .max_concurrent_tool_calls(3)
        .build()
        .unwrap();
    let (events, err) = collect(&agent, Invocation::new(Session::new(), "go")).await;
    assert!(err.is_none());
    assert_eq!(
        peak.load(Ordering::SeqCst),
        3,
        "never above the limit, and it is reached"
    );
    let results = results_of(&model.requests(), 1);
    let contents: Vec<String> = results.iter().map(|r| r.content.clone()).collect();
    let expected: Vec<String> = durations.iter().map(|d| format!("slept {d}")).collect();
    assert_eq!(contents, expected);
    // Finish events come in completion order, which here differs from the model's order.
    let finished: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished { result, .. } => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_ne!(finished, ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
    assert_eq!(finished.len(), 8);
}

#[tokio::test(start_paused = true)]
async fn eight_100ms_tools_take_100ms() {
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = Arc::new(ScriptedModel::new([
        sleep_calls(&[100; 8]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model)
        .tool(sleeper("sleep", in_flight, peak.clone(), true))
        .max_concurrent_tool_calls(8)
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    agent.ask(&Session::new(), "go").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(peak.load(Ordering::SeqCst), 8);
}

#[tokio::test(start_paused = true)]
async fn tools_that_may_write_run_alone_in_the_models_order() {
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = Arc::new(ScriptedModel::new([
        sleep_calls(&[30, 20, 10]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(sleeper("sleep", in_flight, peak.clone(), false))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let (events, _) = collect(&agent, Invocation::new(Session::new(), "go")).await;
    assert_eq!(start.elapsed(), Duration::from_millis(60));
    assert_eq!(peak.load(Ordering::SeqCst), 1);
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call } => Some(format!("start {}", call.id)),
            Event::ToolCallFinished {
                result, duration, ..
            } => Some(format!("end {} {}ms", result.call_id, duration.as_millis())),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "start c0",
            "end c0 30ms",
            "start c1",
            "end c1 20ms",
            "start c2",
            "end c2 10ms"
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_writing_tool_is_a_barrier_between_read_only_calls() {
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([
            ("r1", "read", r#"{"ms": 50}"#),
            ("r2", "read", r#"{"ms": 50}"#),
            ("w1", "write", r#"{"ms": 10}"#),
            ("r3", "read", r#"{"ms": 50}"#),
            ("r4", "read", r#"{"ms": 50}"#),
        ]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(sleeper("read", in_flight.clone(), peak.clone(), true))
        .tool(sleeper("write", in_flight, peak.clone(), false))
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    let (events, _) = collect(&agent, Invocation::new(Session::new(), "go")).await;
    // 50 ms (r1, r2 together) + 10 ms (w1 alone) + 50 ms (r3, r4 together).
    assert_eq!(start.elapsed(), Duration::from_millis(110));
    assert_eq!(peak.load(Ordering::SeqCst), 2);
    let order: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStarted { call } => Some(format!("start {}", call.id)),
            Event::ToolCallFinished { result, .. } => Some(format!("end {}", result.call_id)),
            _ => None,
        })
        .collect();
    let pos = |s: &str| order.iter().position(|o| o == s).unwrap();
    assert!(pos("end r1") < pos("start w1") && pos("end r2") < pos("start w1"));
    assert!(pos("end w1") < pos("start r3") && pos("end w1") < pos("start r4"));
    let ids: Vec<String> = results_of(&model.requests(), 1)
        .into_iter()
        .map(|r| r.call_id)
        .collect();
    assert_eq!(ids, ["r1", "r2", "w1", "r3", "r4"]);
}

#[tokio::test(start_paused = true)]
async fn without_parallel_tool_calls_every_call_runs_alone() {
    let (in_flight, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let model = Arc::new(ScriptedModel::new([
        sleep_calls(&[100; 4]),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model)
        .tool(sleeper("sleep", in_flight, peak.clone(), true))
        .parallel_tool_calls(false)
        .build()
        .unwrap();
    let start = tokio::time::Instant::now();
    agent.ask(&Session::new(), "go").await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(400));
    assert_eq!(peak.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn cancelling_the_caller_stops_running_tools() {
    let dropped = Arc::new(AtomicUsize::new(0));
    let finished = Arc::new(AtomicUsize::new(0));
    struct Flag(Arc<AtomicUsize>);
    impl Drop for Flag {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    let (d, f) = (dropped.clone(), finished.clone());
    let forever = tools::try_new_tool(
        "forever",
        "never ends",
        json!({"type": "object"}),
        move |_ctx: ToolContext, _input: String| {
            let (d, f) = (d.clone(), f.clone());
            async move {
                let _flag = Flag(d);
                tokio::time::sleep(Duration::from_secs(3600)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>(String::new())
            }
        },
    )
    .unwrap()
    .with_hints(ToolHints::READ_ONLY);
    let model = Arc::new(ScriptedModel::new([reply::tool_calls([
        ("c1", "forever", "{}"),
        ("c2", "forever", "{}"),
    ])]));
    let agent = LlmAgent::builder("a")
        .model(model)
        .tool(Arc::new(forever))
        .build()
        .unwrap();
    let session = Session::new();
    let outcome = tokio::time::timeout(Duration::from_secs(5), agent.ask(&session, "go")).await;
    assert!(outcome.is_err(), "the caller gave up");
    assert_eq!(
        dropped.load(Ordering::SeqCst),
        2,
        "both running tools were dropped"
    );
    tokio::time::sleep(Duration::from_secs(7200)).await;
    assert_eq!(finished.load(Ordering::SeqCst), 0, "and never resumed");
    assert!(session.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Events, history
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn a_run_reports_its_events_in_order() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "get_weather", r#"{"city": "北京"}"#).usage(Usage::new(100, 20)),
        reply::text("北京晴，22.5°C").usage(Usage::new(150, 10)),
    ]));
    let agent = LlmAgent::builder("smart-assistant")
        .model(model)
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap();
    let (events, err) = collect(&agent, Invocation::new(Session::new(), "北京天气怎么样？")).await;
    assert!(err.is_none());
    let shape: Vec<String> = events
        .iter()
        .map(|e| match e {
            Event::TextDelta(t) => format!("delta {t}"),
            Event::Usage { step, usage, .. } => {
                format!("usage {step} {}", usage.total_tokens().unwrap_or(0))
            }
            Event::Message(m) => format!("message {} calls", m.tool_calls().count()),
            Event::ToolCallStarted { call } => format!("start {}", call.name),
            Event::ToolCallFinished { result, .. } => {
                format!("end {} {}", result.name, result.is_error)
            }
            Event::Finished {
                answer,
                usage,
                steps,
            } => {
                format!(
                    "finished {answer} {} {steps}",
                    usage.total_tokens().unwrap_or(0)
                )
            }
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        shape,
        [
            "usage 1 120",
            "message 1 calls",
            "start get_weather",
            "end get_weather false",
            "delta 北京晴，22.5°C",
            "usage 2 160",
            "message 0 calls",
            "finished 北京晴，22.5°C 280 2",
        ]
    );
}

#[tokio::test]
async fn the_session_keeps_the_conversation_between_runs() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "get_weather", r#"{"city": "上海"}"#),
        reply::text("上海多云"),
        reply::text("你刚才问的是上海"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .instruction("你是一个全能助手。")
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap();
    let session = Session::new();
    agent.ask(&session, "上海天气？").await.unwrap();
    assert_eq!(
        session.len(),
        4,
        "user, assistant call, tool result, assistant answer"
    );
    agent.ask(&session, "我刚才问了哪里？").await.unwrap();
    let third = &model.requests()[2];
    assert_eq!(third.instruction, "你是一个全能助手。");
    let roles: Vec<Role> = third.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(session.len(), 6);
}

#[tokio::test]
async fn default_middleware_wraps_every_tool_the_agent_runs() {
    use tinyagent::Handler;
    let tag = tools::middleware::layer_fn(|next: Arc<dyn Handler>| -> Arc<dyn Handler> {
        Arc::new(tinyagent::handler_fn(
            move |ctx: ToolContext, input: String| {
                let next = next.clone();
                async move { Ok::<_, ToolError>(format!("[mw] {}", next.handle(&ctx, &input).await?)) }
            },
        ))
    });
    let calls = Arc::new(Calls::default());
    let resolved = counted("resolved", calls.clone());
    let model = Arc::new(ScriptedModel::new([
        reply::tool_calls([("c1", "static", "{}"), ("c2", "resolved", "{}")]),
        reply::text("ok"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool(counted("static", calls.clone()))
        .tool_resolver(resolver_fn(move |_inv: &Invocation| {
            let resolved = resolved.clone();
            async move { Ok::<_, ToolError>(vec![resolved]) }
        }))
        .middleware([tag.into()])
        .build()
        .unwrap();
    agent.ask(&Session::new(), "go").await.unwrap();
    let results = results_of(&model.requests(), 1);
    assert_eq!(results[0].content, "[mw] static ok");
    assert_eq!(results[1].content, "[mw] resolved ok");
}

#[test]
fn building_checks_the_configuration() {
    let no_model = LlmAgent::builder("a").build().unwrap_err();
    assert!(no_model.to_string().contains("has no model"), "{no_model}");
    assert!(
        matches!(&no_model, AgentError::Config { agent, problem: ConfigProblem::NoModel } if agent == "a"),
        "{no_model:?}"
    );
    let unnamed = LlmAgent::builder("")
        .model(ScriptedModel::default())
        .build()
        .unwrap_err();
    assert!(
        matches!(
            &unnamed,
            AgentError::Config {
                problem: ConfigProblem::EmptyName,
                ..
            }
        ),
        "{unnamed:?}"
    );
    let calls = Arc::new(Calls::default());
    let dup = LlmAgent::builder("a")
        .model(ScriptedModel::default())
        .tools([counted("t", calls.clone()), counted("t", calls)])
        .build()
        .unwrap_err();
    assert!(dup.to_string().contains("two tools named \"t\""), "{dup}");
    assert!(
        matches!(&dup, AgentError::Config { problem: ConfigProblem::DuplicateTool { name }, .. } if name == "t"),
        "{dup:?}"
    );
    let zero = LlmAgent::builder("a")
        .model(ScriptedModel::default())
        .max_steps(0)
        .build()
        .unwrap_err();
    assert!(zero.to_string().contains("max_steps"));
    assert!(
        matches!(
            &zero,
            AgentError::Config {
                problem: ConfigProblem::ZeroLimit {
                    setting: "max_steps"
                },
                ..
            }
        ),
        "{zero:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Agents as tools
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_agent_tool_runs_the_sub_agent_in_a_fresh_invocation() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("s1", "weather-expert", r#"{"message": "北京天气怎么样？"}"#),
        reply::tool_call("w1", "get_weather", r#"{"city": "北京"}"#),
        reply::text("北京晴，"),
        reply::text("专家说：北京晴"),
    ]));
    // The expert's first reply has text and a tool call; both its texts are concatenated.
    let expert = LlmAgent::builder("weather-expert")
        .description("天气专家，专门回答天气相关的问题")
        .model(model.clone())
        .tools(tinyagent_demo::all_tools())
        .build()
        .unwrap();
    let expert_tool = tools::new_agent_tool(expert);
    assert_eq!(expert_tool.name(), "weather-expert");
    assert_eq!(
        expert_tool.description(),
        "天气专家，专门回答天气相关的问题"
    );
    assert_eq!(expert_tool.input_schema(), &tools::agent_tool_schema());

    let supervisor = LlmAgent::builder("supervisor")
        .model(model.clone())
        .tool(expert_tool)
        .build()
        .unwrap();
    let session = Session::new();
    let answer = supervisor.ask(&session, "北京天气怎么样？").await.unwrap();
    assert_eq!(answer, "专家说：北京晴");

    let requests = model.requests();
    // The expert starts from its own user message, not the supervisor's history.
    assert_eq!(requests[1].messages.len(), 1);
    assert_eq!(requests[1].messages[0].text(), "北京天气怎么样？");
    assert_eq!(results_of(&requests, 3)[0].content, "北京晴，");
    assert_eq!(
        session.len(),
        4,
        "only the supervisor's messages are in its session"
    );
}

/// Agents `level1 → level2 → … → leaf`, each calling the next as a tool; the shared model's
/// script makes each call down, and the answers come back up.
fn nested(levels: usize, max_depth: usize, model: &Arc<ScriptedModel>) -> LlmAgent {
    let mut inner: Option<LlmAgent> = None;
    for level in (0..=levels).rev() {
        let mut b = LlmAgent::builder(format!("level{level}")).model(model.clone());
        if let Some(next) = inner.take() {
            b = b.tool(Arc::new(
                AgentTool::try_new(next).unwrap().max_depth(max_depth),
            ));
        }
        inner = Some(b.build().unwrap());
    }
    inner.unwrap()
}

/// A tool that reports where it runs: the chain of agents above its invocation, the agent
/// running it and the depth.
fn where_am_i() -> Arc<dyn Tool> {
    tools::new_tool(
        "where",
        "where the call runs",
        json!({"type": "object"}),
        |ctx: ToolContext, _input: String| async move {
            let inv = ctx.invocation().expect("the loop passes the invocation");
            let chain: Vec<&str> = inv.chain().iter().map(|a| &**a).collect();
            Ok::<_, ToolError>(format!(
                "chain {} | agent {} | depth {}",
                chain.join(" → "),
                inv.agent().unwrap_or("none"),
                inv.depth()
            ))
        },
    )
}

#[tokio::test]
async fn nesting_within_the_limit_works() {
    // level0 → level1 → level2, two deep with a limit of two; level2 asks where it runs.
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "level1", r#"{"message": "ask level2"}"#),
        reply::tool_call("c2", "level2", "go down"),
        reply::tool_call("c3", "where", "{}"),
        reply::text("bottom"),
        reply::text("level1 got: bottom"),
        reply::text("top got: level1 got: bottom"),
    ]));
    let level2 = LlmAgent::builder("level2")
        .model(model.clone())
        .tool(where_am_i())
        .build()
        .unwrap();
    let level1 = LlmAgent::builder("level1")
        .model(model.clone())
        .tool(Arc::new(AgentTool::try_new(level2).unwrap().max_depth(2)))
        .build()
        .unwrap();
    let top = LlmAgent::builder("level0")
        .model(model.clone())
        .tool(Arc::new(AgentTool::try_new(level1).unwrap().max_depth(2)))
        .build()
        .unwrap();
    let session = Session::new();
    let answer = top.ask(&session, "go").await.unwrap();
    assert_eq!(answer, "top got: level1 got: bottom");

    let requests = model.requests();
    assert_eq!(requests.len(), 6, "every level asked its model");
    // Each sub-agent starts from the request its caller sent (JSON or plain text), alone.
    let texts =
        |n: usize| -> Vec<String> { requests[n].messages.iter().map(|m| m.text()).collect() };
    assert_eq!(texts(1), ["ask level2"]);
    assert_eq!(tool_names(&requests[1]), ["level2"]);
    assert_eq!(texts(2), ["go down"]);
    assert_eq!(tool_names(&requests[2]), ["where"]);
    // The bottom agent runs two deep, below level0 and level1.
    let here = &results_of(&requests, 3)[0];
    assert!(!here.is_error, "{}", here.content);
    assert_eq!(
        here.content,
        "chain level0 → level1 | agent level2 | depth 2"
    );
    // Each answer goes up as its caller's tool result.
    let from_level2 = &results_of(&requests, 4)[0];
    assert_eq!(
        (from_level2.is_error, &*from_level2.content),
        (false, "bottom")
    );
    let from_level1 = &results_of(&requests, 5)[0];
    assert_eq!(
        (from_level1.is_error, &*from_level1.content),
        (false, "level1 got: bottom")
    );
    assert_eq!(
        session.len(),
        4,
        "only level0's messages are in its session"
    );
}

#[tokio::test]
async fn nesting_deeper_than_the_limit_is_refused() {
    let model = Arc::new(ScriptedModel::default());
    for level in 1..=3 {
        model.push(reply::tool_call(
            format!("c{level}"),
            format!("level{level}"),
            "go down",
        ));
    }
    model.push(reply::text("refused below me"));
    model.push(reply::text("level1 got: refused"));
    model.push(reply::text("top got it"));
    let top = nested(3, 2, &model);
    let answer = top.ask(&Session::new(), "go").await.unwrap();
    assert_eq!(answer, "top got it");
    let requests = model.requests();
    assert_eq!(requests.len(), 6, "level3 never asked its model");
    let refused = &results_of(&requests, 3)[0];
    assert!(refused.is_error);
    assert!(
        refused
            .content
            .contains("level0 → level1 → level2 → level3")
            && refused.content.contains("at most 2 are allowed"),
        "{}",
        refused.content
    );
}

#[tokio::test]
async fn the_default_depth_limit_is_four() {
    assert_eq!(tools::DEFAULT_MAX_AGENT_DEPTH, 4);
    let model = Arc::new(ScriptedModel::default());
    for level in 1..=5 {
        model.push(reply::tool_call(
            format!("c{level}"),
            format!("level{level}"),
            "{\"message\": \"down\"}",
        ));
    }
    for _ in 0..5 {
        model.push(reply::text("up"));
    }
    let top = nested(5, tools::DEFAULT_MAX_AGENT_DEPTH, &model);
    top.ask(&Session::new(), "go").await.unwrap();
    let requests = model.requests();
    // level0..level4 asked (5 calls down), level5 was refused.
    let refused = &results_of(&requests, 5)[0];
    assert!(
        refused.is_error && refused.content.contains("5 deep"),
        "{}",
        refused.content
    );
}
