//! `A2aAgentTool` against an agent of the official A2A Python SDK (`fixtures/upper_agent.py`,
//! a2a-sdk pinned in `scripts/requirements-test.txt`) in another process, on loopback.

use std::process::Stdio;

use futures::StreamExt;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{Agent, Event, Invocation, LlmAgent, Session, Tool, ToolContext};
use tinyagent_a2a::A2aAgentTool;
use tokio::io::{AsyncBufReadExt, BufReader};

/// Starts the Python agent; it is killed when the child is dropped.
async fn python_agent() -> (tokio::process::Child, String) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/upper_agent.py");
    let mut child = tokio::process::Command::new("python3")
        .arg(script)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("python3 runs (bash scripts/setup.sh --test installs the a2a-sdk)");
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let port = tokio::time::timeout(std::time::Duration::from_secs(60), lines.next_line())
        .await
        .expect("the Python agent starts")
        .unwrap()
        .expect("it prints its port (is a2a-sdk installed? bash scripts/setup.sh --test)");
    (child, format!("http://127.0.0.1:{}", port.trim()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_sdk_agent_is_a_tool_with_its_progress_and_its_failures() {
    let (_child, url) = python_agent().await;
    let tool = A2aAgentTool::connect(&url).await.unwrap();
    assert_eq!(tool.name(), "Upper_Agent");
    assert!(
        tool.description().contains("Upper-cases"),
        "{}",
        tool.description()
    );

    let lead = LlmAgent::builder("lead")
        .model(ScriptedModel::new([
            reply::tool_call("c1", "Upper_Agent", r#"{"message":"hello a2a"}"#),
            reply::text("done"),
        ]))
        .tool(tool.clone())
        .build()
        .unwrap();
    let mut events = lead.run(Invocation::new(Session::new(), "shout"));
    let (mut progress, mut result) = (Vec::new(), None);
    while let Some(event) = events.next().await {
        match event.unwrap() {
            Event::ToolProgress { message, .. } => progress.push(message.unwrap_or_default()),
            Event::ToolCallFinished { result: r, .. } => result = Some(r),
            _ => {}
        }
    }
    let result = result.unwrap();
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(result.content, "HELLO A2A");
    assert!(progress.iter().any(|p| p == "reading"), "{progress:?}");

    let failed = tool
        .handle(&ToolContext::new(), r#"{"message":"fail"}"#)
        .await
        .unwrap_err();
    assert!(failed.message().contains("Upper Agent failed"), "{failed}");
    assert!(failed.message().contains("cannot do that"), "{failed}");
}
