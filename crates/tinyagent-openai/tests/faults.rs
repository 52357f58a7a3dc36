//! The provider against servers that misbehave after the response headers, as real ones and
//! the proxies before them do: a stream cut once, an error event in the middle of a stream, a
//! server that never answers, a tool call cut by the token limit, an HTML page or an empty
//! body with status 200, a stream that never ends. Each test pins the exact error a user
//! reads. Request bodies are checked against OpenAI's OpenAPI spec.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use support::*;
use tinyagent::{
    AgentError, AgentExt, Event, Invocation, LlmAgent, Message, Model, ModelRequest, Session,
    ToolContext, ToolError, model::ModelErrorKind, tools,
};
use tinyagent_http::testing::{
    BOUND, SSE_HEAD, dripping_server, final_text, restarts, stream_all, text_of,
};
use tinyagent_openai::HttpConfig;
use tinyagent_openai::{DEFAULT_MAX_TOKENS, OpenAiModel};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)]).instruction("你是一个全能助手。")
}

async fn mount(server: &MockServer, reply: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// The first `n` events of a fixture, as a stream that stops there (no finish, no `[DONE]`).
fn first_events(name: &str, n: usize) -> String {
    fixture(name)
        .split("\n\n")
        .take(n)
        .map(|e| format!("{e}\n\n"))
        .collect()
}

#[tokio::test]
async fn a_stream_cut_before_any_text_is_retried_silently() {
    let server = MockServer::start().await;
    // Only the role chunk, then the connection ends: nothing was shown.
    mount(&server, sse(first_events("stream_text.sse", 1)), Some(1)).await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert!(restarts(&events).is_empty(), "{events:#?}");
    assert_eq!(text_of(&events), "Hello! How can I assist you today?");
    assert_eq!(final_text(&events), "Hello! How can I assist you today?");
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1]);
}

#[tokio::test]
async fn a_stream_cut_after_text_restarts_and_says_so() {
    let server = MockServer::start().await;
    mount(&server, sse(first_events("stream_text.sse", 3)), Some(1)).await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        restarts(&events),
        [
            "the stream ended before the response was complete (no finish_reason), after 3 chunks \
          and 6 bytes of text; retrying (attempt 2 of 3, the reply starts again)"
        ]
    );
    // What was shown before the restart, then the whole reply; the response is the second.
    assert_eq!(text_of(&events), "Hello!Hello! How can I assist you today?");
    assert_eq!(final_text(&events), "Hello! How can I assist you today?");
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_error_event_mid_stream_restarts_then_succeeds() {
    let server = MockServer::start().await;
    let broken = format!(
        "{}data: {{\"error\":{{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}}}\n\n",
        first_events("stream_text.sse", 3)
    );
    mount(&server, sse(broken), Some(1)).await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        restarts(&events),
        [
            "the server reported an error: The server had an error while processing your request. \
          Sorry about that! (type server_error); retrying (attempt 2 of 3, the reply starts again)"
        ]
    );
    assert_eq!(final_text(&events), "Hello! How can I assist you today?");
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_error_event_that_cannot_pass_is_not_retried() {
    let server = MockServer::start().await;
    let body = format!(
        "{}data: {{\"error\":{{\"message\":\"Invalid 'messages[1].content'\",\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":null}}}}\n\n",
        first_events("stream_text.sse", 2)
    );
    mount(&server, sse(body), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(
        err.message(),
        "the server reported an error: Invalid 'messages[1].content' (type invalid_request_error, \
         param messages)"
    );
    assert!(restarts(&events).is_empty());
    assert_eq!(validated_bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn a_silent_server_fails_after_the_configured_first_byte_timeout() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(fixture("stream_text.sse")).set_delay(Duration::from_secs(30)),
        None,
    )
    .await;
    let model = OpenAiModel::new(
        config_for(&server.uri())
            .silence_timeout(Duration::from_millis(200))
            .max_retries(1),
    )
    .unwrap();
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::TimedOut);
    assert_eq!(
        err.message(),
        format!(
            "no answer from {}/v1/chat/completions within 0.2 s (the first-byte timeout; \
             attempt 2 of 2)",
            server.uri()
        )
    );
    assert!(events.is_empty());
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn the_request_timeout_bounds_the_whole_call_with_its_retries() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(fixture("stream_text.sse")).set_delay(Duration::from_secs(30)),
        None,
    )
    .await;
    let model = OpenAiModel::new(
        config_for(&server.uri())
            .silence_timeout(Duration::from_secs(20))
            .request_timeout(Duration::from_millis(300))
            .max_retries(5),
    )
    .unwrap();
    let err = tokio::time::timeout(BOUND, model.generate(&ask("Hello!")))
        .await
        .expect("bounded")
        .unwrap_err();
    assert_eq!(
        err.message(),
        format!(
            "the call to {}/v1/chat/completions did not finish within 0.3 s (the request \
             timeout, retries included)",
            server.uri()
        )
    );
    assert!(!err.is_retryable());
}

#[tokio::test]
async fn an_endless_stream_is_cut_at_the_reply_size_limit() {
    let delta = r#"data: {"choices":[{"index":0,"delta":{"content":"ha"},"finish_reason":null}]}"#;
    let (base, connections) =
        dripping_server(SSE_HEAD, format!("{delta}\n\n").repeat(20), Duration::ZERO).await;
    let model = OpenAiModel::new(config_for(&base).max_reply_bytes(64 * 1024)).unwrap();
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    let read: usize = err
        .message()
        .strip_prefix("the reply grew past ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(read > 64 * 1024 && read < 64 * 1024 + 4096, "{read}");
    assert_eq!(
        err.message(),
        format!(
            "the reply grew past {read} bytes without finishing (the limit is max_reply_bytes = \
             65536); the server may be ignoring the token limit sent, max_tokens \
             {DEFAULT_MAX_TOKENS}"
        )
    );
    assert!(!err.is_retryable());
    assert_eq!(connections.load(Ordering::SeqCst), 1, "not retried");
    assert!(text_of(&events).starts_with("haha"));
}

#[tokio::test]
async fn a_stream_that_drips_forever_ends_at_the_request_timeout() {
    let delta = r#"data: {"choices":[{"index":0,"delta":{"content":"."},"finish_reason":null}]}"#;
    let (base, _) =
        dripping_server(SSE_HEAD, format!("{delta}\n\n"), Duration::from_millis(20)).await;
    let model = OpenAiModel::new(
        config_for(&base)
            .silence_timeout(Duration::from_secs(5))
            .request_timeout(Duration::from_millis(400)),
    )
    .unwrap();
    let (_, err) = stream_all(&model, &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::TimedOut);
    assert!(
        err.message().starts_with(&format!(
            "the call to {base}/v1/chat/completions did not finish within 0.4 s"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_token_limit_is_sent_by_default() {
    let server = MockServer::start().await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    stream_all(&model_for(&server), &ask("Hello!")).await;
    let own = OpenAiModel::new(config_for(&server.uri()).max_tokens(None)).unwrap();
    stream_all(&own, &ask("Hello!").max_tokens(77)).await;
    stream_all(&own, &ask("Hello!")).await;
    let bodies = validated_bodies(&server).await;
    // The mock server is not api.openai.com: the field is `max_tokens`.
    assert_eq!(bodies[0]["max_tokens"], json!(DEFAULT_MAX_TOKENS));
    assert_eq!(bodies[1]["max_tokens"], json!(77));
    assert!(bodies[2].get("max_tokens").is_none());
}

#[tokio::test]
async fn an_html_page_with_status_200_is_named() {
    let page = "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome to nginx!</h1></body></html>";
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"),
        None,
    )
    .await;
    let expected = format!(
        "HTTP 200 OK from {}/v1 with text/html; charset=utf-8 instead of an event stream: \
         <!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head><body><h1>Welcome \
         to nginx!</h1></body></html>; check the base URL: it must be the root of an \
         OpenAI-compatible API (usually ending in /v1, such as https://api.openai.com/v1)",
        server.uri()
    );
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    assert_eq!(err.message(), expected);
    assert!(events.is_empty());
    let err = model_for(&server)
        .generate(&ask("Hello!"))
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        expected.replace("an event stream", "a JSON response")
    );
    // Not retried: the same page would come back.
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_empty_body_with_status_200_is_named() {
    let server = MockServer::start().await;
    mount(&server, ResponseTemplate::new(200), None).await;
    let (_, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert_eq!(
        err.expect("an error").message(),
        format!(
            "HTTP 200 OK from {}/v1 with an empty body (no content type); check the base URL: \
             it must be the root of an OpenAI-compatible API (usually ending in /v1, such as \
             https://api.openai.com/v1)",
            server.uri()
        )
    );
    let err = model_for(&server)
        .generate(&ask("Hello!"))
        .await
        .unwrap_err();
    assert!(
        err.message()
            .contains("with an empty body (no content type)"),
        "{err}"
    );
}

#[tokio::test]
async fn a_tool_call_cut_by_the_token_limit_never_runs() {
    let server = MockServer::start().await;
    let cut = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\\\"北\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    mount(&server, sse(cut.to_owned()), None).await;
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    let weather = tools::new_tool(
        "get_weather",
        "天气",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |_c: ToolContext, _i: String| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::SeqCst);
                Ok::<_, ToolError>("晴".to_owned())
            }
        },
    );
    let agent = LlmAgent::builder("smart-assistant")
        .model(model_for(&server))
        .tool(weather)
        .max_tokens(16)
        .build()
        .unwrap();
    let err = tokio::time::timeout(BOUND, agent.ask(&Session::new(), "北京天气怎么样？"))
        .await
        .expect("bounded")
        .unwrap_err();
    assert!(matches!(err, AgentError::ReplyTruncated { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        "the model's reply was cut off by the token limit (max_tokens 16) while it was calling \
         get_weather; the calls were not run; raise the limit with `max_tokens`"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 1, "no second step");
    assert_eq!(bodies[0]["max_tokens"], 16);
}

#[tokio::test]
async fn an_agent_shows_a_restarted_reply_as_an_event() {
    let server = MockServer::start().await;
    mount(&server, sse(first_events("stream_text.sse", 3)), Some(1)).await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    let agent = LlmAgent::builder("smart-assistant")
        .model(model_for(&server))
        .build()
        .unwrap();
    let mut run = tinyagent::Agent::run(&agent, Invocation::new(Session::new(), "Hello!"));
    let mut seen = Vec::new();
    while let Some(event) = run.next().await {
        match event.unwrap() {
            Event::TextDelta(t) => seen.push(t),
            Event::ReplyRestarted { .. } => seen.push("<restart>".to_owned()),
            Event::Finished { answer, .. } => {
                assert_eq!(answer, "Hello! How can I assist you today?");
            }
            _ => {}
        }
    }
    assert_eq!(
        seen.concat(),
        "Hello!<restart>Hello! How can I assist you today?"
    );
}

#[tokio::test]
async fn arguments_that_are_not_json_go_back_as_a_json_object() {
    let server = MockServer::start().await;
    mount(&server, sse(fixture("stream_text.sse")), None).await;
    let call = tinyagent::ToolCall::new("call_1", "get_weather", r#"{"city":"北"#);
    let history = vec![
        Message::user("北京天气怎么样？"),
        Message::new(
            tinyagent::Role::Assistant,
            vec![tinyagent::Part::ToolCall(call)],
        ),
        Message::from_tool_results(vec![tinyagent::ToolResult::error(
            "call_1",
            "get_weather",
            "invalid JSON at line 1 column 10",
        )]),
    ];
    stream_all(&model_for(&server), &ModelRequest::new(history)).await;
    let bodies = validated_bodies(&server).await;
    let sent = bodies[0]["messages"][1]["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .unwrap();
    let parsed: serde_json::Value = serde_json::from_str(sent).unwrap();
    assert_eq!(parsed, json!({"invalid_arguments": "{\"city\":\"北"}));
}

#[tokio::test]
async fn an_account_out_of_quota_is_told_apart_from_a_rate_limit() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(429)
            .set_body_raw(fixture("error_429_quota.json"), "application/json"),
        None,
    )
    .await;
    let err = model_for(&server)
        .generate(&ask("Hello!"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::RateLimited);
    assert!(!err.is_retryable());
    assert!(
        err.message().starts_with(
            "HTTP 429 Too Many Requests: out of quota: the account has no credit left for this \
             API (waiting does not help; check its plan and billing): "
        ),
        "{err}"
    );
    assert_eq!(validated_bodies(&server).await.len(), 1, "not retried");
}
