//! Tool-side context over MCP against the official Python SDK's client: a tinyagent tool's
//! progress becomes `notifications/progress` (with the request's token), its logs
//! `notifications/message` (honouring `logging/setLevel`), its sampling and elicitation
//! requests reach the client's callbacks; a client without them gets a clear error result.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{fixture, require_python_mcp};
use serde_json::{Value, json};
use tinyagent::{
    Tool, ToolContext, ToolError,
    host::{Elicitation, LogLevel, SamplingRequest},
    tools,
};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct N {
    n: u32,
}

fn context_tools() -> Vec<Arc<dyn Tool>> {
    let steps = tools::new_func(
        "steps",
        "Works in steps",
        |ctx: ToolContext, n: N| async move {
            for i in 1..=n.n {
                ctx.progress(
                    f64::from(i),
                    Some(f64::from(n.n)),
                    Some(&format!("step {i}")),
                )
                .await;
            }
            Ok::<_, ToolError>(format!("{} steps", n.n))
        },
    );
    let chatty = tools::new_func("chatty", "Logs", |ctx: ToolContext, _: N| async move {
        ctx.log(LogLevel::Debug, "debug detail").await;
        ctx.log(LogLevel::Info, "info line").await;
        ctx.log(LogLevel::Warning, json!({"disk": "almost full"}))
            .await;
        ctx.log(LogLevel::Error, "it broke").await;
        Ok::<_, ToolError>("logged")
    });
    let ask_model = tools::new_func(
        "ask_model",
        "Samples",
        |ctx: ToolContext, _: N| async move {
            let reply = ctx
                .sample(SamplingRequest::text("the weather report", 50).system_prompt("Be brief."))
                .await?;
            Ok::<_, ToolError>(format!(
                "{} [{} {:?}]",
                reply.as_text(),
                reply.model,
                reply.stop_reason
            ))
        },
    );
    let ask_user = tools::new_func("ask_user", "Elicits", |ctx: ToolContext, _: N| async move {
        let answer = ctx
            .elicit(
                "Who are you?",
                json!({"type": "object", "properties": {
                    "name": {"type": "string"}, "fields": {"type": "string"}
                }, "required": ["name"]}),
            )
            .await?;
        Ok::<_, ToolError>(match answer {
            Elicitation::Accept(v) => format!("accepted {v}"),
            other => format!("{other:?}"),
        })
    });
    let ask_both = tools::new_func(
        "ask_both",
        "Elicits, then samples",
        |ctx: ToolContext, _: N| async move {
            let who = match ctx
                .elicit(
                    "Who are you?",
                    json!({"type": "object", "properties": {
            "name": {"type": "string"}}}),
                )
                .await?
            {
                Elicitation::Accept(v) => v["name"].as_str().unwrap_or_default().to_owned(),
                other => format!("{other:?}"),
            };
            let reply = ctx
                .sample(SamplingRequest::text(format!("a poem for {who}"), 20))
                .await?;
            Ok::<_, ToolError>(reply.as_text().to_owned())
        },
    );
    vec![
        Arc::new(steps),
        Arc::new(chatty),
        Arc::new(ask_model),
        Arc::new(ask_user),
        Arc::new(ask_both),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_logging_sampling_and_elicitation_reach_the_python_client() {
    let report = common::python_client_report(context_tools(), "context_client.py").await;

    assert_eq!(
        report["steps"],
        json!({"isError": false, "text": "3 steps"})
    );
    assert_eq!(
        report["progress"],
        json!([
            [1.0, 3.0, "step 1"],
            [2.0, 3.0, "step 2"],
            [3.0, 3.0, "step 3"],
            [1.0, 2.0, "step 1"],
            [2.0, 2.0, "step 2"]
        ]),
        "progress over both protocol generations"
    );
    assert_eq!(report["legacy_steps"]["text"], "2 steps");
    // Protocol 2026-07-28: asked through input-required results, answered on the retry.
    assert_eq!(
        report["modern_ask_model"],
        json!({"isError": false,
               "text": "sampled: the weather report (max 50) [python-test-model Some(\"endTurn\")]"})
    );
    assert_eq!(
        report["modern_ask_user"],
        json!({"isError": false, "text": r#"accepted {"name":"Ada","fields":"fields,name"}"#})
    );
    assert_eq!(
        report["modern_ask_both"],
        json!({"isError": false, "text": "sampled: a poem for Ada (max 20)"}),
        "two questions in a row: two rounds of one call"
    );
    assert_eq!(
        report["modern_plain_ask_model"],
        json!({"isError": true,
               "text": "sampling (asking the client's model) is not supported here: the MCP \
                        client did not declare the sampling capability"})
    );
    assert_eq!(
        report["logs"],
        json!([["warning", "chatty", {"disk": "almost full"}], ["error", "chatty", "it broke"]]),
        "below the level the request asked for nothing is sent, and a client that did not opt \
         in gets no logs"
    );
    assert_eq!(
        report["legacy_logs"],
        json!([["debug", "debug detail"], ["info", "info line"],
               ["warning", {"disk": "almost full"}], ["error", "it broke"],
               ["error", "it broke"]]),
        "a session of the initialize handshake gets every message until logging/setLevel"
    );
    assert_eq!(
        report["ask_model"],
        json!({"isError": false,
               "text": "sampled: the weather report (max 50) [python-test-model Some(\"endTurn\")]"})
    );
    assert_eq!(
        report["ask_user"],
        json!({"isError": false, "text": r#"accepted {"name":"Ada","fields":"fields,name"}"#})
    );
    assert_eq!(report["plain_ask_model"]["isError"], true);
    assert_eq!(
        report["plain_ask_model"]["text"],
        "sampling (asking the client's model) is not supported here: the MCP client did not \
         declare the sampling capability"
    );
    assert_eq!(report["plain_ask_user"]["isError"], true);
    assert!(
        report["plain_ask_user"]["text"]
            .as_str()
            .unwrap()
            .starts_with("elicitation (asking the user) is not supported here"),
        "{}",
        report["plain_ask_user"]
    );
}

/// A host recording what a remote tool reported while it ran.
#[derive(Default)]
struct Recorder {
    seen: std::sync::Mutex<Vec<String>>,
}

impl tinyagent::host::ToolHost for Recorder {
    fn progress(
        &self,
        p: f64,
        total: Option<f64>,
        m: Option<String>,
    ) -> tinyagent::BoxFuture<'_, ()> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("progress {p}/{total:?} {m:?}"));
        Box::pin(async {})
    }

    fn log(
        &self,
        level: LogLevel,
        logger: Option<String>,
        data: Value,
    ) -> tinyagent::BoxFuture<'_, ()> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("log {level:?} {logger:?} {data}"));
        Box::pin(async {})
    }
}

fn context_server() -> tinyagent_mcp::McpToolset {
    require_python_mcp();
    tinyagent_mcp::McpToolset::stdio(&format!("python3 {}", fixture("context_server.py")))
        .expect("valid command line")
        .server_name("context")
        .connect_timeout(Duration::from_secs(30))
}

async fn remote(toolset: &tinyagent_mcp::McpToolset, name: &str) -> Arc<dyn Tool> {
    let tools = toolset.tools().await.expect("list the tools");
    tools
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_servers_progress_and_logs_reach_the_calling_tools_context() {
    let toolset = context_server();
    let recorder = Arc::new(Recorder::default());
    let ctx = ToolContext::new().with_host(recorder.clone());
    let out = remote(&toolset, "steps")
        .await
        .handle(&ctx, r#"{"n": 3}"#)
        .await
        .unwrap();
    assert_eq!(out, "3 steps");
    let out = remote(&toolset, "chatty")
        .await
        .handle(&ctx, "{}")
        .await
        .unwrap();
    assert_eq!(out, "logged");
    // Notifications are handled on tasks of their own; wait (boundedly) for the last.
    let all_seen = common::eventually(Duration::from_secs(10), || {
        let n = recorder.seen.lock().unwrap().len();
        async move { n >= 6 }
    })
    .await;
    assert!(all_seen, "{:?}", recorder.seen.lock().unwrap());
    // rmcp handles each notification on a task of its own, so their order may vary.
    let mut seen = recorder.seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(
        seen,
        [
            r#"log Error Some("chatty") "it broke""#,
            r#"log Info Some("chatty") "info line""#,
            r#"log Warning Some("chatty") {"disk":"almost full"}"#,
            r#"progress 1/Some(3.0) Some("step 1")"#,
            r#"progress 2/Some(3.0) Some("step 2")"#,
            r#"progress 3/Some(3.0) Some("step 3")"#,
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_on_one_toolset_each_get_their_own_progress_before_their_answer() {
    // Two calls in flight at once on one connection: each one's progress reaches its own
    // context, all of it before the call returns (nothing is waited for afterwards).
    let toolset = context_server();
    let steps = remote(&toolset, "steps").await;
    let (three, five) = (Arc::new(Recorder::default()), Arc::new(Recorder::default()));
    let (ctx3, ctx5) = (
        ToolContext::new().with_host(three.clone()),
        ToolContext::new().with_host(five.clone()),
    );
    let (a, b) = tokio::join!(
        steps.handle(&ctx3, r#"{"n": 3}"#),
        steps.handle(&ctx5, r#"{"n": 5}"#)
    );
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        ("3 steps".into(), "5 steps".into())
    );
    for (recorder, n) in [(&three, 3), (&five, 5)] {
        let mut seen = recorder.seen.lock().unwrap().clone();
        seen.sort();
        let expected: Vec<String> = (1..=n)
            .map(|i| format!(r#"progress {i}/Some({n}.0) Some("step {i}")"#))
            .collect();
        assert_eq!(seen, expected, "the call of {n} steps");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_servers_sampling_is_answered_by_the_toolsets_model() {
    use tinyagent::testing::{ScriptedModel, reply};
    let model = Arc::new(ScriptedModel::new([reply::text("Rust is fast.")]));
    let toolset = context_server().sampling_model(model.clone());
    let out = remote(&toolset, "ask_model")
        .await
        .handle(&ToolContext::new(), r#"{"topic": "Rust"}"#)
        .await
        .unwrap();
    assert_eq!(
        out,
        format!("{}: Rust is fast.", tinyagent::Model::name(&*model))
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].messages[0].text(), "Be brief.");
    assert_eq!(requests[0].messages[1].text(), "Write about Rust");
    assert_eq!(requests[0].max_tokens, Some(40));

    // Without a model, the server's request is refused and its tool reports the failure.
    let plain = context_server();
    let err = remote(&plain, "ask_model")
        .await
        .handle(&ToolContext::new(), r#"{"topic": "Rust"}"#)
        .await
        .unwrap_err();
    assert!(!err.message().is_empty(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_servers_elicitation_is_declined_by_default_and_answered_by_a_handler() {
    let plain = context_server();
    let out = remote(&plain, "ask_user")
        .await
        .handle(&ToolContext::new(), "{}")
        .await
        .unwrap();
    assert_eq!(out, "decline");

    let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = asked.clone();
    let toolset = context_server().elicitation(tinyagent_mcp::elicitation_fn(move |request| {
        seen.lock().unwrap().push(request.message.clone());
        let fields: Vec<String> = request.schema["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        async move {
            assert!(fields.contains(&"confirm".to_owned()), "{fields:?}");
            Elicitation::Accept(json!({"confirm": true, "name": "Ada"}))
        }
    }));
    let out = remote(&toolset, "ask_user")
        .await
        .handle(&ToolContext::new(), "{}")
        .await
        .unwrap();
    assert_eq!(out, "accepted: confirm=True name=Ada");
    assert_eq!(*asked.lock().unwrap(), ["Delete the file?"]);

    // Without a handler, the calling tool's host answers (a gateway asks its own client).
    struct Yes;
    impl tinyagent::host::ToolHost for Yes {
        fn elicit(
            &self,
            _request: tinyagent::host::ElicitationRequest,
        ) -> tinyagent::BoxFuture<'_, Result<Elicitation, ToolError>> {
            Box::pin(async { Ok(Elicitation::Accept(json!({"confirm": false, "name": "Bo"}))) })
        }
    }
    let out = remote(&plain, "ask_user")
        .await
        .handle(&ToolContext::new().with_host(Arc::new(Yes)), "{}")
        .await
        .unwrap();
    assert_eq!(out, "accepted: confirm=False name=Bo");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_passes_progress_logs_sampling_and_elicitation_both_ways() {
    // Python client → tinyagent McpServer → McpToolset → Python server, and back.
    let upstream = context_server();
    let tools = upstream.tools().await.expect("list the upstream tools");
    let report = common::python_client_report(tools, "gateway_client.py").await;
    assert_eq!(report["steps"], "2 steps");
    let mut progress = report["progress"].as_array().unwrap().clone();
    progress.sort_by_key(|p| p[0].as_f64().unwrap() as i64);
    assert_eq!(
        progress,
        [json!([1.0, 2.0, "step 1"]), json!([2.0, 2.0, "step 2"])]
    );
    assert_eq!(report["chatty"], "logged");
    let mut logs: Vec<String> = report["logs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| format!("{} {}", l[0].as_str().unwrap(), l[1]))
        .collect();
    logs.sort();
    assert_eq!(
        logs,
        [
            r#"error "it broke""#,
            r#"info "info line""#,
            r#"warning {"disk":"almost full"}"#
        ]
    );
    assert_eq!(
        report["ask_model"],
        json!([false, "upstream-model: answer to Write about tides"])
    );
    assert_eq!(
        report["ask_user"],
        json!([false, "accepted: confirm=True name=Ada"])
    );
}
