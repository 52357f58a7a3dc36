//! `invented_arguments` on the demo's tools: the values of a call that the conversation never
//! gave are found, and the values it gave are not.

use super::*;

#[test]
fn values_the_conversation_never_gave_are_found() {
    made_up_values_are_found();
    given_values_are_not_taken_for_made_up();
    an_earlier_tool_result_gives_values_too();
}

/// The demo's tool `name`, as the model is offered it.
fn tool(name: &str) -> ToolDefinition {
    tinyagent_demo::all_tools()
        .iter()
        .map(|t| t.definition())
        .find(|t| t.name == name)
        .unwrap()
}

/// A conversation of one question.
fn asked(question: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(question)])
}

/// The arguments of a call of the demo's tool `name` that `question` never gave.
fn invented(name: &str, arguments: Value, question: &str) -> Vec<String> {
    invented_arguments(&tool(name), &arguments, &asked(question))
}

/// Made up: a city, numbers, a text the model wrote itself; an optional value is not checked.
fn made_up_values_are_found() {
    assert_eq!(
        invented(
            "get_weather",
            json!({"city": "Los Angeles, CA"}),
            "Suggest a movie for a family night."
        ),
        ["city"]
    );
    assert_eq!(
        invented(
            "get_weather",
            json!({"city": "深圳"}),
            "腾讯的股价现在是多少？"
        ),
        ["city"]
    );
    let sum = invented(
        "calculator",
        json!({"operation": "multiply", "a": 100, "b": 45}),
        "帮我订一张去北京的火车票。",
    );
    assert_eq!(sum, ["a"]);
    // An optional value is not checked (a page size filled in unasked).
    let paged = ToolDefinition::new(
        "search",
        "Searches.",
        json!({"type": "object", "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10}
        }, "required": ["query"]}),
    );
    let search = json!({"query": "rust books", "limit": 5});
    assert!(invented_arguments(&paged, &search, &asked("Find rust books.")).is_empty());
    assert_eq!(
        invented(
            "translator",
            json!({"message": "The moon is a silent orb, a beacon of light."}),
            "Write a short poem about the moon."
        ),
        ["message"]
    );
    assert_eq!(
        invented(
            "translator",
            json!({"message": "大海啊，你是我的诗魂，你的波涛是我的心跳"}),
            "写一首关于大海的诗。"
        ),
        ["message"]
    );
    // "一个" in the instruction is an article, not a 1 to calculate with.
    let req = asked("Book a flight from London to New York for next Monday.")
        .instruction("你是一个全能助手。");
    let one = json!({"operation": "multiply", "a": 1, "b": 7});
    assert_eq!(invented_arguments(&tool("calculator"), &one, &req), ["a"]);
}

/// Given: copied, spelled out, in the other script, or derived from a set or a pattern.
fn given_values_are_not_taken_for_made_up() {
    assert!(invented("get_weather", json!({"city": "北京"}), "北京天气怎么样？").is_empty());
    assert!(
        invented(
            "get_weather",
            json!({"city": "Beijing"}),
            "北京天气怎么样？"
        )
        .is_empty()
    );
    assert!(
        invented(
            "get_weather",
            json!({"city": "New York"}),
            "Is it cold in New York?"
        )
        .is_empty()
    );
    assert!(
        invented(
            "calculator",
            json!({"operation": "multiply", "a": 7, "b": 8}),
            "七乘以八等于多少？"
        )
        .is_empty()
    );
    assert!(
        invented(
            "calculator",
            json!({"operation": "add", "a": 21, "b": 4}),
            "What is twenty one plus four?"
        )
        .is_empty()
    );
    assert!(
        invented(
            "translator",
            json!({"message": "Thank you very much for your help today"}),
            "How do you say \"thank you very much for your help today\" in Chinese?"
        )
        .is_empty()
    );
    assert!(
        invented(
            "get_current_time",
            json!({"timezone": "Asia/Tokyo"}),
            "东京现在几点？"
        )
        .is_empty()
    );
}

/// An earlier tool result gives values too.
fn an_earlier_tool_result_gives_values_too() {
    let req = ModelRequest::new(vec![
        Message::user("帮我算一下 7 乘以 8 等于多少。"),
        Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "c1",
                "calculator",
                r#"{"operation":"multiply","a":7,"b":8}"#,
            ))],
        ),
        Message::from_tool_results([ToolResult::ok("c1", "calculator", r#"{"result":56.0}"#)]),
        Message::assistant("7乘以8等于56。"),
        Message::user("再乘以 2 呢？"),
    ]);
    let again = json!({"operation": "multiply", "a": 56, "b": 2});
    assert!(invented_arguments(&tool("calculator"), &again, &req).is_empty());
}
