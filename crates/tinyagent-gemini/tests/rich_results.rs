//! Rich tool results in Gemini requests: the function response's `response` keeps the text
//! (a placeholder per non-text part) and images go along as its `inlineData` parts. The
//! request body is checked against the API's discovery document.

mod support;

use serde_json::json;
use support::*;
use tinyagent::{ContentPart, Message, Model, ModelRequest, Role, ToolCall, ToolResult};
use wiremock::MockServer;

#[tokio::test]
async fn images_in_tool_results_are_inline_data_parts_of_the_response() {
    let server = MockServer::start().await;
    mount(&server, json_reply("generate_text.json"), None).await;
    let model = model_for(&server);
    let parts = vec![
        ContentPart::text("sales by month:"),
        ContentPart::image("iVBORw0KGgo=", "image/png"),
        ContentPart::audio("UklGRg==", "audio/wav"),
    ];
    let text = tinyagent::tools::content_text(&parts);
    let history = vec![
        Message::user("画出销售图"),
        Message::new(
            Role::Assistant,
            vec![
                ToolCall::new("c1", "chart", "{}").into(),
                ToolCall::new("c2", "tiff", "{}").into(),
            ],
        ),
        Message::from_tool_results([
            ToolResult::ok("c1", "chart", text.clone()).parts(parts),
            ToolResult::ok("c2", "tiff", "[image image/tiff, 3 B]")
                .parts(vec![ContentPart::image("AAAA", "image/tiff")]),
        ]),
    ];
    model
        .generate(&ModelRequest::new(history).instruction("你是一个全能助手。"))
        .await
        .unwrap();

    let body = &validated_bodies(&server).await[0];
    assert_eq!(
        body["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {
                "id": "c1", "name": "chart",
                "response": {"result": "sales by month:\n[image image/png, 8 B]\n[audio audio/wav, 4 B]"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]
            }},
            {"functionResponse": {
                "id": "c2", "name": "tiff",
                "response": {"result": "[image image/tiff, 3 B]"}
            }}
        ]})
    );
}
