//! Tenants: every session belongs to the key that created it (another key gets 404 and never
//! sees it listed; an admin key sees all), named keys in the logs, the per-key limits
//! (sessions, history, request rate) and `Idempotency-Key` on session posts.

mod common;

use std::sync::Arc;

use common::{GatedModel, PATIENCE, Running, agent, client, frames};
use serde_json::{Value, json};
use tinyagent::agent::OnBusy;
use tinyagent::store::SessionStore;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::{RateLimit, Server, store_key};
use tinyagent_store::SqliteStore;

fn model(turns: usize) -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(
        (1..=turns).map(|n| reply::text(format!("answer {n}"))),
    ))
}

/// A server with keys `alice` (`sk-alice`), `bob` (`sk-bob`) and the admin key `sk-root`.
fn keyed(server: Server) -> Server {
    server
        .named_api_key("alice", "sk-alice")
        .named_api_key("bob", "sk-bob")
        .admin_key("sk-root")
}

async fn send(
    server: &Running,
    method: reqwest::Method,
    key: &str,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let mut request = client().request(method, server.url(path)).bearer_auth(key);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

async fn post(server: &Running, key: &str, id: &str, input: &str) -> reqwest::Response {
    let path = format!("/v1/sessions/{id}/messages");
    send(
        server,
        reqwest::Method::POST,
        key,
        &path,
        Some(json!({"input": input})),
    )
    .await
}

/// Posts and reads the whole answer (a client that stops reading cancels the run): its status.
async fn posted(server: &Running, key: &str, id: &str, input: &str) -> u16 {
    let response = post(server, key, id, input).await;
    let status = response.status().as_u16();
    response.text().await.unwrap();
    status
}

async fn get(server: &Running, key: &str, path: &str) -> (u16, Value) {
    let response = send(server, reqwest::Method::GET, key, path, None).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

async fn delete(server: &Running, key: &str, id: &str) -> (u16, Value) {
    let path = format!("/v1/sessions/{id}");
    let response = send(server, reqwest::Method::DELETE, key, &path, None).await;
    (response.status().as_u16(), response.json().await.unwrap())
}

/// The ids `key` sees listed, every page followed.
async fn listed(server: &Running, key: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut path = "/v1/sessions?limit=200".to_owned();
    loop {
        let (status, page) = get(server, key, &path).await;
        assert_eq!(status, 200, "{page}");
        ids.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["id"].as_str().unwrap().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(next) => {
                let next: String = next
                    .bytes()
                    .map(|b| match b {
                        b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                            (b as char).to_string()
                        }
                        _ => format!("%{b:02X}"),
                    })
                    .collect();
                path = format!("/v1/sessions?limit=200&cursor={next}");
            }
            None => return ids,
        }
    }
}

/// Each key has ids of its own: key B cannot read, delete or list key A's session (the answer
/// is the one for an id never used), and B's post to the same id starts B's own session,
/// leaving A's untouched. The admin key lists both, with their owners, and reads each with
/// `?owner=`; no other key may name an owner.
pub async fn each_key_has_its_own_ids(store: Arc<dyn SessionStore>) {
    let model = model(3);
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone()),
    ))
    .await;
    let id = tinyagent::store::new_id("ses");
    let response = post(&server, "sk-alice", &id, "hello").await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("answer 1"));
    let alices = store.load(&store_key("alice", &id)).await.unwrap().unwrap();
    assert_eq!(alices.owner, "alice");
    assert!(
        store.load(&id).await.unwrap().is_none(),
        "no session under the bare id"
    );

    // Bob's answers are exactly those for a session that does not exist.
    let never = tinyagent::store::new_id("ses");
    // Equal but for the id asked and the request id every answer has.
    let same = |body: &Value, asked: &str| {
        let mut body = body.clone();
        if let Some(error) = body["error"].as_object_mut() {
            assert!(error.remove("request_id").is_some(), "{error:?}");
        }
        body.to_string().replace(asked, "ID")
    };
    let (status, body) = get(&server, "sk-bob", &format!("/v1/sessions/{id}")).await;
    let (never_status, never_body) = get(&server, "sk-bob", &format!("/v1/sessions/{never}")).await;
    assert_eq!((status, never_status), (404, 404));
    assert_eq!(body["error"]["code"], "session_not_found");
    assert_eq!(same(&body, &id), same(&never_body, &never));
    let (status, body) = delete(&server, "sk-bob", &id).await;
    assert_eq!(status, 404);
    assert_eq!(same(&body, &id), same(&never_body, &never));
    assert!(!listed(&server, "sk-bob").await.contains(&id));

    // Bob's post to that id is a post to his own session of that id.
    let response = post(&server, "sk-bob", &id, "mine now?").await;
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("answer 2"));
    let bobs = store.load(&store_key("bob", &id)).await.unwrap().unwrap();
    assert_eq!((bobs.owner.as_str(), bobs.messages.len()), ("bob", 2));
    assert_eq!(bobs.messages[0].text(), "mine now?");
    assert_eq!(listed(&server, "sk-bob").await, std::slice::from_ref(&id));
    assert_eq!(listed(&server, "sk-alice").await, std::slice::from_ref(&id));
    let (_, page) = get(&server, "sk-alice", "/v1/sessions").await;
    assert_eq!(page["key"], json!({"name": "alice", "admin": false}));
    assert_eq!(page["data"][0]["owner"], "alice");

    // Alice's session is untouched.
    let (status, session) = get(&server, "sk-alice", &format!("/v1/sessions/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(session["message_count"], 2);
    assert_eq!(session["messages"][0]["parts"][0]["text"], "hello");

    // Only an admin key names another key's sessions.
    let (status, body) = get(&server, "sk-alice", &format!("/v1/sessions/{id}?owner=bob")).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "owner_not_allowed");

    // The admin key lists both, with their owners, and addresses each by its owner.
    let (_, page) = get(&server, "sk-root", "/v1/sessions?limit=200").await;
    assert_eq!(page["key"], json!({"name": "admin", "admin": true}));
    let mut owners: Vec<String> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["id"] == id.as_str())
        .map(|s| s["owner"].as_str().unwrap().to_owned())
        .collect();
    owners.sort();
    assert_eq!(owners, ["alice", "bob"]);
    let (_, page) = get(&server, "sk-root", "/v1/sessions?limit=200&owner=bob").await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    for (owner, first) in [("alice", "hello"), ("bob", "mine now?")] {
        let path = format!("/v1/sessions/{id}?owner={owner}");
        let (status, session) = get(&server, "sk-root", &path).await;
        assert_eq!(status, 200, "{session}");
        assert_eq!(session["owner"], owner);
        assert_eq!(session["messages"][0]["parts"][0]["text"], first);
    }
    // Without an owner, the admin key addresses its own sessions (of no owner).
    assert_eq!(
        get(&server, "sk-root", &format!("/v1/sessions/{id}"))
            .await
            .0,
        404
    );

    assert_eq!(delete(&server, "sk-alice", &id).await.0, 200);
    let path = format!("/v1/sessions/{id}?owner=bob");
    let response = send(&server, reqwest::Method::DELETE, "sk-root", &path, None).await;
    assert_eq!(response.status(), 200);
    assert!(
        store
            .load(&store_key("alice", &id))
            .await
            .unwrap()
            .is_none()
    );
    assert!(store.load(&store_key("bob", &id)).await.unwrap().is_none());
}

#[tokio::test]
async fn each_key_has_its_own_ids_in_memory() {
    each_key_has_its_own_ids(Arc::new(tinyagent::store::MemoryStore::new())).await;
}

#[tokio::test]
async fn each_key_has_its_own_ids_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    each_key_has_its_own_ids(Arc::new(store)).await;
}

#[tokio::test]
async fn each_key_has_its_own_ids_in_postgres() {
    let Some(store) = common::postgres().await else {
        return;
    };
    each_key_has_its_own_ids(Arc::new(store)).await;
}

#[tokio::test]
async fn each_key_has_its_own_ids_in_redis() {
    let Some(store) = common::redis().await else {
        return;
    };
    each_key_has_its_own_ids(Arc::new(store)).await;
}

/// A session in use is held by its owner only: another key's post to its id is a post to
/// the other key's own session, answered at once, while the owner's run still holds its own.
#[tokio::test]
async fn another_keys_post_to_a_busy_sessions_id_is_its_own_and_waits_for_nothing() {
    let model = GatedModel::new([reply::text("one"), reply::text("two"), reply::text("bob's")]);
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .on_busy(OnBusy::Wait(PATIENCE * 3)),
    ))
    .await;
    let id = tinyagent::store::new_id("ses");
    model.open(1);
    assert_eq!(posted(&server, "sk-alice", &id, "first").await, 200);

    // Alice's second message holds the session: its model call waits at the gate.
    let arrived = model.arrived.notified();
    let held = post(&server, "sk-alice", &id, "second").await;
    assert_eq!(held.status(), 200);
    arrived.await;

    // Bob's post to the same id is answered (by his own session) while alice's run waits.
    let arrived = model.arrived.notified();
    let response = tokio::time::timeout(PATIENCE, post(&server, "sk-bob", &id, "hi"))
        .await
        .expect("another key's post waits for no session of alice's");
    assert_eq!(response.status(), 200);
    arrived.await;
    model.open(2);
    let (alices, bobs) = (held.text().await.unwrap(), response.text().await.unwrap());
    assert!(alices.contains("event: finished"), "{alices}");
    assert!(bobs.contains("event: finished"), "{bobs}");
    assert_eq!(model.script.request_count(), 3);
    let (_, session) = get(&server, "sk-alice", &format!("/v1/sessions/{id}")).await;
    assert_eq!(
        session["message_count"], 4,
        "alice's two turns, and nothing of bob's"
    );
}

/// An SQLite file of schema 1 (before owners): its sessions belong to no key. A server with
/// keys shows them to its admin key only; a server without keys (one tenant) shows them.
#[tokio::test]
async fn sessions_from_before_owners_are_the_keyless_tenants_and_the_admins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(&path)
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        for statement in [
            "CREATE TABLE tinyagent_schema (version BIGINT NOT NULL)",
            "INSERT INTO tinyagent_schema (version) VALUES (1)",
            "CREATE TABLE tinyagent_sessions (id TEXT PRIMARY KEY, version BIGINT NOT NULL, \
             message_count BIGINT NOT NULL, created_at BIGINT NOT NULL, \
             updated_at BIGINT NOT NULL, expires_at BIGINT, ttl_us BIGINT)",
            "CREATE INDEX tinyagent_sessions_recency ON tinyagent_sessions (updated_at DESC, id)",
            "CREATE TABLE tinyagent_messages (session_id TEXT NOT NULL, seq BIGINT NOT NULL, \
             body TEXT NOT NULL, PRIMARY KEY (session_id, seq))",
            "CREATE TABLE tinyagent_state (session_id TEXT NOT NULL, key TEXT NOT NULL, \
             value TEXT NOT NULL, PRIMARY KEY (session_id, key))",
            "CREATE TABLE tinyagent_locks (id TEXT PRIMARY KEY, token TEXT NOT NULL, \
             until_us BIGINT NOT NULL)",
            "INSERT INTO tinyagent_sessions VALUES ('old', 1, 1, 1700000000000000, \
             1700000000000000, NULL, NULL)",
            "INSERT INTO tinyagent_messages VALUES ('old', 0, \
             '{\"id\":\"m1\",\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"text\":\"from before\"}]}')",
        ] {
            sqlx::query(statement).execute(&pool).await.unwrap();
        }
        pool.close().await;
    }
    let store: Arc<dyn SessionStore> = Arc::new(SqliteStore::open(&path).await.unwrap());
    let model = model(3);
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone()),
    ))
    .await;
    for key in ["sk-alice", "sk-bob"] {
        let (status, _) = get(&server, key, "/v1/sessions/old").await;
        assert_eq!(status, 404, "{key}");
        assert!(listed(&server, key).await.is_empty(), "{key}");
    }
    assert_eq!(model.request_count(), 0);
    let (status, old) = get(&server, "sk-root", "/v1/sessions/old").await;
    assert_eq!(status, 200);
    assert_eq!(old["messages"][0]["parts"][0]["text"], "from before");
    assert_eq!(old["owner"], Value::Null);
    assert_eq!(listed(&server, "sk-root").await, ["old"]);
    // A key's post to that id starts its own session; the old one is untouched.
    assert_eq!(posted(&server, "sk-alice", "old", "mine?").await, 200);
    assert_eq!(store.load("old").await.unwrap().unwrap().messages.len(), 1);
    assert_eq!(
        store
            .load(&store_key("alice", "old"))
            .await
            .unwrap()
            .unwrap()
            .owner,
        "alice"
    );

    // Without keys the server is one tenant, the owner of sessions without one.
    let open = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone()),
    )
    .await;
    let response = client()
        .post(open.url("/v1/sessions/old/messages"))
        .json(&json!({"input": "still here"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.text().await.unwrap().contains("answer 2"));
    let session = store.load("old").await.unwrap().unwrap();
    assert_eq!((session.messages.len(), session.owner.as_str()), (3, ""));
    let page: Value = client()
        .get(open.url("/v1/sessions"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The keyless tenant's sessions are those of no owner: not alice's.
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["data"][0]["id"], "old");
    assert_eq!(page["key"], json!({"name": "anonymous", "admin": false}));
}

#[tokio::test]
async fn a_key_over_its_rate_gets_429_with_retry_after() {
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model(1)))
            .rate_limit(RateLimit::per_minute(2)),
    ))
    .await;
    for _ in 0..2 {
        assert_eq!(get(&server, "sk-alice", "/v1/agents").await.0, 200);
    }
    let response = send(
        &server,
        reqwest::Method::GET,
        "sk-alice",
        "/v1/agents",
        None,
    )
    .await;
    assert_eq!(response.status(), 429);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    // One request's token comes back every 30 s.
    assert!((1..=30).contains(&retry), "{retry}");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limit_exceeded");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("2/min"),
        "{body}"
    );
    // Other keys have their own rate.
    assert_eq!(get(&server, "sk-bob", "/v1/agents").await.0, 200);
}

#[tokio::test]
async fn a_key_at_its_session_cap_gets_409_until_it_deletes_one() {
    let model = model(10);
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .max_sessions_per_key(2),
    ))
    .await;
    for id in ["a1", "a2"] {
        assert_eq!(posted(&server, "sk-alice", id, "hi").await, 200);
    }
    let response = post(&server, "sk-alice", "a3", "one more").await;
    assert_eq!(response.status(), 409);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_many_sessions");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2 sessions"),
        "{body}"
    );
    assert_eq!(model.request_count(), 2, "the refused post ran nothing");
    // Her existing sessions still take messages; bob has his own count.
    assert_eq!(posted(&server, "sk-alice", "a1", "again").await, 200);
    assert_eq!(posted(&server, "sk-bob", "b1", "hi").await, 200);
    assert_eq!(delete(&server, "sk-alice", "a2").await.0, 200);
    assert_eq!(posted(&server, "sk-alice", "a3", "now").await, 200);
}

#[tokio::test]
async fn a_session_at_its_history_cap_gets_413() {
    let model = model(10);
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .max_history(4),
    ))
    .await;
    for input in ["one", "two"] {
        assert_eq!(posted(&server, "sk-alice", "s", input).await, 200);
    }
    let response = post(&server, "sk-alice", "s", "three").await;
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "history_too_long");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("holds 4 messages") && message.contains("at most 4"),
        "{message}"
    );
    assert_eq!(model.request_count(), 2);
    let (_, session) = get(&server, "sk-alice", "/v1/sessions/s").await;
    assert_eq!(session["message_count"], 4);
    // Another session of hers is not full.
    assert_eq!(posted(&server, "sk-alice", "t", "one").await, 200);
}

async fn post_once(
    server: &Running,
    key: &str,
    id: &str,
    input: &str,
    token: &str,
) -> reqwest::Response {
    client()
        .post(server.url(&format!("/v1/sessions/{id}/messages")))
        .bearer_auth(key)
        .header("Idempotency-Key", token)
        .json(&json!({"input": input}))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_retry_with_the_same_idempotency_key_gets_the_stored_outcome() {
    let model = model(3);
    let store = tinyagent::store::MemoryStore::new();
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone()),
    ))
    .await;
    let first = post_once(&server, "sk-alice", "s", "hello", "req-1").await;
    assert_eq!(first.status(), 200);
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = frames(&first.text().await.unwrap());
    let finished = first.last().unwrap();
    assert_eq!(finished.event.as_deref(), Some("finished"));
    assert_eq!(finished.json()["answer"], "answer 1");

    // The client lost the answer and sends the message again: the stored outcome, no run.
    let again = post_once(&server, "sk-alice", "s", "hello", "req-1").await;
    assert_eq!(again.status(), 200);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.headers()["content-type"], "text/event-stream");
    let again = frames(&again.text().await.unwrap());
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].event.as_deref(), Some("finished"));
    assert_eq!(again[0].json(), finished.json());
    assert_eq!(model.request_count(), 1);
    let stored = store.load(&store_key("alice", "s")).await.unwrap().unwrap();
    assert_eq!(stored.messages.len(), 2, "the turn is stored once");
    // The record is not part of the state clients see.
    let (_, session) = get(&server, "sk-alice", "/v1/sessions/s").await;
    assert_eq!(session["state"], json!({}));

    // The same key with another message is a client's mistake.
    let response = post_once(&server, "sk-alice", "s", "something else", "req-1").await;
    assert_eq!(response.status(), 422);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "idempotency_key_reused");
    // Another tenant's post with that key is a post to its own session of that id: it runs.
    let bobs = post_once(&server, "sk-bob", "s", "hello", "req-1").await;
    assert!(bobs.headers().get("idempotent-replayed").is_none());
    assert!(bobs.text().await.unwrap().contains("answer 2"));
    assert_eq!(model.request_count(), 2);
    // A new key runs a new turn.
    let next = post_once(&server, "sk-alice", "s", "hello", "req-2").await;
    assert!(next.text().await.unwrap().contains("answer 3"));
    assert_eq!(model.request_count(), 3);
    // A bad key is refused.
    let response = post_once(&server, "sk-alice", "s", "hello", "").await;
    assert_eq!(response.status(), 400);
}

/// A client that leaves after a tool call ran: the call and its result are stored, marked
/// interrupted; its retry with the same `Idempotency-Key` runs (an interrupted turn is no
/// outcome) and sees what the tool did.
#[tokio::test]
async fn a_disconnect_after_a_tool_ran_keeps_the_call_and_its_result() {
    let model = common::GatedModel::new([
        reply::tool_call("call_1", "add", r#"{"a": 2, "b": 3}"#),
        reply::text("2 + 3 = 5"),
    ]);
    let store = tinyagent::store::MemoryStore::new();
    let server = Running::start(keyed(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone()),
    ))
    .await;
    model.open(1);
    let mut stream = post_once(&server, "sk-alice", "s", "2 + 3?", "req-1").await;
    let mut buffer = String::new();
    common::read_until(&mut stream, &mut buffer, |f| {
        f.event.as_deref() == Some("tool_call_finished")
    })
    .await;
    // The run now waits for its second model reply; the client goes.
    tokio::time::timeout(common::PATIENCE, model.arrived.notified())
        .await
        .unwrap();
    drop(stream);
    let stored = common::stored_when(&store, &store_key("alice", "s"), |s| s.version == 1).await;
    assert_eq!(stored.owner, "alice");
    let parts: Vec<Value> = stored
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap()["parts"].clone())
        .collect();
    assert_eq!(parts[0][0]["text"], "2 + 3?");
    assert_eq!(parts[1][0]["type"], "tool_call");
    assert_eq!(parts[2][0]["type"], "tool_result");
    assert_eq!(parts[2][0]["content"], "5");
    assert_eq!(parts[2][0]["is_error"], false);
    assert!(stored.messages[3].id.starts_with("interrupted"));
    assert!(
        stored.state.is_empty(),
        "no idempotency record for a cut turn"
    );

    // The retry runs, on the history that holds the tool's result.
    model.open(1);
    let retry = post_once(&server, "sk-alice", "s", "2 + 3?", "req-1").await;
    assert!(retry.headers().get("idempotent-replayed").is_none());
    assert!(retry.text().await.unwrap().contains("2 + 3 = 5"));
    let seen = model.script.requests();
    let last: Vec<String> = seen
        .last()
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert!(last.len() >= 4, "{last:?}");
    // Once answered, the key replays.
    let again = post_once(&server, "sk-alice", "s", "2 + 3?", "req-1").await;
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert!(again.text().await.unwrap().contains("2 + 3 = 5"));
}
