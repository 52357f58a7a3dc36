//! The Responses provider against a loopback server replaying Responses API bodies and
//! streams in the wire format (see `fixtures/README.md`); every request body it sends is
//! checked against `CreateResponse` in OpenAI's OpenAPI spec.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use tinyagent::model::{
    FinishReason, ModelErrorKind, ModelEvent, ResponseFormat, Sampling, SamplingOption, ToolChoice,
    ToolDefinition,
};
use tinyagent::{
    ContentPart, Message, Model, ModelRequest, ModelResponse, Part, Role, ToolCall, ToolResult,
};
use tinyagent_http::testing::stream_all;
use tinyagent_openai::{HttpConfig, ResponsesConfig, ResponsesModel};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn weather_def() -> ToolDefinition {
    ToolDefinition::new(
        "get_current_weather",
        "Get the current weather in a given location",
        json!({"type": "object", "properties": {
            "location": {"type": "string"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
        }, "required": ["location", "unit"]}),
    )
}

fn model_for(
    server: &MockServer,
    config: impl FnOnce(ResponsesConfig) -> ResponsesConfig,
) -> ResponsesModel {
    let base = ResponsesConfig::new("gpt-5.4")
        .base_url(format!("{}/v1", server.uri()))
        .api_key("sk-test")
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .connect_timeout(Duration::from_secs(2))
        .silence_timeout(Duration::from_secs(5));
    ResponsesModel::new(config(base)).expect("valid config")
}

/// The events of a stream that ended without an error.
async fn ok_events(model: &ResponsesModel, req: &ModelRequest) -> Vec<ModelEvent> {
    let (events, error) = stream_all(model, req).await;
    assert!(error.is_none(), "{error:?}");
    events
}

async fn serve(server: &MockServer, reply: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(reply)
        .mount(server)
        .await;
}

async fn serve_once(server: &MockServer, reply: ResponseTemplate) {
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(reply)
        .up_to_n_times(1)
        .mount(server)
        .await;
}

/// The bodies the server received, each checked against `CreateResponse`.
async fn checked_bodies(server: &MockServer) -> Vec<Value> {
    let bodies = bodies(server).await;
    assert!(!bodies.is_empty(), "the server received no request");
    validate_bodies_as("CreateResponse", &bodies);
    bodies
}

fn weather_question() -> ModelRequest {
    ModelRequest::new(vec![Message::user("What's the weather in Boston?")])
        .instruction("You are a helpful assistant.")
        .tools(vec![weather_def()])
}

fn done(events: &[ModelEvent]) -> &ModelResponse {
    match events.last() {
        Some(ModelEvent::Done(r)) => r,
        other => panic!("the stream did not end with Done: {other:?}"),
    }
}

fn calls(response: &ModelResponse) -> Vec<(&str, &str, &str)> {
    response
        .message
        .tool_calls()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect()
}

#[tokio::test]
async fn generate_text_from_the_specs_example() {
    let server = MockServer::start().await;
    serve(&server, json_reply("responses_text.json")).await;
    let model = model_for(&server, |c| c);
    let req = ModelRequest::new(vec![Message::user(
        "Tell me a three sentence bedtime story about a unicorn.",
    )]);
    let response = model.generate(&req).await.unwrap();
    assert!(
        response
            .message
            .text()
            .starts_with("In a peaceful grove beneath a silver moon")
    );
    assert_eq!(response.finish_reason, FinishReason::Stop);
    assert_eq!(response.usage.input_tokens, Some(36));
    assert_eq!(response.usage.output_tokens, Some(87));
    let body = &checked_bodies(&server).await[0];
    assert_eq!(body["model"], "gpt-5.4");
    assert_eq!(
        body["store"], false,
        "stateless: the history travels with each request"
    );
    assert_eq!(
        body["input"][0],
        json!({"role": "user", "content":
        "Tell me a three sentence bedtime story about a unicorn."})
    );
    assert!(body.get("stream").is_none());
    assert!(body.get("instructions").is_none());
}

#[tokio::test]
async fn generate_a_tool_call_and_parallel_calls() {
    let server = MockServer::start().await;
    serve_once(&server, json_reply("responses_tool_call.json")).await;
    serve_once(&server, json_reply("responses_parallel_tool_calls.json")).await;
    let model = model_for(&server, |c| c.strict_tools(true));
    let one = model.generate(&weather_question()).await.unwrap();
    assert_eq!(one.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        calls(&one),
        [(
            "call_unLAR8MvFNptuiZK6K6HCy5k",
            "get_current_weather",
            r#"{"location":"Boston, MA","unit":"celsius"}"#
        )],
        "the call is answered by its call_id, not its item id"
    );
    let two = model.generate(&weather_question()).await.unwrap();
    assert_eq!(
        calls(&two).iter().map(|c| c.2).collect::<Vec<_>>(),
        [
            r#"{"location":"Paris, France","unit":"celsius"}"#,
            r#"{"location":"Tokyo, Japan","unit":"celsius"}"#
        ]
    );
    let body = &checked_bodies(&server).await[0];
    assert_eq!(body["instructions"], "You are a helpful assistant.");
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(
        tool["name"], "get_current_weather",
        "flat, not under `function`"
    );
    assert_eq!(tool["strict"], true);
    assert_eq!(tool["parameters"]["additionalProperties"], false);
}

#[tokio::test]
async fn reasoning_items_come_back_encrypted_and_go_back_as_they_came() {
    let server = MockServer::start().await;
    serve(&server, json_reply("responses_reasoning_tool_call.json")).await;
    let model = model_for(&server, |c| c.reasoning("low"));
    let first = model.generate(&weather_question()).await.unwrap();
    assert_eq!(first.usage.cached_input_tokens, Some(1152));
    assert_eq!(first.usage.reasoning_tokens, Some(128));
    let Part::Reasoning {
        text, signature, ..
    } = &first.message.parts[0]
    else {
        panic!("the reasoning item first: {:?}", first.message.parts);
    };
    assert!(!text.is_empty(), "the summary is the reasoning's text");
    assert!(signature.as_deref().unwrap().contains("gAAAAAB"));
    let call = first.message.tool_calls().next().unwrap().clone();

    // The next step sends the reasoning item back, then the call, then its result.
    let mut req = weather_question();
    req.messages.push(first.message.clone());
    req.messages
        .push(Message::from_tool_results([ToolResult::ok(
            &call.id,
            &call.name,
            "22 degrees, sunny",
        )]));
    model.generate(&req).await.unwrap();
    let bodies = checked_bodies(&server).await;
    assert_eq!(bodies[0]["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(bodies[0]["reasoning"], json!({"effort": "low"}));
    let input = bodies[1]["input"].as_array().unwrap();
    let types: Vec<&str> = input
        .iter()
        .map(|i| i["type"].as_str().or(i["role"].as_str()).unwrap())
        .collect();
    assert_eq!(
        types,
        ["user", "reasoning", "function_call", "function_call_output"]
    );
    assert_eq!(
        input[1]["id"],
        "rs_68b2c3d4e5f68190a1b2c3d4e5f6a7b80c1d2e3f4a5b6c7d"
    );
    assert!(
        input[1]["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("gAAAAAB")
    );
    assert_eq!(input[2]["call_id"], "call_Rk3mZ8vQ1sT5wY9bN2xC6dF0");
    assert_eq!(
        input[3],
        json!({"type": "function_call_output",
        "call_id": "call_Rk3mZ8vQ1sT5wY9bN2xC6dF0", "output": "22 degrees, sunny"})
    );
}

#[tokio::test]
async fn stream_text_with_usage() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("responses_stream_text.sse")).await;
    let model = model_for(&server, |c| c);
    let events = ok_events(&model, &ModelRequest::new(vec![Message::user("Hello!")])).await;
    let deltas: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "Hi there! How can I assist you today?");
    assert!(
        events
            .iter()
            .filter(|e| matches!(e, ModelEvent::TextDelta(_)))
            .count()
            > 3
    );
    let response = done(&events);
    assert_eq!(response.message.text(), deltas);
    assert_eq!(response.usage.output_tokens, Some(11));
    assert_eq!(response.finish_reason, FinishReason::Stop);
    let body = &checked_bodies(&server).await[0];
    assert_eq!(body["stream"], true);
}

#[tokio::test]
async fn stream_tool_calls_assembled_from_pieces() {
    for (fixture, expected) in [
        (
            "responses_stream_tool_call.sse",
            vec![("call_Wq4eR7tY0uI3oP6aS9dF2gHj", "Boston, MA")],
        ),
        (
            "responses_stream_parallel_tool_calls.sse",
            vec![
                ("call_Pa7sD0fG3hJ6kL9zX2cV5bNm", "Paris, France"),
                ("call_To1kY4uI7oP0aS3dF6gH9jKl", "Tokyo, Japan"),
            ],
        ),
    ] {
        let server = MockServer::start().await;
        serve(&server, sse_reply(fixture)).await;
        let model = model_for(&server, |c| c.parallel_tool_calls(true));
        let events = ok_events(&model, &weather_question()).await;
        // Each call starts once, its pieces follow under the same id, and they add up to
        // the call's arguments.
        for (id, city) in &expected {
            let starts = events.iter().filter(|e| matches!(e,
                ModelEvent::ToolCallStart { id: i, name } if i.as_str() == *id && name == "get_current_weather")).count();
            assert_eq!(starts, 1, "{fixture}: {id}");
            let pieces: String = events
                .iter()
                .filter_map(|e| match e {
                    ModelEvent::ToolCallDelta {
                        id: i,
                        arguments_fragment,
                    } if i.as_str() == *id => Some(arguments_fragment.as_str()),
                    _ => None,
                })
                .collect();
            let args: Value = serde_json::from_str(&pieces).unwrap();
            assert_eq!(args["location"], *city, "{fixture}");
        }
        let response = done(&events);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        let ids: Vec<&str> = calls(response).iter().map(|c| c.0).collect();
        assert_eq!(
            ids,
            expected.iter().map(|e| e.0).collect::<Vec<_>>(),
            "{fixture}"
        );
        let body = &checked_bodies(&server).await[0];
        assert_eq!(body["parallel_tool_calls"], true);
    }
}

#[tokio::test]
async fn stream_reasoning_then_a_call() {
    let server = MockServer::start().await;
    serve(
        &server,
        sse_reply("responses_stream_reasoning_tool_call.sse"),
    )
    .await;
    let model = model_for(&server, |c| c.reasoning("medium"));
    let events = ok_events(&model, &weather_question()).await;
    let response = done(&events);
    assert!(
        matches!(&response.message.parts[0],
        Part::Reasoning { signature: Some(s), .. } if s.contains("gAAAAAB")),
        "the encrypted content of output_item.done is kept: {:?}",
        response.message.parts[0]
    );
    assert_eq!(calls(response)[0].0, "call_Zx8cV1bN4mQ7wE0rT3yU6iOp");
    assert_eq!(response.usage.reasoning_tokens, Some(128));
    checked_bodies(&server).await;
}

#[tokio::test]
async fn a_reply_cut_by_the_token_limit_finishes_with_length() {
    let server = MockServer::start().await;
    serve(&server, sse_reply("responses_stream_incomplete.sse")).await;
    let model = model_for(&server, |c| c);
    let mut req = ModelRequest::new(vec![Message::user("Tell me a long story.")]);
    req.max_tokens = Some(16);
    let events = ok_events(&model, &req).await;
    let response = done(&events);
    assert_eq!(response.finish_reason, FinishReason::Length);
    assert!(response.message.text().starts_with("Once upon a time"));
    let body = &checked_bodies(&server).await[0];
    assert_eq!(body["max_output_tokens"], 16);
}

#[tokio::test]
async fn failures_in_the_stream_are_errors_and_the_passing_ones_are_retried() {
    // A failed response (server_error) may pass: retried, then the text answer.
    let server = MockServer::start().await;
    serve_once(&server, sse_reply("responses_stream_failed.sse")).await;
    serve_once(&server, sse_reply("responses_stream_text.sse")).await;
    let model = model_for(&server, |c| c);
    let events = ok_events(&model, &ModelRequest::new(vec![Message::user("Hi")])).await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e, ModelEvent::Restart { .. })),
        "the partial text before the failure is void"
    );
    assert_eq!(
        done(&events).message.text(),
        "Hi there! How can I assist you today?"
    );
    assert_eq!(checked_bodies(&server).await.len(), 2);

    // A rate-limit `error` event, flat as in the spec or nested as servers send it.
    for fixture in [
        "responses_stream_error_event.sse",
        "responses_stream_error_event_nested.sse",
    ] {
        let server = MockServer::start().await;
        serve(&server, sse_reply(fixture)).await;
        let model = model_for(&server, |c| c.max_retries(0));
        let err = stream_all(&model, &ModelRequest::new(vec![Message::user("Hi")]))
            .await
            .1
            .expect("an error");
        assert_eq!(err.kind(), ModelErrorKind::RateLimited, "{fixture}: {err}");
        assert!(
            err.message().contains("Rate limit reached"),
            "{fixture}: {err}"
        );
    }
}

#[tokio::test]
async fn a_stream_cut_before_the_end_is_retried_then_an_error() {
    let server = MockServer::start().await;
    let cut: String = fixture("responses_stream_tool_call.sse")
        .lines()
        .take(12)
        .map(|l| format!("{l}\n"))
        .collect();
    serve(
        &server,
        ResponseTemplate::new(200).set_body_raw(cut, "text/event-stream"),
    )
    .await;
    let model = model_for(&server, |c| c.max_retries(1));
    let err = stream_all(&model, &weather_question())
        .await
        .1
        .expect("an error");
    assert!(err.message().contains("no response.completed"), "{err}");
    assert!(err.message().contains("get_current_weather"), "{err}");
    assert_eq!(checked_bodies(&server).await.len(), 2, "retried once");
}

#[tokio::test]
async fn api_errors_are_clear() {
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(401).set_body_raw(fixture("error_401.json"), "application/json"),
    )
    .await;
    let model = model_for(&server, |c| c);
    let err = model
        .generate(&ModelRequest::new(vec![Message::user("Hi")]))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ModelErrorKind::Authentication);
    assert!(err.message().contains("OPENAI_API_KEY"), "{err}");
    let server = MockServer::start().await;
    serve(
        &server,
        ResponseTemplate::new(200).set_body_raw("<html>login</html>", "text/html"),
    )
    .await;
    let err = model_for(&server, |c| c)
        .generate(&ModelRequest::new(vec![Message::user("Hi")]))
        .await
        .unwrap_err();
    assert!(err.message().contains("Responses endpoint"), "{err}");
}

#[tokio::test]
async fn every_option_and_history_shape_matches_the_spec() {
    let server = MockServer::start().await;
    serve(&server, json_reply("responses_text.json")).await;
    let model = model_for(&server, |c| c.strict_tools(true).max_tokens(2000));
    assert!(model.supports(SamplingOption::Temperature) && model.supports(SamplingOption::TopP));
    assert!(
        !model.supports(SamplingOption::Stop) && !model.supports(SamplingOption::Seed),
        "the Responses API has no stop, seed or penalties"
    );
    let mut image_result = ToolResult::ok("call_2", "get_current_weather", "sunny");
    image_result.parts = vec![ContentPart::image("aGVsbG8=", "image/png")];
    let history = vec![
        Message::system("Answer in English."),
        Message::user("Weather in Boston and a picture?"),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("Let me check."),
                Part::ToolCall(ToolCall::new(
                    "call_1",
                    "get_current_weather",
                    r#"{"location":"Boston"#,
                )),
            ],
        ),
        Message::from_tool_results([ToolResult::error(
            "call_1",
            "get_current_weather",
            "bad arguments",
        )]),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "call_2",
                "get_current_weather",
                r#"{"location":"Boston","unit":"celsius"}"#,
            ))],
        ),
        Message::from_tool_results([image_result]),
        Message::new(Role::Assistant, vec![Part::text("It is sunny.")]),
        Message::user("Thanks! Again as JSON?"),
    ];
    let mut sampling = Sampling::default();
    sampling.temperature = Some(0.2);
    sampling.top_p = Some(0.9);
    let requests = [
        ModelRequest::new(history.clone()).instruction("Be brief.").tools(vec![weather_def()])
            .tool_choice(ToolChoice::Tool("get_current_weather".into())),
        ModelRequest::new(history.clone()).tools(vec![weather_def()]).tool_choice(ToolChoice::Required),
        ModelRequest::new(history).response_format(ResponseFormat::json_schema("answer", json!({
            "type": "object", "properties": {"weather": {"type": "string"}}, "required": ["weather"]
        }))),
    ];
    for mut req in requests {
        req.sampling = sampling.clone();
        model.generate(&req).await.unwrap();
    }
    let bodies = checked_bodies(&server).await;
    assert_eq!(
        bodies[0]["tool_choice"],
        json!({"type": "function", "name": "get_current_weather"})
    );
    assert_eq!(bodies[1]["tool_choice"], "required");
    assert_eq!(bodies[2]["text"]["format"]["type"], "json_schema");
    assert_eq!(bodies[2]["text"]["format"]["strict"], true);
    assert_eq!(bodies[0]["temperature"], 0.2);
    assert_eq!(bodies[0]["max_output_tokens"], 2000);
    let input = bodies[0]["input"].as_array().unwrap();
    assert_eq!(
        input[3],
        json!({"type": "function_call", "call_id": "call_1",
        "name": "get_current_weather", "arguments": r#"{"invalid_arguments":"{\"location\":\"Boston"}"#}),
        "arguments that are not JSON go back wrapped, so the API accepts the history"
    );
    assert_eq!(input[4]["output"], "Error: bad arguments");
    let image = input
        .iter()
        .find(|i| i["role"] == "user" && i["content"].is_array())
        .unwrap();
    assert_eq!(
        image["content"][1]["image_url"],
        "data:image/png;base64,aGVsbG8="
    );
}

#[test]
fn the_validator_rejects_what_the_responses_api_does_not_take() {
    for bad in [
        json!({"model": "m", "input": [], "stop": ["END"]}),
        json!({"model": "m", "input": [{"type": "function_call_output", "output": "x"}]}),
        json!({"input": "hi"}),
    ] {
        let result = std::panic::catch_unwind(|| {
            validate_bodies_as("CreateResponse", std::slice::from_ref(&bad))
        });
        assert!(result.is_err(), "accepted {bad}");
    }
    validate_bodies_as(
        "CreateResponse",
        &[json!({"model": "m", "input": "hi", "store": false})],
    );
}
