//! Runs that pause for approval over the session API: the `paused` event, the waiting calls
//! in `GET /v1/sessions/{id}`, `POST /v1/sessions/{id}/resume`, and who may resume.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{Running, client, frames};
use serde_json::{Value, json};
use tinyagent::store::{MemoryStore, SessionStore};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
use tinyagent::{LlmAgent, ToolError};
use tinyagent_server::Server;

/// An agent whose `add` calls wait for approval, counting the calls that ran.
fn agent(model: ScriptedModel, ran: Arc<AtomicUsize>) -> LlmAgent {
    let add = tinyagent::tools::new_tool(
        "add",
        "Adds two numbers",
        json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}),
        move |_ctx, input: String| {
            let ran = ran.clone();
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                let v: Value = serde_json::from_str(&input)?;
                Ok::<_, ToolError>(
                    (v["a"].as_f64().unwrap() + v["b"].as_f64().unwrap()).to_string(),
                )
            }
        },
    );
    LlmAgent::builder("calc")
        .model(model)
        .tool(add)
        .middleware([ApprovalLayer::new(approval_fn(|_| async {
            Approval::defer("adding needs approval")
        }))
        .into()])
        .build()
        .unwrap()
}

async fn send(server: &Running, key: &str, path: &str, body: Value) -> reqwest::Response {
    client()
        .post(server.url(path))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_paused_run_is_shown_resumed_by_its_owner_only_and_runs_its_call_once() {
    let ran = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
        reply::text("2 + 3 = 5"),
    ]);
    let store = MemoryStore::new();
    let server = Running::start(
        Server::new()
            .agent(agent(model, ran.clone()))
            .store(store.clone())
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob"),
    )
    .await;

    let response = send(
        &server,
        "sk-alice",
        "/v1/sessions/s1/messages",
        json!({"input": "2+3?"}),
    )
    .await;
    assert_eq!(response.status(), 200);
    let events = frames(&response.text().await.unwrap());
    let last = events.last().unwrap();
    assert_eq!(last.event.as_deref(), Some("paused"), "{events:?}");
    assert_eq!(last.json()["pending"][0]["id"], "call_1");
    assert_eq!(last.json()["pending"][0]["name"], "add");
    assert_eq!(last.json()["pending"][0]["reason"], "adding needs approval");
    assert_eq!(ran.load(Ordering::SeqCst), 0);

    the_session_shows_what_waits_and_holds_new_messages(&server).await;
    let approve = json!({"decisions": {"call_1": "approve"}});
    another_key_can_neither_see_nor_resume_it(&server, &store, &approve).await;
    decisions_that_do_not_fit_run_nothing(&server, &ran).await;

    // The owner approves: the call runs, the run answers and the turn is stored.
    let response = send(
        &server,
        "sk-alice",
        "/v1/sessions/s1/resume",
        approve.clone(),
    )
    .await;
    assert_eq!(response.status(), 200);
    let events = frames(&response.text().await.unwrap());
    let names: Vec<&str> = events.iter().filter_map(|f| f.event.as_deref()).collect();
    assert_eq!(
        names,
        [
            "tool_call_started",
            "tool_call_finished",
            "text_delta",
            "usage",
            "message",
            "finished"
        ],
        "{events:?}"
    );
    assert_eq!(events.last().unwrap().json()["answer"], "2 + 3 = 5");
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    let stored = store
        .load(&tinyagent_server::store_key("alice", "s1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.messages.len(), 4);

    // Resuming again runs nothing.
    let response = send(&server, "sk-alice", "/v1/sessions/s1/resume", approve).await;
    assert_eq!(response.status(), 409);
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

/// The paused session `s1` shows what waits, not the run's inner record, and a new message to
/// it waits for the decision (409).
async fn the_session_shows_what_waits_and_holds_new_messages(server: &Running) {
    let shown: Value = client()
        .get(server.url("/v1/sessions/s1"))
        .bearer_auth("sk-alice")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["paused"]["pending"][0]["id"], "call_1");
    assert_eq!(
        shown["paused"]["pending"][0]["arguments"],
        r#"{"a": 2, "b": 3}"#
    );
    assert!(shown["state"].as_object().unwrap().is_empty(), "{shown}");
    assert_eq!(shown["messages"], json!([]));

    // A new message waits for the decision.
    let response = send(
        server,
        "sk-alice",
        "/v1/sessions/s1/messages",
        json!({"input": "hi"}),
    )
    .await;
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "run_paused");
}

/// Another key cannot see the paused session, nor resume it: its answer is word for word that
/// for an id never used (which is not `cannot_resume`: there is no session to resume), and
/// resuming that id creates nothing.
async fn another_key_can_neither_see_nor_resume_it(
    server: &Running,
    store: &MemoryStore,
    approve: &Value,
) {
    let response = send(server, "sk-bob", "/v1/sessions/s1/resume", approve.clone()).await;
    assert_eq!(response.status(), 404);
    let theirs: Value = response.json().await.unwrap();
    let response = send(
        server,
        "sk-alice",
        "/v1/sessions/s9/resume",
        approve.clone(),
    )
    .await;
    assert_eq!(response.status(), 404);
    let never: Value = response.json().await.unwrap();
    assert_eq!(never["error"]["code"], "session_not_found", "{never}");
    let same = |body: &Value, id: &str| {
        let mut body = body.clone();
        body["error"].as_object_mut().unwrap().remove("request_id");
        body.to_string().replace(id, "ID")
    };
    assert_eq!(same(&theirs, "s1"), same(&never, "s9"));
    assert!(
        store
            .load(&tinyagent_server::store_key("alice", "s9"))
            .await
            .unwrap()
            .is_none(),
        "resuming an id never used creates nothing"
    );
}

/// Decisions that do not fit the waiting calls (an unknown call, an unknown decision) run
/// nothing.
async fn decisions_that_do_not_fit_run_nothing(server: &Running, ran: &AtomicUsize) {
    let response = send(
        server,
        "sk-alice",
        "/v1/sessions/s1/resume",
        json!({"decisions": {"call_7": "approve"}}),
    )
    .await;
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "cannot_resume");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("call_7"),
        "{body}"
    );
    let response = send(
        server,
        "sk-alice",
        "/v1/sessions/s1/resume",
        json!({"decisions": {"call_1": "maybe"}}),
    )
    .await;
    assert_eq!(response.status(), 400);
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn chat_completions_cannot_approve_and_say_where_to() {
    let ran = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#)]);
    let server = Running::start(Server::new().agent(agent(model, ran.clone()))).await;
    let response = client()
        .post(server.url("/v1/chat/completions"))
        .json(&json!({"model": "calc", "messages": [{"role": "user", "content": "2+3?"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "approval_required");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/resume"),
        "{body}"
    );
    assert_eq!(ran.load(Ordering::SeqCst), 0);
}
