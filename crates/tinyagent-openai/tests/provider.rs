//! The provider against a loopback server replaying recorded wire-format bodies; every
//! request body it sends is checked against OpenAI's OpenAPI spec.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use tinyagent::model::Sampling;
use tinyagent::{
    Message, Model, ModelRequest, ModelResponse, Part, Role, ToolCall, ToolResult, Usage,
    model::{FinishReason, ModelErrorKind, ModelEvent, ToolChoice, ToolDefinition},
};
use tinyagent_http::testing::stream_all;
use tinyagent_openai::HttpConfig;
use tinyagent_openai::{MaxTokensField, OpenAiModel};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn weather_def() -> ToolDefinition {
    tinyagent_demo::weather_tool().definition()
}

fn calculator_def() -> ToolDefinition {
    tinyagent_demo::calculator_tool().definition()
}

fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)]).instruction("你是一个全能助手。")
}

async fn serve(server: &MockServer, reply: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply)
        .mount(server)
        .await;
}

async fn serve_once(server: &MockServer, reply: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply)
        .up_to_n_times(1)
        .mount(server)
        .await;
}

fn done(events: &[ModelEvent]) -> &ModelResponse {
    let n = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Done(_)))
        .count();
    assert_eq!(n, 1, "exactly one Done: {events:#?}");
    match events.last() {
        Some(ModelEvent::Done(resp)) => resp,
        other => panic!("the stream must end with Done, ended with {other:?}"),
    }
}

fn streamed_text(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// Per call id: the name from its start event and the concatenated argument fragments.
fn streamed_calls(events: &[ModelEvent]) -> Vec<(String, String, String)> {
    let mut calls: Vec<(String, String, String)> = Vec::new();
    for e in events {
        match e {
            ModelEvent::ToolCallStart { id, name } => {
                assert!(calls.iter().all(|c| &c.0 != id), "one start per call");
                calls.push((id.clone(), name.clone(), String::new()));
            }
            ModelEvent::ToolCallDelta {
                id,
                arguments_fragment,
            } => {
                let call = calls
                    .iter_mut()
                    .find(|c| &c.0 == id)
                    .expect("a delta after its start");
                call.2.push_str(arguments_fragment);
            }
            _ => {}
        }
    }
    calls
}

// ------------------------------------------------------------------------------------------
// Non-streaming

#[tokio::test]
async fn generate_text_from_openais_default_example() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_default.json")).await;
    let model = model_for(&server);
    let req = ask("Hello!").temperature(0.7).max_tokens(100);
    let resp = model.generate(&req).await.unwrap();
    assert_eq!(resp.message.role, Role::Assistant);
    assert_eq!(resp.message.text(), "Hello! How can I assist you today?");
    assert!(!resp.message.has_tool_calls());
    assert_eq!(
        resp.usage,
        Usage::new(19, 10)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    assert_eq!(resp.finish_reason, FinishReason::Stop);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests[0].headers.get("authorization").unwrap(),
        "Bearer sk-test"
    );
    assert_eq!(
        requests[0].headers.get("content-type").unwrap(),
        "application/json"
    );
    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body,
        &json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "你是一个全能助手。"},
                {"role": "user", "content": "Hello!"}
            ],
            "temperature": 0.7,
            "max_tokens": 100
        })
    );
}

#[tokio::test]
async fn generate_a_tool_call_from_openais_functions_example() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_tool_call.json")).await;
    let model = model_for(&server);
    let def = ToolDefinition::new(
        "get_current_weather",
        "Get the current weather in a given location",
        json!({"type": "object", "properties": {
            "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["location"]}),
    );
    let req = ModelRequest::new(vec![Message::user(
        "What is the weather like in Boston today?",
    )])
    .tools(vec![def.clone()])
    .tool_choice(ToolChoice::Auto);
    let resp = model.generate(&req).await.unwrap();
    let calls: Vec<_> = resp.message.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        [ToolCall::new(
            "call_abc123",
            "get_current_weather",
            "{\n\"location\": \"Boston, MA\"\n}"
        )]
    );
    assert_eq!(resp.message.text(), "");
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    assert_eq!(resp.usage, Usage::new(82, 17).reasoning_tokens(0));

    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {
            "name": def.name, "description": def.description, "parameters": def.input_schema
        }}])
    );
    assert_eq!(body["tool_choice"], "auto");
    assert!(body.get("parallel_tool_calls").is_none());
    assert!(body.get("stream").is_none());
}

#[tokio::test]
async fn generate_parallel_tool_calls() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_parallel_tool_calls.json")).await;
    let model = OpenAiModel::new(
        config_for(&server.uri())
            .parallel_tool_calls(true)
            .max_tokens_field(MaxTokensField::MaxCompletionTokens),
    )
    .unwrap();
    let req = ask("北京天气怎么样？再算一下 7 乘以 8。")
        .tools(vec![weather_def(), calculator_def()])
        .tool_choice(ToolChoice::Required)
        .max_tokens(256);
    let resp = model.generate(&req).await.unwrap();
    let calls: Vec<_> = resp.message.tool_calls().cloned().collect();
    assert_eq!(
        calls,
        [
            ToolCall::new("call_weather_bj", "get_weather", r#"{"city":"北京"}"#),
            ToolCall::new(
                "call_calc_1",
                "calculator",
                r#"{"operation":"multiply","a":7,"b":8}"#
            ),
        ]
    );
    assert_eq!(
        resp.usage,
        Usage::new(156, 52)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);

    let body = &validated_bodies(&server).await[0];
    assert_eq!(body["parallel_tool_calls"], true);
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["max_completion_tokens"], 256);
    assert!(body.get("max_tokens").is_none());
    assert_eq!(body["tools"][1]["function"]["name"], "calculator");
}

#[tokio::test]
async fn history_with_tool_calls_and_results_is_sent_as_servers_accept_it() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_default.json")).await;
    let map_tool = ToolDefinition::new(
        "tag",
        "",
        json!({"type": "object", "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }}),
    );
    let model = OpenAiModel::new(config_for(&server.uri()).strict_tools(true)).unwrap();
    let history = vec![
        Message::system("回答要简短。"),
        Message::user("北京和上海天气怎么样？"),
        Message::new(
            Role::Assistant,
            vec![
                ToolCall::new("call_1", "get_weather", r#"{"city":"北京"}"#).into(),
                ToolCall::new("call_2", "get_weather", r#"{"city":"火星"}"#).into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok(
                "call_1",
                "get_weather",
                r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#,
            ),
            ToolResult::error("call_2", "get_weather", "未知城市：火星"),
        ]),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("我再查一下。"),
                ToolCall::new("call_3", "get_weather", r#"{"city":"上海"}"#).into(),
            ],
        ),
        Message::from_tool_results([ToolResult::ok("call_3", "get_weather", "{}")]),
    ];
    let req = ModelRequest::new(history)
        .instruction("你是一个全能助手。")
        .tools(vec![weather_def(), map_tool])
        .tool_choice(ToolChoice::Tool("get_weather".into()));
    model.generate(&req).await.unwrap();

    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "你是一个全能助手。"},
            {"role": "system", "content": "回答要简短。"},
            {"role": "user", "content": "北京和上海天气怎么样？"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"北京\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"火星\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\":\"北京\",\"temperature\":22.5,\"condition\":\"晴\",\"humidity\":45}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: 未知城市：火星"},
            {"role": "assistant", "content": "我再查一下。", "tool_calls": [
                {"id": "call_3", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"上海\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_3", "content": "{}"}
        ])
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    // The weather schema in the strict dialect; the map cannot be strict.
    let weather = &body["tools"][0]["function"];
    assert_eq!(weather["strict"], true);
    assert_eq!(
        weather["parameters"],
        tinyagent::tools::schema::strict_schema(&weather_def().input_schema)
    );
    assert_eq!(weather["parameters"]["required"], json!(["city", "unit"]));
    assert_eq!(weather["parameters"]["additionalProperties"], false);
    let tag = &body["tools"][1]["function"];
    assert_eq!(tag["strict"], false);
    assert_eq!(
        tag["parameters"]["properties"]["labels"]["additionalProperties"],
        json!({"type": "string"})
    );
}

#[tokio::test]
async fn no_key_means_no_authorization_header_and_extra_fields_are_merged() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_default.json")).await;
    let mut config = config_for(&server.uri())
        .header("X-Gateway", "tinyagent")
        .extra_body("seed", json!(42))
        .extra_body("top_p", json!(0.5));
    config.api_key = None;
    let model = OpenAiModel::new(config).unwrap();
    model.generate(&ask("你好")).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());
    assert_eq!(requests[0].headers.get("x-gateway").unwrap(), "tinyagent");
    let body = &validated_bodies(&server).await[0];
    assert_eq!(body["seed"], 42);
    assert_eq!(body["top_p"], 0.5);
}

// ------------------------------------------------------------------------------------------
// Streaming

#[tokio::test]
async fn stream_text_with_usage() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("accept", "text/event-stream"))
        .respond_with(sse_reply("stream_text.sse"))
        .mount(&server)
        .await;
    let model = model_for(&server);
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(streamed_text(&events), "Hello! How can I assist you today?");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
            .count()
            > 5,
        "text arrives in pieces"
    );
    let resp = done(&events);
    assert_eq!(resp.message.text(), "Hello! How can I assist you today?");
    assert_eq!(
        resp.usage,
        Usage::new(19, 10)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    assert_eq!(resp.finish_reason, FinishReason::Stop);

    let body = &validated_bodies(&server).await[0];
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn stream_a_tool_call_assembled_from_pieces() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("stream_tool_call.sse")).await;
    let model = model_for(&server);
    let req = ask("北京天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        streamed_calls(&events),
        [(
            "call_abc123".to_owned(),
            "get_weather".to_owned(),
            r#"{"city":"北京"}"#.to_owned()
        )]
    );
    let resp = done(&events);
    assert_eq!(
        resp.message.tool_calls().collect::<Vec<_>>(),
        [&ToolCall::new(
            "call_abc123",
            "get_weather",
            r#"{"city":"北京"}"#
        )]
    );
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        resp.usage,
        Usage::new(82, 17)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    validated_bodies(&server).await;
}

#[tokio::test]
async fn stream_parallel_tool_calls_with_interleaved_pieces() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("stream_parallel_tool_calls.sse")).await;
    let model = OpenAiModel::new(config_for(&server.uri()).parallel_tool_calls(false)).unwrap();
    let req =
        ask("北京天气怎么样？再算一下 7 乘以 8。").tools(vec![weather_def(), calculator_def()]);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    let expected = [
        ToolCall::new("call_weather_bj", "get_weather", r#"{"city": "北京"}"#),
        ToolCall::new(
            "call_calc_1",
            "calculator",
            r#"{"operation": "multiply", "a": 7, "b": 8}"#,
        ),
    ];
    let from_events: Vec<_> = streamed_calls(&events)
        .into_iter()
        .map(|(id, name, args)| ToolCall::new(id, name, args))
        .collect();
    assert_eq!(from_events, expected);
    let resp = done(&events);
    assert_eq!(
        resp.message.tool_calls().cloned().collect::<Vec<_>>(),
        expected
    );
    assert_eq!(
        resp.usage,
        Usage::new(156, 52)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    let body = &validated_bodies(&server).await[0];
    assert_eq!(body["parallel_tool_calls"], false);
}

#[tokio::test]
async fn stream_from_a_llama_cpp_style_server() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("stream_llamacpp_quirks.sse")).await;
    let model = model_for(&server);
    let req = ask("上海天气怎么样？").tools(vec![weather_def(), calculator_def()]);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(streamed_text(&events), "");
    let resp = done(&events);
    // The name loses its stray dot; the arguments are not doubled by `function_call`.
    assert_eq!(
        resp.message.tool_calls().collect::<Vec<_>>(),
        [&ToolCall::new(
            "call_llama0",
            "get_weather",
            r#"{"city":"上海"}"#
        )]
    );
    assert_eq!(
        streamed_calls(&events),
        [(
            "call_llama0".to_owned(),
            "get_weather".to_owned(),
            r#"{"city":"上海"}"#.to_owned()
        )]
    );
    assert_eq!(resp.usage, Usage::new(90, 12));
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    validated_bodies(&server).await;
}

#[tokio::test]
async fn stream_with_only_the_legacy_function_call() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("stream_legacy_function_call.sse")).await;
    let model = model_for(&server);
    let req = ask("广州天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    let resp = done(&events);
    assert_eq!(resp.message.text(), "让我查一下。");
    let call = resp.message.tool_calls().next().unwrap();
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, r#"{"city":"广州"}"#);
    assert!(!call.id.is_empty());
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    assert_eq!(resp.usage, Usage::default());
}

#[tokio::test]
async fn a_stream_cut_mid_tool_call_is_an_error_without_done() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("stream_cut_mid_tool_call.sse")).await;
    let model = model_for(&server);
    let req = ask("北京天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model, &req).await;
    let err = err.expect("a cut stream is an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    assert!(err.message().contains("get_weather"), "{err}");
    assert!(err.message().contains("ended before"), "{err}");
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Done(_))));
    assert!(matches!(events[0], ModelEvent::ToolCallStart { .. }));
    // Retried twice (the default), each time after telling the consumer to start over.
    let restarts = events
        .iter()
        .filter(|e| matches!(e, ModelEvent::Restart { .. }))
        .count();
    assert_eq!(restarts, 2, "{events:#?}");
    assert_eq!(validated_bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn an_error_inside_a_stream_is_an_error() {
    let server = MockServer::start().await;
    let body = format!(
        "{}data: {{\"error\":{{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"param\":null,\"code\":null}}}}\n\n",
        fixture("stream_text.sse")
            .split("\n\n")
            .take(3)
            .map(|e| format!("{e}\n\n"))
            .collect::<String>()
    );
    serve(
        &server,
        ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"),
    )
    .await;
    let model = OpenAiModel::new(config_for(&server.uri()).max_retries(0)).unwrap();
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    let err = err.unwrap();
    assert_eq!(err.kind(), ModelErrorKind::Unavailable);
    assert!(err.message().contains("while processing"), "{err}");
    assert_eq!(streamed_text(&events), "Hello!");
}

#[tokio::test]
async fn a_server_that_answers_a_stream_request_in_one_piece_still_works() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_tool_call.json")).await;
    let (events, err) = stream_all(&model_for(&server), &ask("Boston?")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        streamed_calls(&events),
        [(
            "call_abc123".to_owned(),
            "get_current_weather".to_owned(),
            "{\n\"location\": \"Boston, MA\"\n}".to_owned()
        )]
    );
    assert_eq!(done(&events).usage, Usage::new(82, 17).reasoning_tokens(0));
    validated_bodies(&server).await;

    // And events under a JSON content type are still read as events.
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_raw(fixture("stream_text.sse"), "application/json"),
    )
    .await;
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        done(&events).message.text(),
        "Hello! How can I assist you today?"
    );
}

// ------------------------------------------------------------------------------------------
// Faults

#[tokio::test]
async fn rate_limited_then_success() {
    let server = MockServer::start().await;
    serve_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_raw(fixture("error_429.json"), "application/json"),
    )
    .await;
    serve(&server, json_reply("chat_default.json")).await;
    let resp = model_for(&server).generate(&ask("Hello!")).await.unwrap();
    assert_eq!(resp.message.text(), "Hello! How can I assist you today?");
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0], bodies[1], "the same request is sent again");
}

#[tokio::test]
async fn retry_after_is_honoured_for_streams_too() {
    let server = MockServer::start().await;
    serve_once(
        &server,
        ResponseTemplate::new(429)
            .insert_header("retry-after-ms", "300")
            .set_body_raw(fixture("error_429.json"), "application/json"),
    )
    .await;
    serve(&server, sse_reply("stream_text.sse")).await;
    let started = Instant::now();
    let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
    assert!(err.is_none(), "{err:?}");
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited {:?} although the backoff is 1 ms",
        started.elapsed()
    );
    assert_eq!(
        done(&events).usage,
        Usage::new(19, 10)
            .cached_input_tokens(0)
            .reasoning_tokens(0)
    );
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn repeated_503_gives_up_after_the_retries() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(503).set_body_raw(fixture("error_503.json"), "application/json"),
    )
    .await;
    let model = OpenAiModel::new(config_for(&server.uri()).max_retries(3)).unwrap();
    let err = model.generate(&ask("Hello!")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Unavailable);
    assert!(err.is_retryable());
    assert!(err.message().contains("503"), "{err}");
    assert!(err.message().contains("overloaded"), "{err}");
    assert_eq!(validated_bodies(&server).await.len(), 4);

    // Streams retry the same way before the first event.
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(502).set_body_string("<html>Bad Gateway</html>"),
    )
    .await;
    let model = OpenAiModel::new(config_for(&server.uri()).max_retries(1)).unwrap();
    let (events, err) = stream_all(&model, &ask("Hello!")).await;
    assert!(events.is_empty());
    let err = err.unwrap();
    assert!(err.message().contains("Bad Gateway"), "{err}");
    assert_eq!(validated_bodies(&server).await.len(), 2);
}

#[tokio::test]
async fn api_errors_are_clear_and_not_retried() {
    let cases: [(u16, &str, bool, ModelErrorKind, &str); 5] = [
        (
            401,
            "error_401.json",
            true,
            ModelErrorKind::Authentication,
            "OPENAI_API_KEY",
        ),
        (
            401,
            "error_401.json",
            false,
            ModelErrorKind::Authentication,
            "none was sent",
        ),
        (
            404,
            "error_404_model.json",
            true,
            ModelErrorKind::InvalidRequest,
            "OPENAI_MODEL",
        ),
        (
            400,
            "error_400_context.json",
            true,
            ModelErrorKind::ContextLengthExceeded,
            "maximum context length",
        ),
        (
            429,
            "error_429_quota.json",
            true,
            ModelErrorKind::RateLimited,
            "quota",
        ),
    ];
    for (status, file, with_key, kind, says) in cases {
        let server = MockServer::start().await;
        serve(
            &server,
            ResponseTemplate::new(status).set_body_raw(fixture(file), "application/json"),
        )
        .await;
        let mut config = config_for(&server.uri());
        if !with_key {
            config.api_key = None;
        }
        let err = OpenAiModel::new(config)
            .unwrap()
            .generate(&ask("Hello!"))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), kind, "{file}: {err}");
        assert!(err.message().contains(says), "{file}: {err}");
        assert!(!err.is_retryable(), "{file}");
        assert!(!err.message().contains("sk-test"), "the key is never shown");
        assert_eq!(validated_bodies(&server).await.len(), 1, "{file}");
    }
}

#[tokio::test]
async fn garbage_bodies_are_errors_not_panics() {
    let junk: Vec<(&str, Vec<u8>, &str)> = vec![
        ("application/json", b"this is not json".to_vec(), "not JSON"),
        ("application/json", Vec::new(), "empty body"),
        ("application/json", vec![0xff, 0xfe, 0x00, 0x9c], "not JSON"),
        (
            "application/json",
            br#"{"object":"chat.completion"}"#.to_vec(),
            "no choices",
        ),
        (
            "application/json",
            br#"{"choices":[]}"#.to_vec(),
            "no choices",
        ),
        (
            "application/json",
            br#"{"choices":"many"}"#.to_vec(),
            "unexpected shape",
        ),
        (
            "application/json",
            br#"{"choices":[{"message":{"tool_calls":[{"function":{"name":7}}]}}]}"#.to_vec(),
            "unexpected shape",
        ),
        ("application/json", b"[1,2,3]".to_vec(), "unexpected shape"),
    ];
    for (ctype, body, says) in junk {
        let server = MockServer::start().await;
        serve(
            &server,
            ResponseTemplate::new(200).set_body_raw(body.clone(), ctype),
        )
        .await;
        let err = model_for(&server)
            .generate(&ask("Hello!"))
            .await
            .unwrap_err();
        assert_eq!(
            err.kind(),
            ModelErrorKind::InvalidResponse,
            "{body:?}: {err}"
        );
        assert!(err.message().contains(says), "{body:?}: {err}");
        validated_bodies(&server).await;
    }

    let streams: Vec<(&[u8], &str)> = vec![
        (b"data: {not json}\n\n", "not JSON"),
        (b"data: {\"choices\": 3}\n\n", "unexpected shape"),
        (b"", "ended before"),
        (b"\xff\xfe garbage \x00\n\n", "could not be read"),
        (b"event: message\ndata: [1]\n\n", "unexpected shape"),
        (b": ping\n\n: ping\n\n", "ended before"),
    ];
    for (body, says) in streams {
        let server = MockServer::start().await;
        serve(
            &server,
            ResponseTemplate::new(200).set_body_raw(body.to_vec(), "text/event-stream"),
        )
        .await;
        let (events, err) = stream_all(&model_for(&server), &ask("Hello!")).await;
        let err = err.unwrap_or_else(|| panic!("{body:?} gave {events:?}"));
        assert!(err.message().contains(says), "{body:?}: {err}");
        validated_bodies(&server).await;
    }
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = MockServer::start().await;
    serve(
        &server,
        json_reply("chat_default.json").set_delay(Duration::from_secs(30)),
    )
    .await;
    let model = OpenAiModel::new(
        config_for(&server.uri())
            .silence_timeout(Duration::from_millis(300))
            .max_retries(1),
    )
    .unwrap();
    // Bounded waits: the 300 ms read timeout must end each call long before the server's
    // 30 s delay would.
    let err = within_20s(model.generate(&ask("Hello!")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::TimedOut, "{err}");
    assert!(err.message().contains("first-byte timeout"), "{err}");
    let (_, err) = within_20s(stream_all(&model, &ask("Hello!"))).await;
    assert_eq!(err.unwrap().kind(), ModelErrorKind::TimedOut);
    // One try and one retry for each call.
    assert_eq!(validated_bodies(&server).await.len(), 4);
}

#[tokio::test]
async fn nothing_listening_is_unavailable() {
    // A port bound for the whole test but never listened on: connections are refused, and no
    // other process can start listening there meanwhile.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    let model =
        OpenAiModel::new(config_for(&format!("http://127.0.0.1:{port}")).max_retries(1)).unwrap();
    let err = model.generate(&ask("Hello!")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Unavailable, "{err}");
    assert!(err.message().contains("could not connect"), "{err}");
    assert!(err.message().contains(&port.to_string()), "{err}");
}

/// A raw server: answers one request with `head` and `body`, then either closes the
/// connection or keeps it open without sending more.
async fn raw_server(response: Vec<u8>, stall: bool) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let Ok((mut socket, _)) = listener.accept().await else {
            return;
        };
        // Read the request head and body (until the JSON body's end is likely in).
        let mut buf = vec![0u8; 64 * 1024];
        let mut seen = Vec::new();
        loop {
            let n = socket.read(&mut buf).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
            if let Some(head_end) = seen.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&seen[..head_end]).to_lowercase();
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if seen.len() >= head_end + 4 + len {
                    break;
                }
            }
        }
        let _ = socket.write_all(&response).await;
        let _ = socket.flush().await;
        if stall {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    });
    format!("http://{addr}")
}

#[tokio::test]
async fn a_connection_dropped_mid_stream_is_an_error() {
    let sse = fixture("stream_tool_call.sse");
    let partial: String = sse
        .split("\n\n")
        .take(3)
        .map(|e| format!("{e}\n\n"))
        .collect();
    let mut response =
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec();
    response.extend_from_slice(format!("{:x}\r\n{partial}\r\n", partial.len()).as_bytes());
    // The connection closes without the last chunk: a broken transfer.
    let base = raw_server(response.clone(), false).await;
    let model = OpenAiModel::new(config_for(&base).max_retries(0)).unwrap();
    let req = ask("北京天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model, &req).await;
    let err = err.expect("an error");
    assert!(err.message().contains("get_weather"), "{err}");
    assert!(streamed_calls(&events)[0].2.starts_with("{\""));

    // The server stops sending but keeps the connection: the read timeout ends it.
    let base = raw_server(response, true).await;
    let model = OpenAiModel::new(
        config_for(&base)
            .silence_timeout(Duration::from_millis(300))
            .max_retries(0),
    )
    .unwrap();
    let (events, err) = within_20s(stream_all(&model, &req)).await;
    let err = err.expect("an error");
    assert!(err.message().contains("idle timeout"), "{err}");
    assert!(!events.iter().any(|e| matches!(e, ModelEvent::Done(_))));
}

/// `fut`'s output, failing the test if it takes 20 s: for calls that a short timeout of their
/// own must end (a bound, not a measurement).
async fn within_20s<T>(fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("the call's own timeout did not end it within 20 s")
}

#[tokio::test]
async fn request_bodies_for_every_option_match_the_spec() {
    let server = MockServer::start().await;
    serve(&server, json_reply("chat_default.json")).await;
    let tools = vec![weather_def(), calculator_def()];
    for strict in [false, true] {
        for choice in [
            None,
            Some(ToolChoice::Auto),
            Some(ToolChoice::None),
            Some(ToolChoice::Required),
            Some(ToolChoice::Tool("calculator".into())),
        ] {
            let model = OpenAiModel::new(
                config_for(&server.uri())
                    .strict_tools(strict)
                    .parallel_tool_calls(strict)
                    .stream_usage(strict),
            )
            .unwrap();
            let mut req = ask("你好").tools(tools.clone()).temperature(0.0);
            if strict {
                // Every sampling option, as the API names them.
                req = req.sampling(
                    Sampling::new()
                        .temperature(0.0)
                        .top_p(0.9)
                        .stop(["END", "\n\n"])
                        .seed(42)
                        .presence_penalty(0.5)
                        .frequency_penalty(-0.25),
                );
            }
            req.tool_choice = choice.clone();
            model.generate(&req).await.unwrap();
            // Tool choice without tools is left out.
            let mut bare = ask("你好").max_tokens(1);
            bare.tool_choice = choice;
            model.generate(&bare).await.unwrap();
        }
    }
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 20);
    let sampled = &bodies[10];
    assert_eq!(sampled["top_p"], 0.9);
    assert_eq!(sampled["stop"], json!(["END", "\n\n"]));
    assert_eq!(sampled["seed"], 42);
    assert_eq!(sampled["presence_penalty"], 0.5);
    assert_eq!(sampled["frequency_penalty"], -0.25);
    assert!(bodies[0].get("seed").is_none() && bodies[0].get("stop").is_none());
    assert!(
        bodies
            .iter()
            .skip(1)
            .step_by(2)
            .all(|b| b.get("tool_choice").is_none()
                && b.get("tools").is_none()
                && b.get("parallel_tool_calls").is_none())
    );
}

#[test]
fn the_validator_rejects_a_bad_body() {
    // The check is real: a body OpenAI would reject fails it.
    let result = std::panic::catch_unwind(|| {
        validate_bodies(&[json!({"model": "m", "messages": [{"role": "robot", "content": "x"}]})])
    });
    assert!(result.is_err());
    let ok: Value = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
    validate_bodies(&[ok]);
}
