//! The page at `/` in a real browser: `tests/page.py` drives Debian's chromium with Playwright
//! (both installed by `scripts/setup.sh --test`) against the server on loopback.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{Running, agent};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
use tinyagent_server::Server;

/// Runs a Playwright script against `server`; panics with its output unless it succeeds.
async fn drive(script: &'static str, server: &Running, key: &'static str) -> String {
    let check = Command::new("python3")
        .args(["-c", "import playwright.sync_api"])
        .output();
    match check {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "Playwright for Python is missing: run `bash scripts/setup.sh --test` \
             (it installs scripts/requirements-test.txt and the chromium package): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("python3 is needed for the browser test and could not be run: {e}"),
    }
    let base = server.base.clone();
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .env("TINYAGENT_BASE_URL", base)
            .env("TINYAGENT_KEY", key)
            .output()
            .expect("run python3")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
    println!("{stdout}");
    stdout
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
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/page.py");
    let stdout = drive(script, &server, "sk-browser").await;
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
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/page_approval.py");
    let stdout = drive(script, &server, "sk-browser").await;
    assert!(stdout.contains("page approval: ok"), "{stdout}");
    assert_eq!(model.request_count(), 2);
}
