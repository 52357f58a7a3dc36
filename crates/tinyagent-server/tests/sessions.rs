//! The session API against every store: a conversation posted message by message, read back,
//! listed and deleted; busy sessions; and two servers sharing one PostgreSQL or Redis store
//! serving one conversation in turns.

mod common;

use std::sync::Arc;

use common::{Running, agent, client, frames};
use serde_json::{Value, json};
use tinyagent::agent::OnBusy;
use tinyagent::store::SessionStore;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::Server;
use tinyagent_store::SqliteStore;

/// A model that answers turn n with `answer n` (after a tool call on the first turn).
fn model() -> ScriptedModel {
    ScriptedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
        reply::text("answer 1"),
        reply::text("answer 2"),
        reply::text("answer 3"),
    ])
}

async fn post(server: &Running, session: &str, input: &str) -> Vec<common::Frame> {
    post_as(server, None, session, input).await
}

async fn post_as(
    server: &Running,
    key: Option<&str>,
    session: &str,
    input: &str,
) -> Vec<common::Frame> {
    let mut request = client()
        .post(server.url(&format!("/v1/sessions/{session}/messages")))
        .json(&json!({"agent": "calc", "input": input}));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    frames(&response.text().await.unwrap())
}

/// `text` for a query string: every byte but letters, digits and `-_.` percent-encoded.
fn query_escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get(server: &Running, path: &str) -> (u16, Value) {
    get_as(server, None, path).await
}

async fn get_as(server: &Running, key: Option<&str>, path: &str) -> (u16, Value) {
    let mut request = client().get(server.url(path));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The round trip every store must pass.
async fn round_trip(store: Arc<dyn SessionStore>) {
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model()))
            .store(store.clone()),
    )
    .await;
    let id = tinyagent::store::new_id("ses");

    let (status, body) = get(&server, &format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "session_not_found");

    the_first_turn_calls_the_tool(&server, &id).await;

    let events = post(&server, &id, "and again?").await;
    assert_eq!(events.last().unwrap().json()["answer"], "answer 2");

    let (status, session) = get(&server, &format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(session["id"], id.as_str());
    assert_eq!(session["version"], 2);
    assert_eq!(session["message_count"], 6);
    assert_eq!(session["state"], json!({}));
    let messages = session["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert_eq!(
        messages[0]["parts"],
        json!([{"type": "text", "text": "2 + 3?"}])
    );
    assert_eq!(
        messages[5]["parts"],
        json!([{"type": "text", "text": "answer 2"}])
    );
    // The history is in the serde shape of `Message`.
    let back: Vec<tinyagent::Message> =
        serde_json::from_value(session["messages"].clone()).unwrap();
    assert_eq!(back, store.load(&id).await.unwrap().unwrap().messages);

    the_session_is_listed_then_deleted(&server, &id).await;
}

/// The first turn of session `id`: its events, in order and in their serde shapes, with the
/// tool call and the answer.
async fn the_first_turn_calls_the_tool(server: &Running, id: &str) {
    let events = post(server, id, "2 + 3?").await;
    let kinds: Vec<&str> = events.iter().map(|f| f.event.as_deref().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "usage",
            "message",
            "tool_call_started",
            "tool_call_finished",
            "text_delta",
            "usage",
            "message",
            "finished"
        ]
    );
    // Each event is its serde shape, tagged like the SSE event.
    for frame in &events {
        let event = frame.json();
        assert_eq!(event["type"], frame.event.as_deref().unwrap());
        let back: tinyagent::Event = serde_json::from_value(event.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), event);
    }
    assert_eq!(events[2].json()["arguments"], json!({"a": 2, "b": 3}));
    assert_eq!(events[3].json()["content"], "5");
    assert_eq!(
        events[4].json(),
        json!({"type": "text_delta", "text": "answer 1"})
    );
    assert_eq!(events[7].json()["answer"], "answer 1");
}

/// Session `id` is listed with its six messages, then deleted: gone, and a second delete is
/// 404.
async fn the_session_is_listed_then_deleted(server: &Running, id: &str) {
    // The session is listed (other tests may share the store: follow the pages).
    let mut path = "/v1/sessions?limit=50".to_owned();
    let listed = loop {
        let (status, list) = get(server, &path).await;
        assert_eq!(status, 200);
        assert_eq!(list["object"], "list");
        if let Some(found) = list["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
        {
            break found.clone();
        }
        let next = list["next_cursor"].as_str().expect("the session is listed");
        path = format!("/v1/sessions?limit=50&cursor={}", query_escape(next));
    };
    assert_eq!(listed["message_count"], 6);

    let response = client()
        .delete(server.url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let (status, _) = get(server, &format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 404);
    let response = client()
        .delete(server.url(&format!("/v1/sessions/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
}

#[tokio::test]
async fn session_round_trip_in_memory() {
    round_trip(Arc::new(tinyagent::store::MemoryStore::new())).await;
}

#[tokio::test]
async fn session_round_trip_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    round_trip(Arc::new(store)).await;
}

use common::{postgres, redis};

#[tokio::test]
async fn session_round_trip_in_postgres() {
    let Some(store) = postgres().await else {
        return;
    };
    round_trip(Arc::new(store)).await;
}

#[tokio::test]
async fn session_round_trip_in_redis() {
    let Some(store) = redis().await else { return };
    round_trip(Arc::new(store)).await;
}

#[tokio::test]
async fn bad_session_requests_are_clear_errors() {
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model()))
            .agent(agent("other", model())),
    )
    .await;
    let http = client();
    let long = "x".repeat(300);
    let response = http
        .post(server.url(&format!("/v1/sessions/{long}/messages")))
        .json(&json!({"agent": "calc", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["param"], "id");

    let response = http
        .post(server.url("/v1/sessions/s1/messages"))
        .json(&json!({"agent": "nobody", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 404);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "agent_not_found");

    // Two agents: which one must be said.
    let response = http
        .post(server.url("/v1/sessions/s1/messages"))
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["param"], "agent");

    let response = http
        .post(server.url("/v1/sessions/s1/messages"))
        .json(&json!({"agent": "calc"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("input"),
        "{body}"
    );

    let response = http
        .get(server.url("/v1/sessions?cursor=bogus"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let response = http
        .get(server.url("/v1/sessions?limit=many"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
}

#[tokio::test]
async fn a_second_message_to_a_busy_session_is_409_when_runs_do_not_wait() {
    let model = common::GatedModel::new([reply::text("first"), reply::text("second")]);
    let store = tinyagent::store::MemoryStore::new();
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone())
            .on_busy(OnBusy::Fail),
    )
    .await;
    let url = server.url("/v1/sessions/s1/messages");
    let first = tokio::spawn(
        client()
            .post(url.clone())
            .json(&json!({"input": "one"}))
            .send(),
    );
    // The first run holds the session once its model call is waiting.
    tokio::time::timeout(common::PATIENCE, model.arrived.notified())
        .await
        .expect("the first run reaches its model");
    let response = client()
        .post(url.clone())
        .json(&json!({"input": "two"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 409);
    assert_eq!(response.headers()["retry-after"], "1");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "session_busy");

    model.open(2);
    let first = first.await.unwrap().unwrap().text().await.unwrap();
    assert!(first.contains("\"answer\":\"first\""), "{first}");
    let second = client()
        .post(url)
        .json(&json!({"input": "two"}))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 200);
    assert!(
        second
            .text()
            .await
            .unwrap()
            .contains("\"answer\":\"second\"")
    );
    let texts: Vec<String> = store
        .load("s1")
        .await
        .unwrap()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["one", "first", "two", "second"]);
}

/// Two servers on one shared store answer one conversation in turns: each turn sees the whole
/// history, and the stored history is every turn, in order. The conversation is key `alice`'s:
/// on either replica, key `bob` gets 404 for it and does not see it listed.
async fn two_replicas_alternate(store_a: Arc<dyn SessionStore>, store_b: Arc<dyn SessionStore>) {
    let keys = |server: Server| {
        server
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob")
    };
    let turns: u64 = 6;
    let replies = |who: &'static str| {
        ScriptedModel::new((1..=turns).map(move |n| reply::text(format!("{who} answers turn {n}"))))
    };
    let model_a = Arc::new(replies("a"));
    let model_b = Arc::new(replies("b"));
    let a = Running::start(keys(
        Server::new()
            .agent(agent("calc", model_a.clone()))
            .store(store_a),
    ))
    .await;
    let b = Running::start(keys(
        Server::new()
            .agent(agent("calc", model_b.clone()))
            .store(store_b.clone()),
    ))
    .await;
    let id = tinyagent::store::new_id("ses");
    let mut expected: Vec<String> = Vec::new();
    for n in 1..=turns {
        let (server, who, model) = if n % 2 == 1 {
            (&a, "a", &model_a)
        } else {
            (&b, "b", &model_b)
        };
        let question = format!("turn {n}");
        let events = post_as(server, Some("sk-alice"), &id, &question).await;
        let answer = events.last().unwrap().json()["answer"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(answer, format!("{who} answers turn {}", n.div_ceil(2)));
        // The replica's model saw the whole conversation so far.
        let seen: Vec<String> = model
            .requests()
            .last()
            .unwrap()
            .messages
            .iter()
            .map(|m| m.text())
            .collect();
        let mut want = expected.clone();
        want.push(question.clone());
        assert_eq!(seen, want, "what replica {who} saw on turn {n}");
        expected.push(question);
        expected.push(answer);
    }
    for server in [&a, &b] {
        let (status, session) =
            get_as(server, Some("sk-alice"), &format!("/v1/sessions/{id}")).await;
        assert_eq!(status, 200);
        let texts: Vec<String> = session["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["parts"][0]["text"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(texts, expected);
        assert_eq!(session["version"], turns);
    }
    // Ownership holds on both replicas: bob can neither read, delete nor list it.
    let requests_before = (model_a.request_count(), model_b.request_count());
    for server in [&a, &b] {
        bob_cannot_reach_it(server, &id).await;
    }
    assert_eq!(
        (model_a.request_count(), model_b.request_count()),
        requests_before
    );
    let key = tinyagent_server::store_key("alice", &id);
    assert_eq!(store_b.load(&key).await.unwrap().unwrap().owner, "alice");
    store_b.delete(&key).await.unwrap();
}

/// On one replica, key `bob` can neither read, delete nor list session `id`; key `alice` sees
/// it listed.
async fn bob_cannot_reach_it(server: &Running, id: &str) {
    let path = format!("/v1/sessions/{id}");
    let (status, body) = get_as(server, Some("sk-bob"), &path).await;
    assert_eq!(status, 404, "{body}");
    let deleted = client()
        .delete(server.url(&path))
        .bearer_auth("sk-bob")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 404);
    let (_, page) = get_as(server, Some("sk-bob"), "/v1/sessions?limit=200").await;
    assert!(
        !page["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id),
        "{page}"
    );
    let (_, page) = get_as(server, Some("sk-alice"), "/v1/sessions?limit=200").await;
    assert!(
        page["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["id"] == id),
        "{page}"
    );
}

#[tokio::test]
async fn two_servers_sharing_postgres_alternate_turns() {
    let (Some(a), Some(b)) = (postgres().await, postgres().await) else {
        return;
    };
    two_replicas_alternate(Arc::new(a), Arc::new(b)).await;
}

#[tokio::test]
async fn two_servers_sharing_redis_alternate_turns() {
    let (Some(a), Some(b)) = (redis().await, redis().await) else {
        return;
    };
    two_replicas_alternate(Arc::new(a), Arc::new(b)).await;
}

#[tokio::test]
async fn the_session_list_pages_most_recent_first() {
    let store = tinyagent::store::MemoryStore::new();
    for n in 0..5 {
        let changes =
            tinyagent::store::Changes::new().append([tinyagent::Message::user(format!("hi {n}"))]);
        store
            .commit(&format!("s{n}"), None, &changes)
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let server = Running::start(Server::new().agent(agent("calc", model())).store(store)).await;
    let mut ids = Vec::new();
    let mut path = "/v1/sessions?limit=2".to_owned();
    let mut pages = 0;
    loop {
        let (status, page) = get(&server, &path).await;
        assert_eq!(status, 200);
        pages += 1;
        let data = page["data"].as_array().unwrap();
        assert!(data.len() <= 2);
        ids.extend(data.iter().map(|s| s["id"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(next) => path = format!("/v1/sessions?limit=2&cursor={}", query_escape(next)),
            None => break,
        }
        assert!(pages < 10, "the pages never end");
    }
    assert_eq!(ids, ["s4", "s3", "s2", "s1", "s0"]);
}
