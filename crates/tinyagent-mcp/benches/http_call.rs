//! One `tools/call` over MCP's streamable HTTP transport, on one kept-open connection to
//! [`McpServer::serve_http`] on 127.0.0.1: the round trip a remote tool call costs, protocol
//! and transport included (the tool itself, the calculator, takes nanoseconds).
//!
//! `cargo bench -p tinyagent-mcp --bench http_call` (add `-- --quick` for a short run).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use tinyagent_mcp::McpServer;

const ACCEPT: &str = "application/json, text/event-stream";

async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, body: Value) -> String {
    let mut request = http
        .post(url)
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
        .json(&body);
    if let Some(id) = session {
        request = request
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18");
    }
    request.send().await.unwrap().text().await.unwrap()
}

fn http_call(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (handle, http, url, session) = rt.block_on(async {
        let handle = McpServer::new(tinyagent_demo::all_tools())
            .serve_http("127.0.0.1:0")
            .await
            .unwrap();
        let url = handle.url();
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(1)
            .build()
            .unwrap();
        let init = http
            .post(&url)
            .header("accept", ACCEPT)
            .json(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"}}}),
            )
            .send()
            .await
            .unwrap();
        let session = init.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        init.text().await.unwrap();
        post(
            &http,
            &url,
            Some(&session),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await;
        (handle, http, url, session)
    });
    let mut id = 0u64;
    c.bench_function("mcp_http/tools_call_one_connection", |b| {
        b.iter(|| {
            id += 1;
            let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "calculator",
                "arguments": {"operation": "multiply", "a": 7, "b": 8}}});
            let text = rt.block_on(post(&http, &url, Some(&session), body));
            assert!(text.contains("56"), "{text}");
            black_box(text)
        });
    });
    rt.block_on(handle.shutdown());
}

criterion_group!(benches, http_call);
criterion_main!(benches);
