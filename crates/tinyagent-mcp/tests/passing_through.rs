//! Completion with context arguments and resource subscriptions, between tinyagent's own
//! client (`McpToolset`) and server (`McpServer`) over streamable HTTP on loopback: what a
//! gateway relies on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tinyagent::Tool;
use tinyagent_mcp::{
    McpCompletion, McpCompletionRequest, McpPrompt, McpPromptMessage, McpResource,
    McpResourceTemplate, McpServer, McpToolset, ResourceBody,
};

const NOTES: &str = "file:///notes.md";
const TODO: &str = "file:///todo.md";

fn server(log: &Arc<Mutex<Vec<String>>>) -> McpServer {
    let (on, off) = (Arc::clone(log), Arc::clone(log));
    McpServer::new(Vec::<Arc<dyn Tool>>::new())
        .prompt(
            McpPrompt::new("promote", |args| async move {
                Ok(vec![McpPromptMessage::user(format!(
                    "Promote {}",
                    args["name"]
                ))])
            })
            .argument("department", "the department", true)
            .argument("name", "who", true)
            .completion(|request| async move {
                let names: &[&str] = match request.context.get("department").map(String::as_str) {
                    Some("Sales") => &["David", "Eve", "Frank"],
                    Some("Engineering") => &["Alice", "Bob", "Charlie"],
                    _ => &[],
                };
                let values = names.iter().filter(|n| n.starts_with(&request.value));
                Ok(McpCompletion::new(values.copied()).total(names.len() as u32))
            }),
        )
        .resource(
            McpResource::text(NOTES, "notes", "text/markdown", "# Notes")
                .on_subscribe(move |uri| {
                    let on = Arc::clone(&on);
                    async move {
                        on.lock().unwrap().push(format!("+{uri}"));
                        Ok(())
                    }
                })
                .on_unsubscribe(move |uri| {
                    let off = Arc::clone(&off);
                    async move {
                        off.lock().unwrap().push(format!("-{uri}"));
                        Ok(())
                    }
                }),
        )
        .resource(McpResource::text(
            TODO,
            "todo",
            "text/markdown",
            "- [ ] ship",
        ))
        .resource_template(
            McpResourceTemplate::new("orders://{id}", "order", "text/plain", |vars| async move {
                Ok(ResourceBody::Text(format!("order {}", vars["id"])))
            })
            .completion(|request| async move {
                let ids = ["1001", "1002", "2001"];
                Ok(McpCompletion::new(
                    ids.into_iter().filter(|id| id.starts_with(&request.value)),
                ))
            }),
        )
}

/// Waits, at most 30 s, until `check` holds.
async fn until(what: &str, check: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: not within 30 s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_sees_the_context_arguments() {
    let handle = server(&Arc::default())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let toolset = McpToolset::http(handle.url());
    let caps = toolset.server_capabilities().await.unwrap();
    assert!(caps.completions.is_some());
    assert_eq!(caps.resources.and_then(|r| r.subscribe), Some(true));

    let sales = McpCompletionRequest::new("name", "").context_argument("department", "Sales");
    let names = toolset.complete_prompt("promote", sales).await.unwrap();
    assert_eq!(names.values, ["David", "Eve", "Frank"]);
    assert_eq!(names.total, Some(3));
    let request =
        McpCompletionRequest::new("name", "B").context_argument("department", "Engineering");
    let names = toolset.complete_prompt("promote", request).await.unwrap();
    assert_eq!(names.values, ["Bob"]);
    let ids = toolset
        .complete_resource("orders://{id}", McpCompletionRequest::new("id", "100"))
        .await
        .unwrap();
    assert_eq!(ids.values, ["1001", "1002"]);
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_reach_only_the_subscribers_of_that_uri_and_a_client_that_leaves_is_unsubscribed() {
    let log = Arc::new(Mutex::new(Vec::new()));
    let server = server(&log);
    let notifier = server.clone();
    let handle = server.serve_http("127.0.0.1:0").await.unwrap();
    let (a, b) = (
        McpToolset::http(handle.url()),
        McpToolset::http(handle.url()),
    );
    let (mut a_updates, mut b_updates) = (a.resource_updates(), b.resource_updates());
    a.subscribe(NOTES).await.unwrap();
    b.subscribe(NOTES).await.unwrap();
    b.subscribe(TODO).await.unwrap();
    // The first subscriber set off the resource's hook; the second did not.
    assert_eq!(*log.lock().unwrap(), [format!("+{NOTES}")]);

    assert_eq!(notifier.resource_updated(TODO).await, 1);
    assert_eq!(b_updates.recv().await.unwrap(), TODO);
    assert_eq!(notifier.resource_updated(NOTES).await, 2);
    assert_eq!(a_updates.recv().await.unwrap(), NOTES);
    assert_eq!(b_updates.recv().await.unwrap(), NOTES);
    assert!(
        a_updates.try_recv().is_err(),
        "a is not subscribed to {TODO}"
    );

    // Unsubscribing ends it for that client only.
    b.unsubscribe(NOTES).await.unwrap();
    assert_eq!(notifier.resource_updated(NOTES).await, 1);
    assert_eq!(a_updates.recv().await.unwrap(), NOTES);
    assert!(log.lock().unwrap().len() == 1, "a still subscribes");

    // A client that goes away is unsubscribed: the last subscriber's leaving runs the hook.
    drop(a);
    until("a's subscription ended", || log.lock().unwrap().len() == 2).await;
    assert_eq!(
        *log.lock().unwrap(),
        [format!("+{NOTES}"), format!("-{NOTES}")]
    );
    assert_eq!(notifier.resource_updated(NOTES).await, 0);
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resource_that_takes_no_subscriptions_refuses_them() {
    let handle = McpServer::new(Vec::<Arc<dyn Tool>>::new())
        .resource(McpResource::text(NOTES, "notes", "text/plain", "x").subscribable(false))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let toolset = McpToolset::http(handle.url());
    let caps = toolset.server_capabilities().await.unwrap();
    assert_eq!(caps.resources.unwrap().subscribe, None);
    assert!(caps.completions.is_none(), "nothing completes");
    let err = toolset.subscribe(NOTES).await.unwrap_err();
    assert!(err.message().contains("takes no subscriptions"), "{err}");
    let err = toolset.subscribe("file:///missing").await.unwrap_err();
    assert!(err.message().contains("no resource has the URI"), "{err}");
    handle.shutdown().await;
}
