//! The money spent, per key and model, on `/metrics`: `tinyagent.cost` (US dollars) read off
//! each model call's span, counted for the key whose request (or A2A task) ran it. A test
//! binary of its own: it installs the process's tracing subscriber.

#[path = "../../tinyagent-otel/tests/common/mod.rs"]
mod otel;

mod common;

use common::priced::{self, Provider, call_cost};
use common::{Running, client};
use serde_json::json;
use tinyagent_otel::Telemetry;
use tinyagent_server::Server;
use tracing_subscriber::prelude::*;

use otel::{parse_prometheus as parse, sample as value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_reads_the_money_spent_per_key_and_model() {
    let telemetry = Telemetry::builder()
        .env(false)
        .prometheus(true)
        .build()
        .unwrap();
    tracing_subscriber::registry()
        .with(telemetry.layer())
        .init();
    let provider = Provider::default();
    let base = priced::provider(provider.clone()).await;
    let server = Running::start(
        Server::new()
            .agent(priced::agent("priced", &base, true))
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob")
            .admin_key("sk-admin")
            .metrics(telemetry.prometheus().unwrap().clone()),
    )
    .await;
    let http = client();
    // Alice: a chat completion (one call) and a session turn with a tool call (two calls).
    let answer = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-alice")
        .json(&common::chat("priced", "hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.text().await.unwrap();
    let turn = http
        .post(server.url("/v1/sessions/s1/messages"))
        .bearer_auth("sk-alice")
        .json(&json!({"input": "add please"}))
        .send()
        .await
        .unwrap();
    assert!(turn.text().await.unwrap().contains("event: finished"));
    // Bob: an A2A task (its run happens away from the request, in a task of its own).
    let sent: serde_json::Value = http
        .post(server.url("/a2a/priced"))
        .bearer_auth("sk-bob")
        .json(
            &json!({"jsonrpc": "2.0", "id": "r1", "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]}}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(sent["result"]["status"]["state"], "completed", "{sent}");
    assert_eq!(provider.calls(), 4);

    let text = http
        .get(server.url("/metrics"))
        .bearer_auth("sk-admin")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let samples = parse(&text);
    let metric = "tinyagent_cost_total";
    let spent = |key: &str| {
        value(
            &samples,
            metric,
            &[
                ("tinyagent_api_key", key),
                ("gen_ai_request_model", "gpt-test"),
                ("gen_ai_provider_name", "openai"),
            ],
        )
    };
    let cost = call_cost().usd();
    assert!((spent("alice") - 3.0 * cost).abs() < 1e-9, "{text}");
    assert!((spent("bob") - cost).abs() < 1e-9, "{text}");
    assert!(
        text.contains("# TYPE tinyagent_cost_total counter"),
        "{text}"
    );
}
