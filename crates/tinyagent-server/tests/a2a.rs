//! A2A on `serve`: the official A2A Python SDK as a client (`tests/a2a_sdk.py`), a tinyagent
//! agent calling a served agent as its tool, and each key's tasks and contexts its own.

mod common;

use std::sync::Arc;

use common::{Running, agent, client, python};
use serde_json::Value;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentExt, LlmAgent, Session};
use tinyagent_a2a::A2aAgentTool;
use tinyagent_server::Server;

fn adding_model(questions: usize) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new((0..questions).flat_map(|i| {
        [
            reply::tool_call(format!("call_{i}"), "add", r#"{"a": 7, "b": 8}"#),
            reply::text("7 + 8 = 15"),
        ]
    })))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_python_sdk_talks_to_an_agent_on_serve() {
    let model = adding_model(4);
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob"),
    )
    .await;
    let stdout = python(
        "a2a_sdk.py",
        "a2a.client, httpx",
        vec![
            ("TINYAGENT_A2A_URL", server.url("/a2a/calc")),
            ("TINYAGENT_KEY", "sk-alice".to_owned()),
            ("TINYAGENT_OTHER_KEY", "sk-bob".to_owned()),
        ],
    )
    .await;
    assert!(stdout.contains("sent: 7 + 8 = 15"), "{stdout}");
    assert!(
        stdout.contains("streamed: 7 + 8 = 15 after tool_call_started tool_call_finished"),
        "{stdout}"
    );
    assert!(stdout.contains("0.3 message/send: 7 + 8 = 15"), "{stdout}");
    assert!(
        stdout.contains("0.3 message/stream: 7 + 8 = 15"),
        "{stdout}"
    );
    assert!(stdout.contains("other key:"), "{stdout}");
    assert_eq!(model.request_count(), 8, "every question ran the tool");

    // The context is one of alice's sessions, with both turns; bob has none.
    let sessions: Value = client()
        .get(server.url("/v1/sessions"))
        .bearer_auth("sk-alice")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let data = sessions["data"].as_array().unwrap();
    assert_eq!(
        data.len(),
        3,
        "one context of two turns, and each 0.3 task's: {sessions}"
    );
    let theirs: Value = client()
        .get(server.url("/v1/sessions"))
        .bearer_auth("sk-bob")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(theirs["data"].as_array().unwrap().len(), 0, "{theirs}");
    println!("{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_serve_is_another_agents_tool_with_a_key() {
    let server = Running::start(
        Server::new()
            .agent(agent("calc", adding_model(1)))
            .api_key("sk-remote"),
    )
    .await;
    let base = server.url("/a2a/calc");
    let refused = A2aAgentTool::connect(&base).await.unwrap_err();
    assert!(refused.to_string().contains("401"), "{refused}");
    let tool = A2aAgentTool::builder(&base)
        .bearer_token("sk-remote")
        .connect()
        .await
        .unwrap();
    assert_eq!(tool.card().supported_interfaces[0].url, base);
    let lead = LlmAgent::builder("lead")
        .model(ScriptedModel::new([
            reply::tool_call("c1", "calc", r#"{"message":"7 + 8?"}"#),
            reply::text("It is 15."),
        ]))
        .tool(tool)
        .build()
        .unwrap();
    let session = Session::new();
    assert_eq!(lead.ask(&session, "7 + 8?").await.unwrap(), "It is 15.");
    let history = session.messages();
    let result = history
        .iter()
        .find_map(|m| m.tool_results().next().cloned())
        .expect("a tool result");
    assert_eq!(result.content, "7 + 8 = 15");

    // The default card is the first agent's; an unknown agent is a 404.
    let card: Value = client()
        .get(server.url("/.well-known/agent-card.json"))
        .bearer_auth("sk-remote")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(card["name"], "calc");
    let missing = client()
        .post(server.url("/a2a/nobody"))
        .bearer_auth("sk-remote")
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
}
