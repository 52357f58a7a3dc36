//! A priced model for the money tests: the real OpenAI provider talking to an
//! OpenAI-compatible server on loopback whose every answer uses 1,000 input and 500 output
//! tokens of `gpt-test`, priced at $2 and $8 per million: $0.006 a call.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::http::header;
use axum::response::IntoResponse;
use serde_json::{Value, json};
use tinyagent::LlmAgent;
use tinyagent::model::{Cost, Price, PriceTable};
use tinyagent_openai::{HttpConfig, OpenAiConfig, OpenAiModel};

/// What one call of the priced model costs.
pub fn call_cost() -> Cost {
    Cost::from_usd(0.006)
}

/// The fake server's state: how many calls it answered, and whether it always calls a tool.
#[derive(Clone, Default)]
pub struct Provider {
    pub calls: Arc<AtomicUsize>,
    pub always_tool: bool,
}

impl Provider {
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

fn chunk(delta: Value, finish: Option<&str>, usage: Option<Value>) -> String {
    let body = json!({
        "id": "chatcmpl-priced", "object": "chat.completion.chunk", "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": if usage.is_some() { json!([]) } else {
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}])
        },
        "usage": usage,
    });
    format!("data: {body}\n\n")
}

async fn completions(
    axum::extract::State(provider): axum::extract::State<Provider>,
    body: axum::body::Bytes,
) -> axum::response::Response {
    provider.calls.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let after_tool = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| m["role"] == "tool");
    let usage = json!({"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500});
    let tool = provider.always_tool
        || (!after_tool && request["messages"].to_string().contains("add please"));
    let mut sse = String::new();
    if tool {
        let n = provider.calls();
        sse.push_str(&chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0,
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]}),
            None,
            None,
        ));
        sse.push_str(&chunk(json!({}), Some("tool_calls"), None));
    } else {
        sse.push_str(&chunk(
            json!({"role": "assistant", "content": "priced answer"}),
            None,
            None,
        ));
        sse.push_str(&chunk(json!({}), Some("stop"), None));
    }
    sse.push_str(&chunk(Value::Null, None, Some(usage)));
    sse.push_str("data: [DONE]\n\n");
    ([(header::CONTENT_TYPE, "text/event-stream")], sse).into_response()
}

/// Starts the fake server; its base URL (`…/v1`).
pub async fn provider(provider: Provider) -> String {
    let app = axum::Router::new()
        .route("/v1/chat/completions", axum::routing::post(completions))
        .with_state(provider);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// An agent `name` on the fake server's `gpt-test`, with the `add` tool; priced when `priced`.
pub fn agent(name: &str, base: &str, priced: bool) -> LlmAgent {
    builder(name, base, priced).build().unwrap()
}

/// The builder of [`agent`], for more settings.
#[allow(dead_code)] // Not every test binary that shares this module uses it.
pub fn builder(name: &str, base: &str, priced: bool) -> tinyagent::agent::LlmAgentBuilder {
    let model = OpenAiModel::new(
        OpenAiConfig::new("gpt-test")
            .base_url(base)
            .api_key("sk-provider")
            .max_retries(0),
    )
    .unwrap();
    let prices = if priced {
        PriceTable::empty().price("gpt-test", Price::new(2.0, 8.0))
    } else {
        PriceTable::empty()
    };
    LlmAgent::builder(name)
        .description("A priced agent")
        .model(model)
        .tool(super::add_tool())
        .prices(prices)
}
