//! Tool-side context over MCP against the official Python SDK's client: a tinyagent tool's
//! progress becomes `notifications/progress` (with the request's token), its logs
//! `notifications/message` (honouring `logging/setLevel`), its sampling and elicitation
//! requests reach the client's callbacks; a client without them gets a clear error result.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{fixture, require_python_mcp};
use serde_json::{Value, json};
use tinyagent::{Elicitation, LogLevel, SamplingRequest, Tool, ToolContext, ToolError, tools};
use tinyagent_mcp::McpServer;

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
    vec![
        Arc::new(steps),
        Arc::new(chatty),
        Arc::new(ask_model),
        Arc::new(ask_user),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_logging_sampling_and_elicitation_reach_the_python_client() {
    require_python_mcp();
    let handle = McpServer::new(context_tools())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let out = tokio::process::Command::new("python3")
        .arg(fixture("context_client.py"))
        .arg(handle.url())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("the Python client finished within 60 s")
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();

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
    assert_eq!(report["modern_ask_model"]["isError"], true);
    assert!(
        report["modern_ask_model"]["text"]
            .as_str()
            .unwrap()
            .contains("input-required results, which this server does not send"),
        "{}",
        report["modern_ask_model"]
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
    handle.shutdown().await;
}
