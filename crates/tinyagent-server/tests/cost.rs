//! Money: each answer's usage says what it cost (Chat Completions, the Responses API, the
//! session API's events), and a key past its money limit gets `429 cost_limit_exceeded`, its
//! run in flight stopped before it spends more. The model is the real OpenAI provider against
//! an OpenAI-compatible server on loopback; its model has a price.

mod common;

use std::time::Duration;

use common::priced::{self, Provider, call_cost};
use common::{Running, client, frames};
use serde_json::{Value, json};
use tinyagent::model::Cost;
use tinyagent_server::{CostLimit, Server};

fn usd(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("not a number of dollars: {value}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

async fn post_json(server: &Running, key: &str, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(server.url(path))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn chat(stream: bool) -> Value {
    json!({"model": "priced", "messages": [{"role": "user", "content": "hi"}], "stream": stream,
        "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null }})
}

#[tokio::test]
async fn answers_carry_what_they_cost_when_the_price_is_known() {
    let provider = Provider::default();
    let base = priced::provider(provider.clone()).await;
    let server = Running::start(
        Server::new()
            .agent(priced::agent("priced", &base, true))
            .agent(priced::agent("unpriced", &base, false))
            .named_api_key("alice", "sk-alice"),
    )
    .await;
    let cost = call_cost().usd();

    // Chat Completions: `usage.cost` in dollars, beside the tokens (OpenRouter's convention).
    let answer: Value = post_json(&server, "sk-alice", "/v1/chat/completions", chat(false))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "priced answer");
    assert_eq!(answer["usage"]["prompt_tokens"], 1000);
    assert!(close(usd(&answer["usage"]["cost"]), cost), "{answer}");
    // Streamed, in the usage chunk.
    let streamed = post_json(&server, "sk-alice", "/v1/chat/completions", chat(true))
        .await
        .text()
        .await
        .unwrap();
    let usage = frames(&streamed)
        .iter()
        .filter(|f| f.data != "[DONE]")
        .map(common::Frame::json)
        .find(|chunk| chunk["usage"].is_object())
        .expect("a usage chunk");
    assert!(close(usd(&usage["usage"]["cost"]), cost), "{usage}");
    // A model without a price: no cost at all, rather than a cost of nothing.
    let mut unpriced = chat(false);
    unpriced["model"] = json!("unpriced");
    let answer: Value = post_json(&server, "sk-alice", "/v1/chat/completions", unpriced)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(answer["usage"]["prompt_tokens"], 1000);
    assert!(answer["usage"].get("cost").is_none(), "{answer}");

    // The Responses API: the same, in its usage.
    let response: Value = post_json(
        &server,
        "sk-alice",
        "/v1/responses",
        json!({"model": "priced", "input": "hi"}),
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(response["usage"]["input_tokens"], 1000);
    assert!(close(usd(&response["usage"]["cost"]), cost), "{response}");

    // The session API: each step's `usage` event, and the run's total in `finished` (the
    // usage's fields are the event's own): two model calls, a tool call then the answer.
    let events = post_json(
        &server,
        "sk-alice",
        "/v1/sessions/s1/messages",
        json!({"agent": "priced", "input": "add please"}),
    )
    .await
    .text()
    .await
    .unwrap();
    let events = frames(&events);
    let steps: Vec<f64> = events
        .iter()
        .filter(|f| f.event.as_deref() == Some("usage"))
        .map(|f| usd(&f.json()["cost"]))
        .collect();
    assert_eq!(steps.len(), 2, "{events:?}");
    assert!(steps.iter().all(|c| close(*c, cost)), "{steps:?}");
    let finished = events.last().unwrap().json();
    assert_eq!(finished["type"], "finished");
    assert!(close(usd(&finished["cost"]), 2.0 * cost), "{finished}");
    assert_eq!(provider.calls(), 6);
}

#[tokio::test]
async fn a_key_past_its_money_limit_gets_429_until_it_comes_back() {
    let provider = Provider::default();
    let base = priced::provider(provider.clone()).await;
    // A cent a day: two calls of $0.006 take it past its limit.
    let limit = CostLimit::new(Cost::from_usd(0.01), Duration::from_secs(86_400));
    let server = Running::start(
        Server::new()
            .agent(priced::agent("priced", &base, true))
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob")
            .max_cost_per_key(limit),
    )
    .await;
    for _ in 0..2 {
        let response = post_json(&server, "sk-alice", "/v1/chat/completions", chat(false)).await;
        assert_eq!(response.status(), 200);
    }
    for (path, body) in [
        ("/v1/chat/completions", chat(false)),
        ("/v1/chat/completions", chat(true)),
        ("/v1/responses", json!({"model": "priced", "input": "hi"})),
        ("/v1/sessions/s1/messages", json!({"input": "hi"})),
    ] {
        let response = post_json(&server, "sk-alice", path, body).await;
        assert_eq!(response.status(), 429, "{path}");
        let retry: u64 = response.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        // From -$0.002 to a hundredth of the limit at a cent a day: 0.0021 / 0.01 of a day.
        assert!((18_100..=18_200).contains(&retry), "{path}: {retry}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "cost_limit_exceeded", "{path}");
        assert_eq!(body["error"]["type"], "rate_limit_error");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("$0.01/day"), "{message}");
    }
    assert_eq!(provider.calls(), 2, "a refused request calls no model");
    // Reading is not spending; another key has its own money.
    let read = client()
        .get(server.url("/v1/sessions"))
        .bearer_auth("sk-alice")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    let bobs = post_json(&server, "sk-bob", "/v1/chat/completions", chat(false)).await;
    assert_eq!(bobs.status(), 200);
}

#[tokio::test]
async fn a_run_stops_before_it_spends_past_what_its_key_had_left() {
    // A model that calls a tool at every step: each step costs $0.006.
    let provider = Provider {
        always_tool: true,
        ..Provider::default()
    };
    let base = priced::provider(provider.clone()).await;
    let limit = CostLimit::new(Cost::from_usd(0.01), Duration::from_secs(86_400));
    let server = Running::start(
        Server::new()
            .agent(priced::agent("priced", &base, true))
            .named_api_key("alice", "sk-alice")
            .max_cost_per_key(limit),
    )
    .await;
    let response = post_json(
        &server,
        "sk-alice",
        "/v1/sessions/s1/messages",
        json!({"input": "add forever"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let events = frames(&response.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("error"), "{events:?}");
    let error = last.json();
    assert_eq!(error["error"]["code"], "cost_limit_exceeded", "{error}");
    // $0.006, then $0.012 ≥ $0.01: no third call.
    assert_eq!(provider.calls(), 2);
    let tools = events
        .iter()
        .filter(|f| f.event.as_deref() == Some("tool_call_finished"))
        .count();
    assert_eq!(tools, 2);
    // The key now owes: its next request is refused at once.
    let again = post_json(
        &server,
        "sk-alice",
        "/v1/sessions/s2/messages",
        json!({"input": "more"}),
    )
    .await;
    assert_eq!(again.status(), 429);
    assert_eq!(provider.calls(), 2);
}

#[tokio::test]
async fn the_agents_own_money_limit_stays_under_the_keys() {
    // The key may spend $1; the agent's own budget stops a run at $0.01 (two calls).
    let provider = Provider {
        always_tool: true,
        ..Provider::default()
    };
    let base = priced::provider(provider.clone()).await;
    let agent = priced::builder("priced", &base, true)
        .budget(tinyagent::Budget::default().max_cost(Cost::from_usd(0.01)))
        .build()
        .unwrap();
    let server = Running::start(
        Server::new()
            .agent(agent)
            .named_api_key("alice", "sk-alice")
            .max_cost_per_key(CostLimit::new(
                Cost::from_usd(1.0),
                Duration::from_secs(86_400),
            )),
    )
    .await;
    let response = post_json(
        &server,
        "sk-alice",
        "/v1/sessions/s1/messages",
        json!({"input": "add forever"}),
    )
    .await;
    let events = frames(&response.text().await.unwrap());
    let error = events.last().unwrap().json();
    assert_eq!(error["error"]["code"], "cost_limit_exceeded", "{error}");
    assert_eq!(provider.calls(), 2);
    // The key itself has money left: its next request runs (and stops at the agent's limit).
    let again = post_json(
        &server,
        "sk-alice",
        "/v1/sessions/s2/messages",
        json!({"input": "more"}),
    )
    .await;
    assert_eq!(again.status(), 200);
    let events = frames(&again.text().await.unwrap());
    let error = events.last().unwrap().json();
    assert_eq!(error["error"]["code"], "cost_limit_exceeded", "{error}");
    assert_eq!(provider.calls(), 4);
}
