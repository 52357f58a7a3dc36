//! The support-bot example (examples/support_bot.rs) run end to end: the read-only lookup fails
//! once with a retryable user error and is retried, the role resolver offers the refund to a
//! supervisor only, the MCP tool and the agent tool answer.

#[path = "../examples/support_bot.rs"]
mod example;

use std::sync::atomic::Ordering;

use tinyagent::ToolResult;

/// The example counts calls of its order system in a static: one run at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn results(model: &tinyagent::testing::ScriptedModel) -> Vec<(String, ToolResult)> {
    let requests = model.requests();
    let mut names = std::collections::HashMap::new();
    let mut out = Vec::new();
    for request in &requests {
        for message in &request.messages {
            for call in message.tool_calls() {
                names.insert(call.id.clone(), call.name.clone());
            }
            for result in message.tool_results() {
                let name = names.get(&result.call_id).cloned().unwrap_or_default();
                if !out
                    .iter()
                    .any(|(_, r): &(String, ToolResult)| r.call_id == result.call_id)
                {
                    out.push((name, result.clone()));
                }
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_busy_lookup_is_retried_and_the_supervisor_gets_a_refund() {
    let _one = ONE_AT_A_TIME.lock().await;
    example::LOOKUPS.store(0, Ordering::SeqCst);
    let (answer, model) = example::run("supervisor").await.expect("the bot answers");
    assert_eq!(
        answer,
        "Order 42 was shipped damaged; it is refunded. Sorry!"
    );
    assert_eq!(
        example::LOOKUPS.load(Ordering::SeqCst),
        2,
        "the first lookup failed as busy (retryable) and was tried again"
    );
    let results = results(&model);
    let by_name = |name: &str| {
        results
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, r)| r.clone())
            .unwrap_or_else(|| panic!("no result of {name}: {results:#?}"))
    };
    let lookup = by_name("lookup_order");
    assert!(!lookup.is_error, "{}", lookup.content);
    assert_eq!(lookup.content, r#"{"id":42,"status":"shipped"}"#);
    let kb = by_name("kb_search");
    assert!(!kb.is_error, "{}", kb.content);
    assert!(kb.content.contains("article 12"), "{}", kb.content);
    let refund = by_name("refund");
    assert_eq!(refund.content, "order 42 refunded (Damaged)");
    assert!(!refund.is_error);
    let tone = by_name("tone_checker");
    assert_eq!(tone.content, "Friendly.");
    // The tools offered in the first request: the static ones, the supervisor's, the server's.
    let mut offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    offered.sort();
    assert_eq!(
        offered,
        ["kb_search", "lookup_order", "refund", "tone_checker"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_customer_is_not_offered_the_refund() {
    let _one = ONE_AT_A_TIME.lock().await;
    example::LOOKUPS.store(0, Ordering::SeqCst);
    let (_, model) = example::run("customer").await.expect("the bot answers");
    let offered: Vec<String> = model.requests()[0]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(!offered.iter().any(|n| n == "refund"), "{offered:?}");
    let refund = results(&model)
        .into_iter()
        .find(|(n, _)| n == "refund")
        .map(|(_, r)| r)
        .expect("the scripted model calls it anyway");
    assert!(
        refund.is_error,
        "a tool not offered does not run: {}",
        refund.content
    );
}
