//! The provider against a loopback server replaying answers in the Messages API's wire
//! format (the spec's recorded example, and hand-built bodies and streams that validate
//! against the spec): text, tool use, parallel calls, thinking kept in the history, prompt
//! caching, tool choice, error bodies. Every request body is validated against
//! `CreateMessageParams` of Anthropic's OpenAPI spec.

mod support;

use serde_json::json;
use support::*;
use tinyagent::model::Sampling;
use tinyagent::{
    Message, Model, ModelRequest, Part, Role, ToolCall, ToolResult,
    model::{FinishReason, ModelErrorKind, ModelEvent, ToolChoice, ToolDefinition},
};
use tinyagent_anthropic::{AnthropicModel, DEFAULT_MAX_TOKENS};
use wiremock::MockServer;

fn weather_def() -> ToolDefinition {
    tinyagent_demo::weather_tool().definition()
}

fn calculator_def() -> ToolDefinition {
    tinyagent_demo::calculator_tool().definition()
}

#[test]
fn the_fixtures_are_valid_for_the_spec() {
    validate_fixtures();
}

#[tokio::test]
async fn the_specs_recorded_message_is_read() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_default.json"), None).await;
    let resp = model_for(&server).generate(&ask("Hello!")).await.unwrap();
    assert_eq!(resp.message.role, Role::Assistant);
    assert_eq!(resp.message.text(), "Hi! My name is Claude.");
    assert_eq!(resp.finish_reason, FinishReason::Stop);
    // input_tokens + cache reads + cache writes, as the API documents the total.
    assert_eq!(resp.usage.input_tokens, Some(2095 + 2051 + 2051));
    assert_eq!(resp.usage.cached_input_tokens, Some(2051));
    assert_eq!(resp.usage.cache_write_input_tokens, Some(2051));
    assert_eq!(resp.usage.output_tokens, Some(503));
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0],
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": DEFAULT_MAX_TOKENS,
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello!"}]}],
            "system": "你是一个全能助手。",
        })
    );
}

#[tokio::test]
async fn a_streamed_text_reply_arrives_in_pieces() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_text.sse"), None).await;
    let req = ask("Hello!").sampling(Sampling::new().temperature(0.7).stop(["END"]));
    let (events, err) = stream_all(&model_for(&server), &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(
        events[..3],
        [
            ModelEvent::TextDelta("Hi!".into()),
            ModelEvent::TextDelta(" My name".into()),
            ModelEvent::TextDelta(" is Claude.".into()),
        ]
    );
    let Some(ModelEvent::Done(resp)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(resp.message.text(), "Hi! My name is Claude.");
    assert_eq!(resp.usage.output_tokens, Some(12));
    assert_eq!(resp.usage.input_tokens, Some(25));
    assert_eq!(resp.finish_reason, FinishReason::Stop);
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies[0]["stream"], true);
    assert_eq!(bodies[0]["temperature"], json!(0.7));
    assert_eq!(bodies[0]["stop_sequences"], json!(["END"]));
}

#[tokio::test]
async fn a_streamed_tool_call_is_assembled_from_its_fragments() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_tool_use.sse"), None).await;
    let req = ask("北京天气怎么样？").tools(vec![weather_def()]);
    let (events, err) = stream_all(&model_for(&server), &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&events), "我来查一下北京的天气。");
    let id = "toolu_01T1x1fJ34qAmk2tNTrN7Up6";
    let fragments: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolCallDelta {
                id: i,
                arguments_fragment,
            } if i == id => Some(arguments_fragment.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(fragments, r#"{"city":"北京"}"#);
    assert!(events.contains(&ModelEvent::ToolCallStart {
        id: id.into(),
        name: "get_weather".into()
    }));
    let Some(ModelEvent::Done(resp)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        resp.message.tool_calls().collect::<Vec<_>>(),
        [&ToolCall::new(id, "get_weather", r#"{"city":"北京"}"#)]
    );
    let bodies = validated_bodies(&server).await;
    let tool = &bodies[0]["tools"][0];
    assert_eq!(tool["name"], "get_weather");
    assert_eq!(tool["description"], tinyagent_demo::WEATHER_DESCRIPTION);
    assert_eq!(tool["input_schema"]["type"], "object");
    assert_eq!(tool["input_schema"]["required"], json!(["city"]));
    assert!(
        bodies[0].get("tool_choice").is_none(),
        "auto is the default"
    );
}

#[tokio::test]
async fn parallel_tool_calls_come_back_in_order_streamed_or_not() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_parallel_tool_use.sse"), Some(1)).await;
    mount(&server, json_reply("message_parallel_tool_use.json"), None).await;
    let req =
        ask("北京天气怎么样？再算一下 7 乘以 8。").tools(vec![weather_def(), calculator_def()]);
    let model = model_for(&server);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    let Some(ModelEvent::Done(streamed)) = events.last() else {
        panic!("{events:?}")
    };
    let generated = model.generate(&req).await.unwrap();
    for resp in [streamed, &generated] {
        let calls: Vec<(&str, &str, serde_json::Value)> = resp
            .message
            .tool_calls()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.name.as_str(),
                    serde_json::from_str(&c.arguments).unwrap(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            [
                ("toolu_01WeatherBJ", "get_weather", json!({"city": "北京"})),
                (
                    "toolu_01CalcMul",
                    "calculator",
                    json!({"operation": "multiply", "a": 7, "b": 8})
                ),
            ]
        );
        assert_eq!(resp.finish_reason, FinishReason::ToolCalls);
    }
    assert_eq!(generated.usage.cached_input_tokens, Some(512));
    assert_eq!(generated.usage.input_tokens, Some(610 + 512));
    validated_bodies(&server).await;
}

#[tokio::test]
async fn the_history_goes_out_as_alternating_turns_with_tool_results_and_errors() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_default.json"), None).await;
    let history = vec![
        Message::user("北京天气怎么样？再算一下 7 除以 0。"),
        Message::new(
            Role::Assistant,
            vec![
                Part::text("我来查询。"),
                ToolCall::new("toolu_1", "get_weather", r#"{"city":"北京"}"#).into(),
                ToolCall::new(
                    "call:2",
                    "calculator",
                    r#"{"operation":"divide","a":7,"b":0"#,
                )
                .into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok(
                "toolu_1",
                "get_weather",
                r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#,
            ),
            ToolResult::error("call:2", "calculator", "除数不能为零"),
        ]),
        Message::user("那上海呢？"),
        Message::system("回答要简短。"),
    ];
    let req = ModelRequest::new(history)
        .instruction("你是一个全能助手。")
        .tools(vec![weather_def(), calculator_def()])
        .max_tokens(300);
    let resp = model_for(&server).generate(&req).await.unwrap();
    assert_eq!(resp.message.text(), "Hi! My name is Claude.");
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies[0]["system"], "你是一个全能助手。\n\n回答要简短。");
    assert_eq!(bodies[0]["max_tokens"], 300);
    assert_eq!(
        bodies[0]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "北京天气怎么样？再算一下 7 除以 0。"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "我来查询。"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "北京"}},
                {"type": "tool_use", "id": "call_2", "name": "calculator",
                 "input": {"invalid_arguments": r#"{"operation":"divide","a":7,"b":0"#}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1",
                 "content": r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "除数不能为零", "is_error": true},
                {"type": "text", "text": "那上海呢？"},
            ]},
        ])
    );
}

#[tokio::test]
async fn thinking_blocks_are_kept_and_sent_back_signed() {
    let server = MockServer::start().await;
    mount(&server, sse_reply("stream_thinking_tool_use.sse"), Some(1)).await;
    mount(&server, json_reply("message_default.json"), None).await;
    let model = AnthropicModel::new(
        config_for(&server.uri())
            .thinking_tokens(2048)
            .max_tokens(1024),
    )
    .unwrap();
    let req = ask("帮我算一下 7 乘以 8 等于多少。").tools(vec![calculator_def()]);
    let (events, err) = stream_all(&model, &req).await;
    assert!(err.is_none(), "{err:?}");
    assert_eq!(text_of(&events), "", "thinking is not shown as text");
    let Some(ModelEvent::Done(resp)) = events.last() else {
        panic!("{events:?}")
    };
    assert_eq!(
        resp.message.parts,
        vec![
            Part::reasoning(
                "用户想知道 7 乘以 8，我应该调用计算器。",
                Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds".into())
            ),
            Part::Reasoning {
                text: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into(),
                signature: None,
                redacted: true,
            },
            ToolCall::new(
                "toolu_01CalcThink",
                "calculator",
                r#"{"operation":"multiply","a":7,"b":8}"#
            )
            .into(),
        ]
    );
    assert_eq!(resp.usage.cached_input_tokens, Some(480));
    assert_eq!(resp.usage.input_tokens, Some(1000));
    // The next step sends the turn back with its thinking first, signed.
    let mut next = req.clone();
    next.messages.push(resp.message.clone());
    next.messages
        .push(Message::from_tool_results([ToolResult::ok(
            "toolu_01CalcThink",
            "calculator",
            r#"{"result":56.0,"expression":"7.00 * 8.00 = 56.00"}"#,
        )]));
    model.generate(&next).await.unwrap();
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(bodies[0]["max_tokens"], 2048 + 1024, "above the budget");
    assert_eq!(
        bodies[1]["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "用户想知道 7 乘以 8，我应该调用计算器。",
             "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
            {"type": "redacted_thinking",
             "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
            {"type": "tool_use", "id": "toolu_01CalcThink", "name": "calculator",
             "input": {"operation": "multiply", "a": 7, "b": 8}},
        ])
    );
}

#[tokio::test]
async fn reasoning_without_a_signature_is_left_out() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_default.json"), None).await;
    let req = ModelRequest::new(vec![
        Message::user("hi"),
        Message::new(
            Role::Assistant,
            vec![
                Part::reasoning("another provider's thoughts", None),
                Part::text("hello"),
            ],
        ),
        Message::user("again"),
    ]);
    model_for(&server).generate(&req).await.unwrap();
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0]["messages"][1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "hello"}]})
    );
}

#[tokio::test]
async fn prompt_caching_and_tool_choice_are_sent_as_the_api_wants() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_tool_use.json"), None).await;
    let model = AnthropicModel::new(
        config_for(&server.uri())
            .prompt_caching(true)
            .disable_parallel_tool_use(true),
    )
    .unwrap();
    let tools = vec![weather_def(), calculator_def()];
    for choice in [
        ToolChoice::Auto,
        ToolChoice::Required,
        ToolChoice::Tool("get_weather".into()),
        ToolChoice::None,
    ] {
        let req = ask("北京天气怎么样？")
            .tools(tools.clone())
            .tool_choice(choice);
        let resp = model.generate(&req).await.unwrap();
        assert_eq!(
            resp.message.tool_calls().next().unwrap().arguments,
            r#"{"city":"北京"}"#
        );
    }
    let bodies = validated_bodies(&server).await;
    let choices: Vec<_> = bodies.iter().map(|b| b["tool_choice"].clone()).collect();
    assert_eq!(
        choices,
        [
            json!({"type": "auto", "disable_parallel_tool_use": true}),
            json!({"type": "any", "disable_parallel_tool_use": true}),
            json!({"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true}),
            json!({"type": "none"}),
        ]
    );
    assert_eq!(
        bodies[0]["system"],
        json!([{"type": "text", "text": "你是一个全能助手。", "cache_control": {"type": "ephemeral"}}])
    );
    assert!(bodies[0]["tools"][0].get("cache_control").is_none());
    assert_eq!(
        bodies[0]["tools"][1]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

#[tokio::test]
async fn tool_names_the_api_rejects_are_mapped_and_back() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_tool_use.json"), None).await;
    let def = ToolDefinition::new(
        "get.weather",
        "天气",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    );
    // The replayed answer calls `get_weather`: the sent name of `get.weather`.
    let resp = model_for(&server)
        .generate(&ask("北京天气怎么样？").tools(vec![def]))
        .await
        .unwrap();
    assert_eq!(
        resp.message.tool_calls().next().unwrap().name,
        "get.weather"
    );
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies[0]["tools"][0]["name"], "get_weather");
}

/// The error a status and body give, from `generate`; the request is made once.
async fn error_for(status: u16, fixture: &str) -> tinyagent::ModelError {
    let server = MockServer::start().await;
    mount(&server, error_reply(status, fixture), None).await;
    let err = model_for(&server)
        .generate(&ask("Hello!"))
        .await
        .unwrap_err();
    assert_eq!(validated_bodies(&server).await.len(), 1, "not retried");
    err
}

#[tokio::test]
async fn error_bodies_become_clear_errors() {
    let err = error_for(401, "error_401.json").await;
    assert_eq!(err.kind(), ModelErrorKind::Authentication);
    assert_eq!(
        err.message(),
        "HTTP 401 Unauthorized: the API key was refused (is ANTHROPIC_API_KEY wrong or \
         expired?): invalid x-api-key (type authentication_error, request \
         req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
    let err = error_for(403, "error_403.json").await;
    assert_eq!(err.kind(), ModelErrorKind::Authentication);
    assert_eq!(
        err.message(),
        "HTTP 403 Forbidden: the API key may not use this model or feature (check the key's \
         workspace and permissions): Your API key does not have permission to use the \
         specified resource. (type permission_error, request req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
    let err = error_for(404, "error_404.json").await;
    assert_eq!(err.kind(), ModelErrorKind::InvalidRequest);
    assert_eq!(
        err.message(),
        "HTTP 404 Not Found: not found; check the model name \"claude-sonnet-4-5\" \
         (ANTHROPIC_MODEL) and the base URL (ANTHROPIC_BASE_URL, such as \
         https://api.anthropic.com): model: claude-sonnet-9 (type not_found_error, request \
         req_011CSHoEeqs5C35K2UUqR7Fy)"
    );
    let err = error_for(400, "error_400.json").await;
    assert_eq!(err.kind(), ModelErrorKind::InvalidRequest);
    assert!(!err.is_retryable());
    assert!(
        err.message().starts_with(
            "HTTP 400 Bad Request: the request was rejected (a bad parameter, message order or \
             tool schema): messages.1.content.0.tool_result: unexpected `tool_use_id`"
        ),
        "{err}"
    );
    let err = error_for(400, "error_400_too_long.json").await;
    assert_eq!(err.kind(), ModelErrorKind::ContextLengthExceeded);
}

#[tokio::test]
async fn no_key_and_a_401_says_to_set_one() {
    let server = MockServer::start().await;
    mount(&server, error_reply(401, "error_401.json"), None).await;
    let model = AnthropicModel::new(
        tinyagent_anthropic::AnthropicConfig::new("claude-sonnet-4-5").base_url(server.uri()),
    )
    .unwrap();
    let err = model.generate(&ask("Hello!")).await.unwrap_err();
    assert!(
        err.message().starts_with(
            "HTTP 401 Unauthorized: the API wants a key and none was sent (set \
             ANTHROPIC_API_KEY)"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_schema_the_api_rejects_is_sent_in_its_closest_form() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_tool_use.json"), None).await;
    // A root `anyOf`, which the API refuses in `input_schema`.
    let def = ToolDefinition::new(
        "get_weather",
        "天气",
        json!({"anyOf": [
            {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            {"type": "object", "properties": {"lat": {"type": "number"}, "lon": {"type": "number"}}, "required": ["lat", "lon"]},
        ]}),
    );
    model_for(&server)
        .generate(&ask("北京天气怎么样？").tools(vec![def]))
        .await
        .unwrap();
    let bodies = validated_bodies(&server).await;
    assert_eq!(
        bodies[0]["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {
            "city": {"type": "string"}, "lat": {"type": "number"}, "lon": {"type": "number"}
        }})
    );
}

#[test]
fn an_answer_shape_is_asked_in_the_system_prompt() {
    // The API takes no response format beside tools: the schema goes in the system prompt.
    let model = tinyagent_anthropic::AnthropicModel::new(config_for("http://127.0.0.1:9")).unwrap();
    let schema =
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]});
    let req = tinyagent::ModelRequest::new(vec![tinyagent::Message::user("Where?")])
        .instruction("You help.")
        .response_format(tinyagent::model::ResponseFormat::json_schema(
            "place",
            schema.clone(),
        ));
    let body = model.request_body(&req, false);
    let system = body["system"].as_str().unwrap().to_owned();
    assert!(system.starts_with("You help.\n\n"), "{system}");
    assert!(system.contains("named place"), "{system}");
    assert!(system.ends_with(&schema.to_string()), "{system}");
}
