//! Calls over one kept-open streamable HTTP connection do not stall: the server answers in
//! small writes (SSE events), which Nagle's algorithm would hold back until the client's delayed
//! ACK, about 40 ms per call after the first, unless the server sets `TCP_NODELAY`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tinyagent_mcp::McpServer;

const ACCEPT: &str = "application/json, text/event-stream";
const CALLS: usize = 25;

/// The JSON-RPC message of a response, whether sent as JSON or as one SSE event.
async fn message(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(&text);
    serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_on_one_connection_answer_without_a_delayed_ack_stall() {
    let handle = McpServer::new(tinyagent_demo::all_tools())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = handle.url();
    // One client, one idle connection kept: every request after the first reuses it.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .build()
        .unwrap();
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(&url)
            .header("accept", ACCEPT)
            .header("content-type", "application/json")
            .json(&body);
        if let Some(id) = session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send()
    };
    let init = post(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "latency", "version": "1"}}}),
        None,
    )
    .await
    .unwrap();
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = message(init).await;
    let done = post(
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        Some(&session),
    )
    .await
    .unwrap();
    assert!(done.status().is_success());

    let mut took = Vec::with_capacity(CALLS);
    for i in 1..=CALLS {
        let started = Instant::now();
        let response = post(
            json!({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {
                "name": "calculator",
                "arguments": {"operation": "multiply", "a": i, "b": 2}}}),
            Some(&session),
        )
        .await
        .unwrap();
        let answer = message(response).await;
        took.push(started.elapsed());
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or("");
        assert!(
            text.contains(&(i * 2).to_string()),
            "call {i} answered {answer}"
        );
    }
    took.sort();
    let median = took[CALLS / 2];
    eprintln!(
        "tools/call over one connection: median {median:?}, slowest {:?}",
        took[CALLS - 1]
    );
    assert!(
        median <= Duration::from_millis(5),
        "median tools/call over one connection took {median:?} (all: {took:?}); \
         a ~40 ms median is Nagle's algorithm meeting a delayed ACK"
    );
    handle.shutdown().await;
}
