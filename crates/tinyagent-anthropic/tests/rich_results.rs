//! Rich tool results in Messages API requests: a `tool_result` holding images carries them as
//! base64 `image` blocks beside text blocks; other parts are described in text. The request
//! body is checked against Anthropic's OpenAPI spec.

mod support;

use serde_json::json;
use support::*;
use tinyagent::{ContentPart, Message, Model, ModelRequest, Role, ToolCall, ToolResult};
use wiremock::MockServer;

#[tokio::test]
async fn images_in_tool_results_are_image_blocks() {
    let server = MockServer::start().await;
    mount(&server, json_reply("message_default.json"), None).await;
    let model = model_for(&server);
    let parts = vec![
        ContentPart::text("sales by month:"),
        ContentPart::image("iVBORw0KGgo=", "image/png"),
        ContentPart::audio("UklGRg==", "audio/wav"),
        ContentPart::resource_text("file:///notes.txt", Some("text/plain".into()), "buy milk"),
    ];
    let history = vec![
        Message::user("画出销售图"),
        Message::new(
            Role::Assistant,
            vec![
                ToolCall::new("toolu_1", "chart", "{}").into(),
                ToolCall::new("toolu_2", "tiff", "{}").into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok("toolu_1", "chart", tinyagent::tools::content_text(&parts)).parts(parts),
            ToolResult::ok("toolu_2", "tiff", "[image image/tiff, 3 B]")
                .parts(vec![ContentPart::image("AAAA", "image/tiff")]),
        ]),
    ];
    model
        .generate(&ModelRequest::new(history).instruction("你是一个全能助手。"))
        .await
        .unwrap();

    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                {"type": "text", "text": "sales by month:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
                {"type": "text", "text": "[audio audio/wav, 4 B]"},
                {"type": "text", "text": "[resource file:///notes.txt (text/plain)]\nbuy milk"}
            ]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "[image image/tiff, 3 B]"}
        ]})
    );
}
