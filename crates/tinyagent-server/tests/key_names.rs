//! Key names decide who a request is for, so they must never collide or move: two keys of one
//! name (the admin key's included) are refused before the server starts, admin rights are the
//! admin key's own, and a key given without a name keeps its name (derived from its secret)
//! whatever other keys come and go, across restarts.

mod common;

use std::sync::Arc;

use common::{Running, agent, client};
use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::{ServeError, Server};
use tinyagent_store::SqliteStore;

fn model() -> Arc<ScriptedModel> {
    Arc::new(ScriptedModel::new(
        (1..=8).map(|n| reply::text(format!("answer {n}"))),
    ))
}

fn loopback() -> std::net::SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn status(server: &Running, key: &str, method: reqwest::Method, path: &str) -> (u16, Value) {
    let mut request = client()
        .request(method.clone(), server.url(path))
        .bearer_auth(key);
    if method == reqwest::Method::POST {
        request = request.json(&json!({"input": "hi"}));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_key_named_like_the_admin_key_is_refused_and_gains_nothing() {
    // `--server-key admin=sk-low --admin-key sk-root`: the admin key's default name, twice.
    let server = Server::new()
        .agent(agent("calc", model()))
        .named_api_key("admin", "sk-low")
        .admin_key("sk-root");
    let err = server.check(loopback()).unwrap_err();
    assert!(
        matches!(&err, ServeError::DuplicateKeyName { name, admin: true } if name == "admin"),
        "{err}"
    );
    assert!(err.to_string().contains("\"admin\""), "{err}");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = server.serve(listener, async {}).await.unwrap_err();
    assert!(
        matches!(refused, ServeError::DuplicateKeyName { .. }),
        "{refused}"
    );

    // Mounted as routes (which cannot refuse to start), both keys are refused: the server
    // fails closed, neither open to all nor an admin by name.
    let app = Server::new()
        .agent(agent("calc", model()))
        .named_api_key("admin", "sk-low")
        .admin_key("sk-root")
        .named_api_key("carol", "sk-carol")
        .router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    for (key, want) in [
        ("sk-low", 401),
        ("sk-root", 401),
        ("sk-carol", 200),
        ("", 401),
    ] {
        let response = client()
            .get(format!("{base}/v1/sessions"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), want, "{key}");
    }

    // Two API keys of one name, and one secret given twice, are refused too.
    let twice = Server::new()
        .agent(agent("calc", model()))
        .named_api_key("dave", "sk-1")
        .named_api_key("dave", "sk-2");
    assert!(matches!(
        twice.check(loopback()),
        Err(ServeError::DuplicateKeyName { admin: false, .. })
    ));
    let same = Server::new()
        .agent(agent("calc", model()))
        .named_api_key("dave", "sk-1")
        .named_api_key("erin", "sk-1");
    let err = same.check(loopback()).unwrap_err();
    assert!(matches!(err, ServeError::DuplicateKey { .. }), "{err}");
    assert!(
        !err.to_string().contains("sk-1"),
        "the secret is never shown: {err}"
    );
}

#[tokio::test]
async fn admin_rights_are_the_admin_keys_own_not_its_names() {
    let telemetry = tinyagent_otel::Telemetry::builder()
        .env(false)
        .prometheus(true)
        .build()
        .unwrap();
    // A key named `admin` beside an admin key named otherwise: no collision, no rights.
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model()))
            .named_api_key("admin", "sk-low")
            .named_api_key("alice", "sk-alice")
            .named_admin_key("ops", "sk-root")
            .metrics(telemetry.prometheus().unwrap().clone()),
    )
    .await;
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;
    assert_eq!(
        status(&server, "sk-alice", post, "/v1/sessions/a1/messages")
            .await
            .0,
        200
    );
    let (code, body) = status(&server, "sk-low", get.clone(), "/metrics").await;
    assert_eq!(code, 403, "{body}");
    let (_, page) = status(&server, "sk-low", get.clone(), "/v1/sessions").await;
    assert_eq!(page["key"], json!({"name": "admin", "admin": false}));
    assert_eq!(
        page["data"],
        json!([]),
        "another key's sessions are not listed"
    );
    let (code, _) = status(
        &server,
        "sk-low",
        get.clone(),
        "/v1/sessions/a1?owner=alice",
    )
    .await;
    assert_eq!(code, 403);
    // The admin key, whatever its name, is the admin.
    assert_eq!(
        status(&server, "sk-root", get.clone(), "/metrics").await.0,
        200
    );
    let (_, page) = status(&server, "sk-root", get.clone(), "/v1/sessions").await;
    assert_eq!(page["key"], json!({"name": "ops", "admin": true}));
    assert_eq!(page["data"][0]["owner"], "alice");
    let (code, _) = status(&server, "sk-root", get, "/v1/sessions/a1?owner=alice").await;
    assert_eq!(code, 200);
}

/// Unnamed keys are named after their secrets: adding or removing other keys (or naming one
/// `key-2`) moves no sessions, across restarts on one SQLite file.
#[tokio::test]
async fn an_unnamed_keys_name_does_not_move_when_other_keys_come_and_go() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let erin = Server::new().api_key("erin-secret");
    let erin_name = erin.key_names().next().unwrap().to_owned();
    assert!(
        erin_name.starts_with("key-") && erin_name.len() == 12,
        "{erin_name}"
    );
    assert_eq!(
        Server::new()
            .api_key("dave-secret")
            .api_key("erin-secret")
            .key_names()
            .nth(1),
        Some(erin_name.as_str()),
        "a key's name does not depend on its place"
    );

    let start = |keys: &[(&str, &str)]| {
        let path = path.clone();
        let keys: Vec<(String, String)> = keys
            .iter()
            .map(|(n, k)| ((*n).to_owned(), (*k).to_owned()))
            .collect();
        async move {
            let store = SqliteStore::open(&path).await.unwrap();
            let server = keys.into_iter().fold(
                Server::new().agent(agent("calc", model())).store(store),
                |server, (name, key)| server.named_api_key(name, key),
            );
            Running::start(server).await
        }
    };
    let post = reqwest::Method::POST;
    let get = reqwest::Method::GET;
    // Two unnamed keys; each starts a session.
    let mut first = start(&[("", "dave-secret"), ("", "erin-secret")]).await;
    assert_eq!(
        status(
            &first,
            "dave-secret",
            post.clone(),
            "/v1/sessions/dave-1/messages"
        )
        .await
        .0,
        200
    );
    assert_eq!(
        status(
            &first,
            "erin-secret",
            post.clone(),
            "/v1/sessions/erin-1/messages"
        )
        .await
        .0,
        200
    );
    first.shut_down();
    first.task.await.unwrap().unwrap();

    // The first key is removed: the other keeps its sessions, and gains none.
    let mut second = start(&[("", "erin-secret")]).await;
    let (code, page) = status(&second, "erin-secret", get.clone(), "/v1/sessions").await;
    assert_eq!(code, 200);
    let ids: Vec<&str> = page["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["erin-1"], "{page}");
    assert_eq!(page["key"]["name"], erin_name.as_str());
    assert_eq!(
        status(&second, "erin-secret", get.clone(), "/v1/sessions/erin-1")
            .await
            .0,
        200
    );
    second.shut_down();
    second.task.await.unwrap().unwrap();

    // `--server-key key-2=dave-secret --server-key erin-secret`: a name like the old
    // positional ones takes nobody's sessions.
    let third = start(&[("key-2", "dave-secret"), ("", "erin-secret")]).await;
    let (_, page) = status(&third, "dave-secret", get.clone(), "/v1/sessions").await;
    assert_eq!(page["data"], json!([]), "{page}");
    let (_, page) = status(&third, "erin-secret", get, "/v1/sessions").await;
    assert_eq!(page["data"].as_array().unwrap().len(), 1, "{page}");
    assert_eq!(page["data"][0]["id"], "erin-1");
}
