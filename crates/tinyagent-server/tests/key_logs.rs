//! Logs name API keys and never show their secrets. A test binary of its own: tracing caches
//! which callsites are enabled across threads, so a subscriber set for one test thread is only
//! reliable when no other test runs in the process.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};

use common::{Running, agent, client};
use serde_json::json;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::{RateLimit, Server};

async fn status(server: &Running, key: &str, method: reqwest::Method, path: &str) -> u16 {
    let mut request = client()
        .request(method.clone(), server.url(path))
        .bearer_auth(key);
    if method == reqwest::Method::POST {
        request = request.json(&json!({"input": "hi"}));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    response.text().await.unwrap();
    status
}

/// A writer into a buffer, for the logs.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Logs;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

// One thread: the server's tasks log to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn logs_name_keys_and_never_show_their_secrets() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let server = Running::start(
        Server::new()
            .agent(agent(
                "calc",
                Arc::new(ScriptedModel::new([reply::text("hello")])),
            ))
            .named_api_key("alice", "sk-alice-secret-1")
            .api_key("sk-plain-secret-2")
            .named_admin_key("ops", "sk-ops-secret-3")
            .rate_limit(RateLimit::per_minute(2)),
    )
    .await;
    let post = reqwest::Method::POST;
    assert_eq!(
        status(
            &server,
            "sk-alice-secret-1",
            post,
            "/v1/sessions/s1/messages"
        )
        .await,
        200
    );
    assert_eq!(
        status(
            &server,
            "sk-plain-secret-2",
            reqwest::Method::GET,
            "/v1/sessions"
        )
        .await,
        200
    );
    assert_eq!(
        status(
            &server,
            "sk-ops-secret-3",
            reqwest::Method::GET,
            "/v1/sessions"
        )
        .await,
        200
    );
    assert_eq!(
        status(&server, "sk-wrong", reqwest::Method::GET, "/v1/sessions").await,
        401
    );
    // Over alice's rate: refused, and logged under her name too.
    assert_eq!(
        status(
            &server,
            "sk-alice-secret-1",
            reqwest::Method::GET,
            "/v1/sessions"
        )
        .await,
        200
    );
    assert_eq!(
        status(
            &server,
            "sk-alice-secret-1",
            reqwest::Method::GET,
            "/v1/sessions"
        )
        .await,
        429
    );
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    for name in ["key=\"alice\"", "key=\"key-2\"", "key=\"ops\""] {
        assert!(text.contains(name), "{name} is not in the logs:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.contains("status=429") && l.contains("key=\"alice\"")),
        "{text}"
    );
    for secret in [
        "sk-alice-secret-1",
        "sk-plain-secret-2",
        "sk-ops-secret-3",
        "sk-wrong",
    ] {
        assert!(!text.contains(secret), "{secret} was logged:\n{text}");
    }
}
