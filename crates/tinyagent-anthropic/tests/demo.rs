//! The seed's smart-assistant demo (get_weather and calculator from `tinyagent_demo`) end
//! to end against a replayed exchange with the Messages API: two questions in one session,
//! each a tool call then an answer. The tools really run; their results must reach the
//! model, and the model's answers the user.

mod support;

use serde_json::{Value, json};
use support::*;
use tinyagent::{LlmAgent, Session};
use wiremock::MockServer;

#[tokio::test]
async fn the_smart_assistant_answers_both_questions_with_its_tools() {
    let server = MockServer::start().await;
    mount_sequence(
        &server,
        vec![
            sse_reply("demo_weather_call.sse"),
            sse_reply("demo_weather_answer.sse"),
            sse_reply("demo_calc_call.sse"),
            sse_reply("demo_calc_answer.sse"),
        ],
    )
    .await;
    let agent = LlmAgent::builder("smart-assistant")
        .model(model_for(&server))
        .instruction("你是一个全能助手。")
        .tools([
            tinyagent_demo::weather_tool(),
            tinyagent_demo::calculator_tool(),
        ])
        .build()
        .unwrap();
    let session = Session::new();

    let (calls, results, answer) = ask_agent(&agent, &session, "北京天气怎么样？").await;
    assert_eq!(calls, [("get_weather".to_owned(), json!({"city": "北京"}))]);
    let weather: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(
        weather,
        json!({"city": "北京", "temperature": 22.5, "condition": "晴", "humidity": 45})
    );
    assert_eq!(answer, "北京现在天气晴，气温 22.5°C，湿度 45%。");

    let (calls, results, answer) =
        ask_agent(&agent, &session, "帮我算一下 7 乘以 8 等于多少。").await;
    assert_eq!(
        calls,
        [(
            "calculator".to_owned(),
            json!({"operation": "multiply", "a": 7, "b": 8})
        )]
    );
    let product: Value = serde_json::from_str(&results[0]).unwrap();
    assert_eq!(product["result"], json!(56.0));
    assert_eq!(answer, "7 乘以 8 等于 56（7.00 * 8.00 = 56.00）。");

    // What the model was sent: each tool's real result in the step after its call, and the
    // whole conversation again for the second question.
    let bodies = validated_bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    for body in &bodies {
        assert_eq!(body["system"], "你是一个全能助手。");
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["get_weather", "calculator"]);
    }
    let last_turn = |body: &Value| body["messages"].as_array().unwrap().last().unwrap().clone();
    let sent_result = |body: &Value| {
        let turn = last_turn(body);
        assert_eq!(turn["role"], "user");
        let block = &turn["content"][0];
        assert_eq!(block["type"], "tool_result");
        serde_json::from_str::<Value>(block["content"].as_str().unwrap()).unwrap()
    };
    assert_eq!(
        bodies[1]["messages"][1]["content"][1]["id"],
        "toolu_01DemoWeatherBJ"
    );
    assert_eq!(
        bodies[1]["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01DemoWeatherBJ"
    );
    assert_eq!(sent_result(&bodies[1]), weather);
    assert_eq!(sent_result(&bodies[3]), product);
    assert_eq!(
        last_turn(&bodies[2]),
        json!({"role": "user", "content": [{"type": "text", "text": "帮我算一下 7 乘以 8 等于多少。"}]})
    );
    assert_eq!(
        bodies[2]["messages"][3],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "北京现在天气晴，气温 22.5°C，湿度 45%。"}
        ]})
    );
}
