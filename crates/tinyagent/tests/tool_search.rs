//! Tool search over a large toolset: 500 generated tools plus the demo's four. Each
//! invocation is offered a handful of relevant tools and the two search tools, the request's
//! definitions stay under a token budget, and the rest stay reachable by search and by name.

use std::sync::Arc;

use serde_json::{Value, json};
use tinyagent::model::ToolDefinition;
use tinyagent::testing::many_tools;
use tinyagent::tools::{CALL_TOOL, SEARCH_TOOL, ToolResolver, ToolSearch};
use tinyagent::{Invocation, Message, Session, Tool, ToolContext, ToolErrorKind};

fn search() -> ToolSearch {
    let mut tools = many_tools(500);
    tools.extend(tinyagent_demo::all_tools());
    ToolSearch::new(tools)
}

async fn offered(search: &ToolSearch, inv: &Invocation) -> Vec<Arc<dyn Tool>> {
    search.resolve_tools(inv).await.unwrap()
}

fn names(tools: &[Arc<dyn Tool>]) -> Vec<&str> {
    tools.iter().map(|t| t.name()).collect()
}

/// The definitions' size in tokens, estimated as a quarter of their JSON's bytes.
fn definition_tokens(tools: &[Arc<dyn Tool>]) -> usize {
    tools
        .iter()
        .map(|t| {
            serde_json::to_string(&ToolDefinition::from_tool(t.as_ref()))
                .unwrap()
                .len()
                / 4
        })
        .sum()
}

#[tokio::test]
async fn the_demo_questions_are_offered_their_tools_among_few() {
    let search = search();
    let all = {
        let mut tools = many_tools(500);
        tools.extend(tinyagent_demo::all_tools());
        tools
    };
    let everything = definition_tokens(&all);
    for (question, tool) in [
        ("北京天气怎么样？", "get_weather"),
        ("帮我算一下 7 乘以 8 等于多少。", "calculator"),
        ("Approve the expense report EX-17", "approve_expense"),
        ("cancel the meeting with id m-3", "cancel_meeting"),
    ] {
        let tools = offered(&search, &Invocation::new(Session::new(), question)).await;
        let names = names(&tools);
        assert!(names.contains(&tool), "{question}: {names:?}");
        assert!(names.len() <= 10, "{question}: {names:?}");
        assert_eq!(&names[names.len() - 2..], [SEARCH_TOOL, CALL_TOOL]);
        // 1,500 tokens for the definitions, against some 50,000 for all 504.
        let tokens = definition_tokens(&tools);
        assert!(tokens <= 1_500, "{question}: {tokens} tokens");
        assert!(everything > 30 * tokens, "{everything} against {tokens}");
    }
    assert_eq!(search.search("北京天气怎么样？")[0], "get_weather");
    assert_eq!(
        search.search("approve the expense report")[0],
        "approve_expense"
    );
}

#[tokio::test]
async fn a_follow_up_is_searched_with_the_questions_before_it() {
    let search = search();
    let session = Session::new();
    session.append([
        Message::user("Look up the shipment SH-9 for me"),
        Message::assistant("It left the warehouse yesterday."),
    ]);
    let tools = offered(&search, &Invocation::new(session, "and cancel it")).await;
    let names = names(&tools);
    assert!(names.contains(&"cancel_shipment"), "{names:?}");
}

#[tokio::test]
async fn the_rest_are_found_by_search_and_called_by_name() {
    let search = search();
    let tools = offered(&search, &Invocation::new(Session::new(), "hello")).await;
    let by_name = |n: &str| tools.iter().find(|t| t.name() == n).cloned().unwrap();
    let ctx = ToolContext::default();
    let found = by_name(SEARCH_TOOL)
        .handle(&ctx, r#"{"query": "export the quarterly report"}"#)
        .await
        .unwrap();
    let found: Value = serde_json::from_str(&found).unwrap();
    assert_eq!(found["tools"][0]["name"], "export_report");
    assert_eq!(found["tools"][0]["input_schema"]["required"], json!(["id"]));
    let call = by_name(CALL_TOOL);
    let out = call
        .handle(
            &ctx,
            r#"{"name": "export_report", "arguments": {"id": "q3"}}"#,
        )
        .await
        .unwrap();
    assert_eq!(out, "export_report");
    let out = call
        .handle(
            &ctx,
            r#"{"name": "calculator", "arguments": {"operation": "multiply", "a": 7, "b": 8}}"#,
        )
        .await
        .unwrap();
    assert!(out.contains("56"), "{out}");
    let err = call
        .handle(&ctx, r#"{"name": "launch_rocket", "arguments": {}}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::NotFound);
    assert!(err.message().contains("search_tools"), "{err}");
    // The called tool checks its own arguments.
    let err = call
        .handle(
            &ctx,
            r#"{"name": "calculator", "arguments": {"operation": "launch"}}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput, "{err}");
}

#[tokio::test]
async fn a_small_toolset_is_offered_whole() {
    let search = ToolSearch::new(tinyagent_demo::all_tools());
    let tools = offered(&search, &Invocation::new(Session::new(), "hi")).await;
    assert_eq!(
        names(&tools),
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
}
