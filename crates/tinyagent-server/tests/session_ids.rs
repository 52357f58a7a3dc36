//! Session ids: invisible format characters (Unicode category Cf: bidirectional controls,
//! zero-width characters) are refused with a 400 naming the character, on every route; and
//! sessions a key stored before each key had ids of its own keep working for it, and for no
//! other key.

mod common;

use std::sync::Arc;

use common::{Running, agent, client};
use serde_json::{Value, json};
use tinyagent::store::{Changes, SessionStore};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{Message, Role};
use tinyagent_server::{Server, store_key};
use tinyagent_store::SqliteStore;

fn model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(
        (1..=4).map(|n| reply::text(format!("answer {n}"))),
    ))
}

/// `text` with every byte outside unreserved ASCII percent-encoded, for a URL's path.
fn escape(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn send(server: &Running, method: reqwest::Method, key: &str, path: &str) -> (u16, Value) {
    let mut request = client()
        .request(method.clone(), server.url(path))
        .bearer_auth(key);
    if method == reqwest::Method::POST {
        request = request.json(&json!({"input": "hi", "decisions": {}}));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn ids_with_invisible_format_characters_are_refused_by_name() {
    let model = model();
    let store = tinyagent::store::MemoryStore::new();
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone())
            .named_api_key("alice", "sk-alice"),
    )
    .await;
    for (id, named) in [
        ("chat\u{202E}1", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("chat\u{200B}1", "U+200B (ZERO WIDTH SPACE)"),
        ("\u{2066}chat\u{2069}", "U+2066 (LEFT-TO-RIGHT ISOLATE)"),
        ("chat\u{FEFF}", "U+FEFF (ZERO WIDTH NO-BREAK SPACE)"),
    ] {
        let path = format!("/v1/sessions/{}", escape(id));
        // A new message doesn't reach the body check: `resume` needs `decisions` alone.
        let post = reqwest::Method::POST;
        for (method, path) in [
            (post.clone(), format!("{path}/messages")),
            (reqwest::Method::GET, path.clone()),
            (reqwest::Method::DELETE, path.clone()),
        ] {
            let (status, body) = send(&server, method.clone(), "sk-alice", &path).await;
            assert_eq!(status, 400, "{method} {id:?}: {body}");
            assert_eq!(body["error"]["code"], "invalid_session_id", "{body}");
            assert_eq!(body["error"]["param"], "id");
            let message = body["error"]["message"].as_str().unwrap();
            assert!(message.contains(named), "{message}");
            assert!(message.contains("format character"), "{message}");
        }
    }
    assert_eq!(model.request_count(), 0);
    assert!(
        store
            .list(&tinyagent::store::ListOptions::new())
            .await
            .unwrap()
            .sessions
            .is_empty()
    );
    // Ids in other scripts are ids like any other.
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        "sk-alice",
        &format!("/v1/sessions/{}/messages", escape("北京-ünï")),
    )
    .await;
    assert_eq!(status, 200);
}

/// A session alice's key stored under its bare id, before each key had ids of its own (its
/// owner `alice` beside it): alice reads, lists and goes on with it; bob's post to that id
/// starts bob's own; the admin key sees it as alice's.
#[tokio::test]
async fn sessions_stored_before_ids_were_per_key_keep_working_for_their_owner() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db"))
        .await
        .unwrap();
    let before = Changes::new()
        .append([Message::user("from before"), Message::assistant("noted")])
        .owner("alice");
    store.commit("chat-1", Some(0), &before).await.unwrap();
    let model = model();
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .store(store.clone())
            .named_api_key("alice", "sk-alice")
            .named_api_key("bob", "sk-bob")
            .admin_key("sk-root"),
    )
    .await;
    let get = reqwest::Method::GET;
    let (status, session) = send(&server, get.clone(), "sk-alice", "/v1/sessions/chat-1").await;
    assert_eq!(status, 200, "{session}");
    assert_eq!(session["messages"][0]["parts"][0]["text"], "from before");
    let (_, page) = send(&server, get.clone(), "sk-alice", "/v1/sessions").await;
    assert_eq!(page["data"][0]["id"], "chat-1");
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        "sk-alice",
        "/v1/sessions/chat-1/messages",
    )
    .await;
    assert_eq!(status, 200);
    let stored = store.load("chat-1").await.unwrap().unwrap();
    assert_eq!(
        stored.messages.len(),
        4,
        "the turn went on in the old session"
    );
    assert_eq!(stored.messages[3].role, Role::Assistant);
    assert!(
        store
            .load(&store_key("alice", "chat-1"))
            .await
            .unwrap()
            .is_none()
    );

    // Bob: nothing to see, and a post of his starts his own session of that id.
    let (status, _) = send(&server, get.clone(), "sk-bob", "/v1/sessions/chat-1").await;
    assert_eq!(status, 404);
    let (status, _) = send(
        &server,
        reqwest::Method::POST,
        "sk-bob",
        "/v1/sessions/chat-1/messages",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        store.load("chat-1").await.unwrap().unwrap().messages.len(),
        4
    );
    let bobs = store
        .load(&store_key("bob", "chat-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!((bobs.owner.as_str(), bobs.messages.len()), ("bob", 2));

    // The admin key sees both as their owners', and reads the old one as alice's.
    let (_, page) = send(&server, get.clone(), "sk-root", "/v1/sessions").await;
    let mut listed: Vec<(String, String)> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_owned(),
                s["owner"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        [
            ("chat-1".to_owned(), "alice".to_owned()),
            ("chat-1".to_owned(), "bob".to_owned())
        ]
    );
    let (status, session) = send(&server, get, "sk-root", "/v1/sessions/chat-1?owner=alice").await;
    assert_eq!(status, 200);
    assert_eq!(session["message_count"], 4);
}
