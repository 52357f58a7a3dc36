//! Rich tool results in Chat Completions requests: a tool message holds only text (with a
//! placeholder per non-text part), and the images follow in one user message as `image_url`
//! data URLs. The request body is checked against OpenAI's OpenAPI spec.

mod support;

use serde_json::json;
use support::*;
use tinyagent::{ContentPart, Message, Model, ModelRequest, Role, ToolCall, ToolResult};
use tinyagent_openai::OpenAiModel;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

#[tokio::test]
async fn images_from_tool_results_follow_in_a_user_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(json_reply("chat_default.json"))
        .mount(&server)
        .await;
    let model = OpenAiModel::new(config_for(&server.uri())).unwrap();
    let parts = vec![
        ContentPart::text("sales by month:"),
        ContentPart::image("iVBORw0KGgo=", "image/png"),
        ContentPart::audio("UklGRg==", "audio/wav"),
        ContentPart::image("AAAA", "image/tiff"),
    ];
    let text = tinyagent::tools::content_text(&parts);
    let history = vec![
        Message::user("画出销售图"),
        Message::new(
            Role::Assistant,
            vec![
                ToolCall::new("call_1", "chart", "{}").into(),
                ToolCall::new("call_2", "logo", "{}").into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok("call_1", "chart", text.clone()).parts(parts),
            ToolResult::ok("call_2", "logo", "[image image/jpeg, 3 B]")
                .parts(vec![ContentPart::image("/9j/", "image/jpeg")]),
        ]),
    ];
    model
        .generate(&ModelRequest::new(history).instruction("你是一个全能助手。"))
        .await
        .unwrap();

    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "你是一个全能助手。"},
            {"role": "user", "content": "画出销售图"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "chart", "arguments": "{}"}},
                {"id": "call_2", "type": "function", "function": {"name": "logo", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content":
                "sales by month:\n[image image/png, 8 B]\n[audio audio/wav, 4 B]\n[image image/tiff, 3 B]"},
            {"role": "tool", "tool_call_id": "call_2", "content": "[image image/jpeg, 3 B]"},
            {"role": "user", "content": [
                {"type": "text", "text": "The images returned by the chart tool (call call_1):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                {"type": "text", "text": "The images returned by the logo tool (call call_2):"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}
            ]}
        ])
    );
    assert_eq!(text.lines().count(), 4);
}
