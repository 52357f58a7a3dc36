//! `--a2a`: an agent served over A2A by `tinyagent serve`'s server (in this test process) is
//! a tool of the `tinyagent` binary (another process), with the server's key.

use std::process::Output;
use std::sync::Arc;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};
use tinyagent::LlmAgent;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::Server;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn tinyagent() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tinyagent"));
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "TINYAGENT_A2A_KEY",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("NO_COLOR", "1")
        .env("TINYAGENT_HISTORY", "")
        .timeout(Duration::from_secs(120));
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run tinyagent"))
        .await
        .unwrap()
}

/// Serves an agent named `calc` on `model`, with key `sk-a2a`; its A2A base URL.
async fn remote_agent(model: Arc<ScriptedModel>) -> String {
    let agent = LlmAgent::builder("calc")
        .description("Does arithmetic")
        .model(model)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = Server::new().agent(agent).api_key("sk-a2a");
    tokio::spawn(server.serve(listener, std::future::pending::<()>()));
    format!("{base}/a2a/calc")
}

/// A Chat Completions stream, as OpenAI sends it, of these chunks' deltas.
fn sse(deltas: &[(Value, Option<&str>)]) -> String {
    let mut body = String::new();
    for (delta, finish) in deltas {
        let chunk = json!({
            "id": "chatcmpl-a2a", "object": "chat.completion.chunk", "created": 1741570100,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_a2a_agent_is_a_tool_of_the_binary() {
    let remote_model = Arc::new(ScriptedModel::new([reply::text("7 × 8 = 56")]));
    let url = remote_agent(remote_model.clone()).await;

    // Listed as a tool, with the agent's name and description; the key comes from the env.
    let mut cmd = tinyagent();
    cmd.args(["tools", "--json", "--tools", "none", "--a2a", &url])
        .env("TINYAGENT_A2A_KEY", "sk-a2a");
    let out = output(cmd).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tools[0]["name"], "calc", "{tools}");
    assert_eq!(tools[0]["source"], "a2a", "{tools}");

    // Without the key, the card is refused, and the binary says so.
    let mut cmd = tinyagent();
    cmd.args(["tools", "--tools", "none", "--a2a", &url]);
    let out = output(cmd).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("401") && stderr.contains("TINYAGENT_A2A_KEY"),
        "{stderr}"
    );

    // A run whose model calls the remote agent, then answers with what it said.
    let model = MockServer::start().await;
    let call = sse(&[
        (
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": "call_a2a",
                "type": "function", "function": {"name": "calc", "arguments": "{\"message\":\"7 × 8?\"}"}}]}),
            None,
        ),
        (json!({}), Some("tool_calls")),
    ]);
    let answer = sse(&[
        (json!({"role": "assistant", "content": "It is 56."}), None),
        (json!({}), Some("stop")),
    ]);
    for body in [call, answer] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .up_to_n_times(1)
            .mount(&model)
            .await;
    }
    let mut cmd = tinyagent();
    cmd.args(["run", "--tools", "none", "--a2a", &url])
        .args([
            "--base-url",
            &format!("{}/v1", model.uri()),
            "--api-key",
            "sk-test",
        ])
        .arg("7 × 8?")
        .env("TINYAGENT_A2A_KEY", "sk-a2a");
    let out = output(cmd).await;
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout, "It is 56.\n");
    assert!(stderr.contains("→ calc"), "{stderr}");
    assert!(
        stderr.contains("✓ calc") && stderr.contains("7 × 8 = 56"),
        "{stderr}"
    );
    assert_eq!(
        remote_model.request_count(),
        1,
        "the remote agent answered once"
    );
    // The second model request carried the remote agent's answer as the tool result.
    let requests = model.received_requests().await.unwrap();
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["content"], "7 × 8 = 56");
}
