//! The provider against servers that misbehave: 429 with `retry-after`, 529 overloaded, 5xx,
//! a stream cut once then fine, an `error` event in the middle of a stream, garbage, a
//! server that never answers, a stream that never ends, an HTML page with status 200, a tool
//! call cut by the token limit. Each test pins what the user reads. Request bodies are
//! checked against Anthropic's OpenAPI spec.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;
use support::*;
use tinyagent::{
    AgentError, AgentExt, Event, Invocation, LlmAgent, Model, Session, ToolContext, ToolError,
    model::ModelErrorKind, tools,
};
use tinyagent_anthropic::HttpConfig;
use tinyagent_anthropic::{AnthropicModel, DEFAULT_MAX_TOKENS};
use wiremock::{MockServer, ResponseTemplate};

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_server_asks_for() {
    let server = MockServer::start().await;
    mount(
        &server,
        error_reply(429, "error_429.json").insert_header("retry-after", "1"),
        Some(1),
    )
    .await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let started = Instant::now();
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(final_text(&events), "Hi! My name is Claude.");
    assert!(restarts(&events).is_empty(), "nothing was shown before");
    // The backoff configured is at most 5 ms: only the server's `retry-after` waits a second.
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn a_429_that_does_not_pass_says_rate_limited() {
    let server = MockServer::start().await;
    mount(&server, error_reply(429, "error_429.json"), None).await;
    let model = AnthropicModel::new(config_for(&server.uri()).max_retries(2)).unwrap();
    let err = model.generate(&ask("Hello!")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::RateLimited);
    assert_eq!(
        err.message(),
        "HTTP 429 Too Many Requests: rate limited (too many requests or tokens per minute): \
         This request would exceed the rate limit for your organization of 50 input \
         tokens per minute. (type rate_limit_error, request req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
    assert_eq!(validated_bodies(&server).await.len(), 3, "1 + 2 retries");
}

#[tokio::test]
async fn a_529_overloaded_and_a_500_are_retried() {
    let server = MockServer::start().await;
    mount(&server, error_reply(529, "error_529.json"), Some(1)).await;
    mount(&server, error_reply(500, "error_500.json"), Some(1)).await;
    mount(&server, json_reply("message_default.json"), None).await;
    let resp = model_for(&server).generate(&ask("Hello!")).await.unwrap();
    assert_eq!(resp.message.text(), "Hi! My name is Claude.");
    assert_eq!(validated_bodies(&server).await.len(), 3);
    // When it does not pass, the error names the overload.
    let server = MockServer::start().await;
    mount(&server, error_reply(529, "error_529.json"), None).await;
    let err = AnthropicModel::new(config_for(&server.uri()).max_retries(1))
        .unwrap()
        .generate(&ask("Hello!"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Unavailable);
    assert_eq!(
        err.message(),
        "HTTP 529 <unknown status code>: the API is overloaded: Overloaded (type \
         overloaded_error, request req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
}

#[tokio::test]
async fn a_stream_cut_before_any_text_is_retried_silently() {
    let server = MockServer::start().await;
    mount(&server, sse(first_events("stream_text.sse", 2)), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert!(restarts(&events).is_empty());
    assert_eq!(text_of(&events), "Hi! My name is Claude.");
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn a_stream_cut_after_text_restarts_and_says_so() {
    let server = MockServer::start().await;
    // message_start, content_block_start, ping, the first text delta; then the end.
    mount(&server, sse(first_events("stream_text.sse", 4)), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        restarts(&events),
        [
            "the stream ended before the message was complete (no stop_reason), after 3 events \
          and 3 bytes of text; retrying (attempt 2 of 3, the reply starts again)"
        ]
    );
    assert_eq!(text_of(&events), "Hi!Hi! My name is Claude.");
    assert_eq!(final_text(&events), "Hi! My name is Claude.");
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_restarts_then_succeeds() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_error_overloaded.sse"), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        restarts(&events),
        [
            "the API reported an error: Overloaded (type overloaded_error); retrying (attempt 2 \
          of 3, the reply starts again)"
        ]
    );
    assert_eq!(final_text(&events), "Hi! My name is Claude.");
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_error_event_that_cannot_pass_is_not_retried() {
    let server = MockServer::start().await;
    let body = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"tools.0.input_schema: JSON schema is invalid\"},\"request_id\":null}\n\n";
    mount(&server, sse(body.to_owned()), None).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidRequest);
    assert_eq!(
        err.message(),
        "the API reported an error: tools.0.input_schema: JSON schema is invalid (type \
         invalid_request_error)"
    );
    assert!(events.is_empty());
    assert_eq!(validated_bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn garbage_is_an_error_not_a_panic() {
    for (content_type, body, expected) in [
        (
            "text/event-stream",
            "event: message_start\ndata: {\"type\":\"message_start\",\"mess\n\n",
            "a stream event is not JSON (EOF while parsing a string at line 1 column 29): \
             {\"type\":\"message_start\",\"mess",
        ),
        (
            "text/event-stream",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
            "a content_block_delta for block 3, which never started: \
             {\"type\":\"text_delta\",\"text\":\"x\"}",
        ),
        (
            "application/json",
            "{\"type\":\"message\",\"content\":7}",
            "the response has an unexpected shape (invalid type: integer `7`, expected a \
             sequence): {\"type\":\"message\",\"content\":7}",
        ),
        (
            "application/json",
            "{\"type\":\"message\",",
            "the response is not JSON (EOF while parsing a value at line 1 column 18): \
             {\"type\":\"message\",",
        ),
    ] {
        let server = MockServer::start().await;
        mount(
            &server,
            ResponseTemplate::new(200).set_body_raw(body, content_type),
            None,
        )
        .await;
        let model = AnthropicModel::new(config_for(&server.uri()).max_retries(0)).unwrap();
        let (_, err) = stream_all(&model, &ask("Hello!")).await;
        let err = err.unwrap_or_else(|| panic!("an error for {body:?}"));
        assert_eq!(err.kind(), ModelErrorKind::InvalidResponse, "{err}");
        assert_eq!(err.message(), expected);
    }
}

#[tokio::test]
async fn a_silent_server_fails_after_the_configured_first_byte_timeout() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse_reply("stream_text.sse").set_delay(Duration::from_secs(30)),
        None,
    )
    .await;
    let model = AnthropicModel::new(
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
            "no answer from {}/v1/messages within 0.2 s (the first-byte timeout; attempt 2 of 2)",
            server.uri()
        )
    );
    assert!(events.is_empty());
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn an_endless_stream_is_cut_at_the_reply_size_limit() {
    let start = first_events("stream_text.sse", 2);
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ha\"}}\n\n";
    let (base, connections) = dripping_server(
        SSE_HEAD,
        format!("{start}{}", delta.repeat(20)),
        Duration::ZERO,
    )
    .await;
    let model = AnthropicModel::new(config_for(&base).max_reply_bytes(64 * 1024)).unwrap();
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    let read: usize = err
        .message()
        .strip_prefix("the reply grew past ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{err}"));
    assert!(read > 64 * 1024 && read < 64 * 1024 + 8192, "{read}");
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
async fn a_stream_of_pings_forever_ends_at_the_request_timeout() {
    let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n".to_owned();
    let (base, _) = dripping_server(SSE_HEAD, ping, Duration::from_millis(20)).await;
    let model = AnthropicModel::new(
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
            "the call to {base}/v1/messages did not finish within 0.4 s"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn an_html_page_with_status_200_is_named() {
    let page = "<!DOCTYPE html>\n<html><head><title>Welcome to nginx!</title></head></html>";
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(page, "text/html; charset=utf-8"),
        None,
    )
    .await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    assert_eq!(
        err.message(),
        format!(
            "HTTP 200 OK from {} with text/html; charset=utf-8 instead of an event stream: \
             {page}; check the base URL: it must be the root of the Anthropic API or a gateway \
             to it (such as https://api.anthropic.com; requests go to its /v1/messages)",
            server.uri()
        )
    );
    assert!(events.is_empty());
    assert_eq!(validated_bodies(&server).await.len(), 1, "not retried");
}

#[tokio::test]
async fn a_tool_call_cut_by_the_token_limit_never_runs() {
    let server = MockServer::start().await;
    mount(
        &server,
        json_reply("message_max_tokens_tool_use.json"),
        None,
    )
    .await;
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
    mount(&server, sse(first_events("stream_text.sse", 4)), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
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
                assert_eq!(answer, "Hi! My name is Claude.");
            }
            _ => {}
        }
    }
    assert_eq!(seen.concat(), "Hi!<restart>Hi! My name is Claude.");
}
