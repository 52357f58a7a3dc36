//! `#[tool]` on the tutorial's demo tools (examples/tool_macro.rs): the same schemas, hints and
//! answers as `tinyagent_demo`'s tools, written as plain annotated fns.

#[path = "../examples/tool_macro.rs"]
mod example;

use std::sync::Arc;

use serde_json::json;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentExt, LlmAgent, Session, Tool, ToolContext, ToolError, ToolErrorKind, tool};

fn both() -> [(Arc<dyn Tool>, Arc<dyn Tool>); 4] {
    [
        (
            Arc::new(example::get_weather_tool()),
            tinyagent_demo::weather_tool(),
        ),
        (
            Arc::new(example::calculate_tool()),
            tinyagent_demo::calculator_tool(),
        ),
        (
            Arc::new(example::get_current_time_tool()),
            tinyagent_demo::time_tool(),
        ),
        (
            Arc::new(example::translator_tool()),
            tinyagent_demo::translator_tool(),
        ),
    ]
}

#[test]
fn the_macro_tools_have_the_demo_tools_names_descriptions_and_schemas() {
    for (made, seed) in both() {
        assert_eq!(made.name(), seed.name());
        assert_eq!(made.description(), seed.description());
        assert_eq!(made.input_schema(), seed.input_schema(), "{}", seed.name());
    }
}

#[test]
fn the_macro_tools_have_the_demo_tools_hints_except_plain_text() {
    for (made, seed) in both() {
        // The demo's translator is an agent-style tool that also takes plain text; a `#[tool]`
        // fn takes a JSON object only.
        let expected = seed.hints().plain_text(false);
        assert_eq!(made.hints(), expected, "{}", seed.name());
    }
}

#[tokio::test]
async fn the_macro_tools_answer_like_the_demo_tools() {
    let ctx = ToolContext::default();
    let calls = [
        r#"{"city": "北京"}"#,
        r#"{"city": "上海", "unit": "fahrenheit"}"#,
        r#"{"city": "火星"}"#,
        r#"{"operation": "add", "a": 10, "b": 3}"#,
        r#"{"operation": "divide", "a": 1, "b": 0}"#,
        r#"{"operation": "sqrt", "a": 144}"#,
        r#"{"timezone": "Mars/Olympus"}"#,
        r#"{"message": "你好世界"}"#,
        r#"{"city": 3}"#,
    ];
    for (made, seed) in both() {
        for input in calls {
            let a = made.handle(&ctx, input).await;
            let b = seed.handle(&ctx, input).await;
            match (a, b) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{} {input}", seed.name()),
                (Err(a), Err(b)) => {
                    assert_eq!(a.kind(), b.kind(), "{} {input}", seed.name());
                    if a.kind() != ToolErrorKind::InvalidInput {
                        assert_eq!(a.message(), b.message(), "{} {input}", seed.name());
                    }
                }
                (a, b) => panic!("{} {input}: {a:?} vs {b:?}", seed.name()),
            }
        }
    }
    let out = example::get_weather_tool()
        .handle(&ctx, r#"{"city": "北京"}"#)
        .await
        .unwrap();
    assert_eq!(
        out,
        r#"{"city":"北京","temperature":22.5,"condition":"晴","humidity":45}"#
    );
}

#[tokio::test]
async fn the_fns_stay_callable() {
    let out = example::calculate(tinyagent_demo::Operation::Power, 2.0, Some(10.0))
        .await
        .unwrap();
    assert_eq!(out.expression, "2.00 ^ 10.00 = 1024.00");
    let err = example::get_weather("火星".into(), None).await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
}

/// Counts the items of a list.
#[tool(name = "count-items", idempotent)]
async fn count(
    #[arg(description = "The items to count")] items: Vec<String>,
    ctx: ToolContext,
    #[serde(default)]
    /// Count only distinct items
    distinct: bool,
) -> Result<usize, ToolError> {
    assert!(ctx.call_id().is_some(), "the agent passes its context");
    let mut items = items;
    if distinct {
        items.sort();
        items.dedup();
    }
    Ok(items.len())
}

/// Answers with nothing at all.
#[tool]
async fn ping() -> Result<&'static str, ToolError> {
    Ok("pong")
}

#[tokio::test]
async fn context_anywhere_attributes_on_parameters_and_no_parameters() {
    let tool = count_tool();
    assert_eq!(tool.name(), "count-items");
    assert!(tool.hints().idempotent && !tool.hints().read_only);
    assert_eq!(
        *tool.input_schema(),
        json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "string"}, "description": "The items to count"},
                "distinct": {"type": "boolean", "description": "Count only distinct items", "default": false},
            },
            "required": ["items"],
        })
    );
    let ping = ping_tool();
    assert_eq!(*ping.input_schema(), json!({"type": "object"}));
    assert_eq!(
        ping.handle(&ToolContext::default(), "").await.unwrap(),
        "pong"
    );

    let model = Arc::new(ScriptedModel::new([
        reply::tool_call(
            "c1",
            "count-items",
            r#"{"items": ["a", "b", "a"], "distinct": true}"#,
        ),
        reply::text("2"),
    ]));
    let agent = LlmAgent::builder("counter")
        .model(model.clone())
        .tool(count_tool())
        .tool(ping_tool())
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "count").await.unwrap(), "2");
    let requests = model.requests();
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.content, "2");
    assert!(!result.is_error);
}

#[test]
fn descriptions_from_the_attribute_win() {
    /// Not this.
    #[tool(description = "Says hello")]
    async fn hello() -> Result<String, ToolError> {
        Ok("hello".into())
    }
    assert_eq!(hello_tool().description(), "Says hello");
}
