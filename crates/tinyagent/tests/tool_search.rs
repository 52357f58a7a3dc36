//! Tool search over a large toolset: 500 generated tools plus the demo's four. Each
//! invocation is offered a handful of relevant tools and the two search tools, the request's
//! definitions stay under a token budget, and the rest stay reachable by search and by name.

use std::sync::Arc;

use serde_json::{Value, json};
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
        .map(|t| serde_json::to_string(&t.definition()).unwrap().len() / 4)
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

/// A resolver giving the tools of a list that can change, counting how often it is asked.
struct Registry {
    tools: std::sync::Mutex<Vec<Arc<dyn Tool>>>,
}

impl ToolResolver for Registry {
    fn resolve_tools<'a>(
        &'a self,
        _inv: &'a Invocation,
    ) -> tinyagent::BoxFuture<'a, Result<Vec<Arc<dyn Tool>>, tinyagent::ToolError>> {
        let tools = self.tools.lock().unwrap().clone();
        Box::pin(async move { Ok(tools) })
    }
}

#[tokio::test]
async fn a_search_over_resolvers_follows_their_tools() {
    let registry = Arc::new(Registry {
        tools: std::sync::Mutex::new(many_tools(400)),
    });
    let demo = tinyagent_demo::all_tools();
    let search = ToolSearch::from_resolvers([
        registry.clone() as Arc<dyn ToolResolver>,
        Arc::new(tinyagent::tools::resolver_fn(move |_inv: &Invocation| {
            let tools = demo.clone();
            async move { Ok::<_, tinyagent::ToolError>(tools) }
        })) as Arc<dyn ToolResolver>,
    ])
    // Wrapped when indexed: a tool offered from the same index is the same `Arc`.
    .middleware([tinyagent::tools::with_logging()]);
    // Nothing is indexed before the first invocation.
    assert!(search.search("export the quarterly report").is_empty());
    let inv = Invocation::new(Session::new(), "北京天气怎么样？");
    let first = offered(&search, &inv).await;
    assert_eq!(first[0].name(), "get_weather");
    assert_eq!(
        search.search("export the quarterly report")[0],
        "export_report"
    );

    // The same tools again: the same index.
    let again = offered(&search, &inv).await;
    assert!(Arc::ptr_eq(&first[0], &again[0]));

    // A tool added to the registry is found from the next invocation on.
    registry
        .tools
        .lock()
        .unwrap()
        .push(tinyagent::tools::new_tool(
            "flight_status",
            "Gives the live status of an airline flight by its number",
            json!({"type": "object", "properties": {"flight": {"type": "string"}}}),
            |_ctx: ToolContext, _input: String| async move {
                Ok::<_, tinyagent::ToolError>("departed".to_owned())
            },
        ));
    let inv = Invocation::new(Session::new(), "Is flight CA981 on time?");
    let tools = offered(&search, &inv).await;
    assert_eq!(tools[0].name(), "flight_status");
    // ... indexed anew.
    let weather = offered(
        &search,
        &Invocation::new(Session::new(), "北京天气怎么样？"),
    )
    .await;
    assert_eq!(weather[0].name(), "get_weather");
    assert!(!Arc::ptr_eq(&first[0], &weather[0]));

    // Below the threshold, every tool of every resolver is offered.
    let small = ToolSearch::from_resolvers([Arc::new(tinyagent::tools::resolver_fn(
        |_inv: &Invocation| async { Ok::<_, tinyagent::ToolError>(tinyagent_demo::all_tools()) },
    )) as Arc<dyn ToolResolver>]);
    assert_eq!(names(&offered(&small, &inv).await).len(), 4);
}

#[tokio::test]
async fn the_searchs_middleware_sees_the_calls_call_tool_makes() {
    use tinyagent::tools::middleware::{Approval, ApprovalLayer, ApprovalRequest, approval_fn};
    let seen = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let deny_exports = ApprovalLayer::new(approval_fn(move |req: ApprovalRequest| {
        log.lock().unwrap().push(req.tool.to_string());
        let export = &*req.tool == "export_report";
        async move {
            if export {
                Approval::deny("exports need a person")
            } else {
                Approval::Approve
            }
        }
    }));
    let search = ToolSearch::new(many_tools(400)).middleware([deny_exports.into()]);
    let tools = offered(&search, &Invocation::new(Session::new(), "hello")).await;
    let call = tools.iter().find(|t| t.name() == CALL_TOOL).unwrap();
    let ctx = ToolContext::default();
    let err = call
        .handle(
            &ctx,
            r#"{"name": "export_report", "arguments": {"id": "q3"}}"#,
        )
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Denied, "{err}");
    assert!(err.message().contains("exports need a person"), "{err}");
    let out = call
        .handle(
            &ctx,
            r#"{"name": "archive_report", "arguments": {"id": "q3"}}"#,
        )
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(*seen.lock().unwrap(), ["export_report", "archive_report"]);
}
