//! The page at `/` in a real browser: `tests/page.py` drives Debian's chromium with Playwright
//! (both installed by `scripts/setup.sh --test`) against the server on loopback.

mod common;

use std::sync::Arc;

use common::{Running, agent};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
use tinyagent_server::Server;

/// Runs a Playwright script against `server`.
async fn drive(script: &str, server: &Running, key: &str) -> String {
    let env = vec![
        ("TINYAGENT_BASE_URL", server.base.clone()),
        ("TINYAGENT_KEY", key.to_owned()),
    ];
    common::python(script, "playwright.sync_api", env).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_chats_shows_tool_calls_and_reopens_sessions() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 7, "b": 8}"#),
        reply::text("7 + 8 = 15"),
    ]));
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .api_key("sk-browser"),
    )
    .await;
    let stdout = drive("page.py", &server, "sk-browser").await;
    assert!(stdout.contains("page: ok"), "{stdout}");
    assert_eq!(model.request_count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_a_paused_call_and_approves_it() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
        reply::text("2 + 3 = 5"),
    ]));
    let calc = tinyagent::LlmAgent::builder("calc")
        .description("The calc agent")
        .model(model.clone())
        .tool(common::add_tool())
        .middleware([ApprovalLayer::new(approval_fn(|_| async {
            Approval::defer("adding needs approval")
        }))
        .into()])
        .build()
        .unwrap();
    let server = Running::start(Server::new().agent(calc).api_key("sk-browser")).await;
    let stdout = drive("page_approval.py", &server, "sk-browser").await;
    assert!(stdout.contains("page approval: ok"), "{stdout}");
    assert_eq!(model.request_count(), 2);
}
