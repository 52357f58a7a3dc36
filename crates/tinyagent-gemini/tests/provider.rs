//! The provider against a loopback server replaying answers in the Gemini API's wire format
//! (hand-built bodies and streams that validate against the API's discovery document):
//! text, parallel function calls, thoughts and their signatures, the history, tool schemas in
//! Gemini's dialect, error bodies, and the faults matrix. Every request body is validated
//! against `GenerateContentRequest`.

mod support;

use std::time::{Duration, Instant};

use serde_json::json;
use support::*;
use tinyagent::model::Sampling;
use tinyagent::{
    Message, Model, ModelRequest, Part, Role, ToolCall, ToolResult,
    model::{FinishReason, ModelErrorKind, ModelEvent, ToolChoice, ToolDefinition},
};
use tinyagent_gemini::GeminiModel;
use tinyagent_gemini::HttpConfig;
use wiremock::{MockServer, ResponseTemplate};

fn weather_def() -> ToolDefinition {
    tinyagent_demo::weather_tool().definition()
}

fn calculator_def() -> ToolDefinition {
    tinyagent_demo::calculator_tool().definition()
}

#[test]
fn the_fixtures_are_valid_for_the_api() {
    validate_fixtures();
}

#[tokio::test]
async fn a_text_answer_streamed_and_not() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_text.sse"), Some(1)).await;
    mount(&server, json_reply("generate_text.json"), None).await;
    let model = model_for(&server);
    let req = ask("你好").temperature(0.2);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        events[..3],
        [
            ModelEvent::TextDelta("你好！".into()),
            ModelEvent::TextDelta("我是 Gemini，".into()),
            ModelEvent::TextDelta("有什么可以帮你？".into()),
        ]
    );
    let Some(ModelEvent::Done(streamed)) = events.last() else {
        panic!("{events:?}")
    };
    let generated = model.generate(&req).await.unwrap();
    for resp in [streamed, &generated] {
        assert_eq!(resp.message.text(), "你好！我是 Gemini，有什么可以帮你？");
        assert_eq!(resp.finish_reason, FinishReason::Stop);
        assert_eq!(resp.usage.input_tokens, Some(8));
        assert_eq!(resp.usage.output_tokens, Some(12));
    }
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0],
        json!({
            "contents": [{"role": "user", "parts": [{"text": "你好"}]}],
            "systemInstruction": {"parts": [{"text": "你是一个全能助手。"}]},
            "generationConfig": {"temperature": 0.2, "maxOutputTokens": 4096},
        })
    );
    assert_eq!(bodies[0], bodies[1], "one body for both endpoints");
}

#[tokio::test]
async fn parallel_function_calls_and_their_signature_come_back_and_go_out_again() {
    let server = MockServer::start().await;
    mount(&server, json_reply("generate_parallel_calls.json"), Some(1)).await;
    mount(&server, json_reply("generate_text.json"), None).await;
    let model = model_for(&server);
    let req = ask("北京天气怎么样？再算一下 7 乘以 8。")
        .tools(vec![weather_def(), calculator_def()])
        .tool_choice(ToolChoice::Required);
    let resp = model.generate(&req).await.unwrap();
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    let calls: Vec<_> = resp.message.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].name.as_str(), calls[0].arguments.as_str()),
        ("get_weather", r#"{"city":"北京"}"#)
    );
    assert_eq!(
        (calls[1].name.as_str(), calls[1].arguments.as_str()),
        ("calculator", r#"{"operation":"multiply","a":7,"b":8}"#)
    );
    assert_ne!(
        calls[0].id, calls[1].id,
        "ids made for calls that have none"
    );
    assert_eq!(
        resp.message.parts[0],
        Part::reasoning("", Some("CiIBVKhc7oDB".into()))
    );
    assert_eq!(resp.usage.output_tokens, Some(40 + 85));
    assert_eq!(resp.usage.reasoning_tokens, Some(85));
    assert_eq!(resp.usage.cached_input_tokens, Some(64));
    // The next step: the calls with the signature where it was, and both results.
    let mut next = req.clone();
    next.messages.push(resp.message.clone());
    next.messages.push(Message::from_tool_results([
        ToolResult::ok(
            &calls[0].id,
            "get_weather",
            r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#,
        ),
        ToolResult::error(&calls[1].id, "calculator", "除数不能为零"),
    ]));
    model.generate(&next).await.unwrap();
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0]["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    let decl = &bodies[0]["tools"][0]["functionDeclarations"];
    assert_eq!(decl[0]["name"], "get_weather");
    assert_eq!(decl[0]["parameters"]["type"], "OBJECT");
    assert_eq!(
        decl[0]["parameters"]["properties"]["city"]["type"],
        "STRING"
    );
    assert_eq!(
        decl[1]["parameters"]["properties"]["operation"]["enum"],
        json!(["add", "subtract", "multiply", "divide", "sqrt", "power"])
    );
    assert_eq!(
        bodies[1]["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"id": calls[0].id, "name": "get_weather", "args": {"city": "北京"}},
             "thoughtSignature": "CiIBVKhc7oDB"},
            {"functionCall": {"id": calls[1].id, "name": "calculator",
             "args": {"operation": "multiply", "a": 7, "b": 8}}},
        ]})
    );
    assert_eq!(
        bodies[1]["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"id": calls[0].id, "name": "get_weather",
             "response": {"city": "北京", "temperature": 22.5, "condition": "晴", "humidity": 45}}},
            {"functionResponse": {"id": calls[1].id, "name": "calculator",
             "response": {"error": "除数不能为零"}}},
        ]})
    );
}

#[tokio::test]
async fn streamed_thoughts_are_kept_apart_from_the_text() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_thoughts_call.sse"), None).await;
    let req = ask("北京天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model_for(&server), &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&events), "");
    let Some(ModelEvent::Done(resp)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(resp.message.parts.len(), 3, "{:?}", resp.message.parts);
    assert_eq!(
        resp.message.parts[0],
        Part::reasoning("用户问天气，调用 get_weather。", None)
    );
    assert_eq!(
        resp.message.parts[1],
        Part::reasoning("", Some("CiIBVKhc7oDB".into()))
    );
    let Part::ToolCall(call) = &resp.message.parts[2] else {
        panic!("{:?}", resp.message.parts)
    };
    assert_eq!(call.arguments, r#"{"city":"北京"}"#);
    validated_bodies(&server).await;
}

#[tokio::test]
async fn the_history_goes_out_as_user_and_model_turns() {
    let server = MockServer::start().await;
    mount(&server, json_reply("generate_text.json"), None).await;
    let req = ModelRequest::new(vec![
        Message::user("北京天气怎么样？"),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("我来查询。"),
                ToolCall::new("call_1", "get_weather", r#"{"city":"北"#).into(),
            ],
        ),
        Message::from_tool_results([ToolResult::ok("call_1", "get_weather", "晴")]),
        Message::user("谢谢"),
        Message::system("回答要简短。"),
    ])
    .tools(vec![weather_def()])
    .tool_choice(ToolChoice::Tool("get_weather".into()))
    .max_tokens(256)
    .sampling(
        Sampling::new()
            .top_p(0.9)
            .stop(["END"])
            .seed(42)
            .presence_penalty(0.5)
            .frequency_penalty(0.25),
    );
    model_for(&server).generate(&req).await.unwrap();
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0]["systemInstruction"],
        json!({"parts": [{"text": "回答要简短。"}]})
    );
    assert_eq!(
        bodies[0]["generationConfig"],
        json!({"maxOutputTokens": 256, "topP": 0.9, "stopSequences": ["END"], "seed": 42,
               "presencePenalty": 0.5, "frequencyPenalty": 0.25})
    );
    assert_eq!(
        bodies[0]["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
    assert_eq!(
        bodies[0]["contents"],
        json!([
            {"role": "user", "parts": [{"text": "北京天气怎么样？"}]},
            {"role": "model", "parts": [
                {"text": "我来查询。"},
                {"functionCall": {"id": "call_1", "name": "get_weather",
                 "args": {"invalid_arguments": r#"{"city":"北"#}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "call_1", "name": "get_weather", "response": {"result": "晴"}}},
                {"text": "谢谢"},
            ]},
        ])
    );
}

#[tokio::test]
async fn error_bodies_become_clear_errors() {
    let server = MockServer::start().await;
    mount(&server, error_reply(400, "error_400_key.json"), None).await;
    let err = model_for(&server).generate(&ask("你好")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Authentication);
    assert_eq!(
        err.message(),
        "HTTP 400 Bad Request: the API key was refused (is GEMINI_API_KEY wrong?): API key not \
         valid. Please pass a valid API key. (INVALID_ARGUMENT, API_KEY_INVALID)"
    );
    assert_eq!(validated_bodies(&server).await.len(), 1, "not retried");
    let server = MockServer::start().await;
    mount(&server, error_reply(404, "error_404.json"), None).await;
    let err = model_for(&server).generate(&ask("你好")).await.unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::InvalidRequest);
    assert!(
        err.message().starts_with(
            "HTTP 404 Not Found: not found; check the model name \"gemini-2.5-flash\" \
             (GEMINI_MODEL) and the base URL (GEMINI_BASE_URL, such as \
             https://generativelanguage.googleapis.com/v1beta): models/gemini-9 is not found"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_429_is_retried_after_the_wait_the_server_asks_for_and_a_503_too() {
    let server = MockServer::start().await;
    mount(
        &server,
        error_reply(429, "error_429.json").insert_header("retry-after", "1"),
        Some(1),
    )
    .await;
    mount(&server, error_reply(503, "error_503.json"), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let started = Instant::now();
    let (events, err) = stream_all(&model_for(&server), &ask("你好")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(final_text(&events), "你好！我是 Gemini，有什么可以帮你？");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "retry-after honoured"
    );
    assert_eq!(validated_bodies(&server).await.len(), 3);
    // When it does not pass, the error says what came back.
    let server = MockServer::start().await;
    mount(&server, error_reply(429, "error_429.json"), None).await;
    let err = GeminiModel::new(config_for(&server.uri()).max_retries(0))
        .unwrap()
        .generate(&ask("你好"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::RateLimited);
    assert_eq!(
        err.message(),
        "HTTP 429 Too Many Requests: rate limited or out of quota (RESOURCE_EXHAUSTED): You \
         exceeded your current quota, please check your plan and billing details. \
         (RESOURCE_EXHAUSTED)"
    );
}

#[tokio::test]
async fn cut_streams_and_error_events_are_retried_and_announced() {
    let server = MockServer::start().await;
    mount(
        &server,
        // The first event only (the API ends events with CRLF pairs), then the end.
        sse(format!(
            "{}\r\n\r\n",
            fixture("stream_text.sse").split("\r\n\r\n").next().unwrap()
        )),
        Some(1),
    )
    .await;
    mount(&server, sse_reply("stream_error_unavailable.sse"), Some(1)).await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let model = GeminiModel::new(config_for(&server.uri()).max_retries(3)).unwrap();
    let (events, err) = stream_all(&model, &ask("你好")).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        restarts(&events),
        [
            "the stream ended before the answer was complete (no finishReason), after 1 \
             events and 9 bytes of text; retrying (attempt 2 of 4, the reply starts again)",
            "the API reported an error: The model is overloaded. Please try again later. \
             (UNAVAILABLE); retrying (attempt 3 of 4, the reply starts again)",
        ]
    );
    assert_eq!(final_text(&events), "你好！我是 Gemini，有什么可以帮你？");
    assert_eq!(validated_bodies(&server).await.len(), 3);
}

#[tokio::test]
async fn garbage_a_silent_server_and_an_html_page_are_named() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse("data: {\"candidates\": [\n\n".to_owned()),
        None,
    )
    .await;
    let model = GeminiModel::new(config_for(&server.uri()).max_retries(0)).unwrap();
    let (_, err) = stream_all(&model, &ask("你好")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::InvalidResponse);
    assert_eq!(
        err.message(),
        "a stream event is not JSON (EOF while parsing a list at line 1 column 16): \
         {\"candidates\": ["
    );

    // Another API's events (Anthropic's, from a wrong base URL) are not taken for empty ones.
    let server = MockServer::start().await;
    mount(
        &server,
        sse("event: message_start\ndata: {\"type\":\"message_start\"}\n\n".to_owned()),
        None,
    )
    .await;
    let model = GeminiModel::new(config_for(&server.uri()).max_retries(0)).unwrap();
    let (_, err) = stream_all(&model, &ask("你好")).await;
    assert_eq!(
        err.expect("an error").message(),
        "a stream event is not a GenerateContentResponse (no candidates, usage or feedback): \
         {\"type\":\"message_start\"}; check the base URL"
    );

    let server = MockServer::start().await;
    mount(
        &server,
        sse_reply("stream_text.sse").set_delay(Duration::from_secs(30)),
        None,
    )
    .await;
    let model = GeminiModel::new(
        config_for(&server.uri())
            .silence_timeout(Duration::from_millis(200))
            .max_retries(1),
    )
    .unwrap();
    let (_, err) = stream_all(&model, &ask("你好")).await;
    let err = err.expect("an error");
    assert_eq!(err.kind(), ModelErrorKind::TimedOut);
    assert_eq!(
        err.message(),
        format!(
            "no answer from {}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse \
             within 0.2 s (the first-byte timeout; attempt 2 of 2)",
            server.uri()
        )
    );

    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw("<html>hi</html>", "text/html"),
        None,
    )
    .await;
    let (_, err) = stream_all(&model_for(&server), &ask("你好")).await;
    assert_eq!(
        err.expect("an error").message(),
        format!(
            "HTTP 200 OK from {}/v1beta with text/html instead of an event stream: \
             <html>hi</html>; check the base URL: it must be the Gemini API up to its version \
             (such as https://generativelanguage.googleapis.com/v1beta; requests go to its \
             /models/MODEL:generateContent)",
            server.uri()
        )
    );
}

#[tokio::test]
async fn a_call_cut_by_max_tokens_is_a_length_finish() {
    let server = MockServer::start().await;
    mount(&server, json_reply("generate_max_tokens_call.json"), None).await;
    let resp = model_for(&server)
        .generate(&ask("北京天气怎么样？").tools(vec![weather_def()]))
        .await
        .unwrap();
    assert_eq!(resp.finish_reason, FinishReason::Length);
    validated_bodies(&server).await;
}

#[test]
fn an_answer_shape_is_asked_in_the_system_prompt() {
    // The API takes no response format beside tools: the schema goes in the system prompt.
    let model = tinyagent_gemini::GeminiModel::new(config_for("http://127.0.0.1:9")).unwrap();
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let req = tinyagent::ModelRequest::new(vec![tinyagent::Message::user("Where?")])
        .instruction("You help.")
        .response_format(tinyagent::model::ResponseFormat::json_schema(
            "place",
            schema.clone(),
        ));
    let body = model.request_body(&req, false);
    let system = body["systemInstruction"]["parts"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.starts_with("You help.\n\n"), "{system}");
    assert!(system.contains("named place"), "{system}");
    assert!(system.ends_with(&schema.to_string()), "{system}");
}
