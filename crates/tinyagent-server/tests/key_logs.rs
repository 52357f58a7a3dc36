//! Logs name API keys and never show their secrets, nor a provider URL's user name or
//! password; an A2A task's failure names its request id, which its log lines carry too. A test
//! binary of its own, with one test: tracing caches which callsites are enabled across threads,
//! so a subscriber set for one test thread is only reliable when no other test runs in the
//! process.

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

// One thread: the server's tasks (an A2A task's run included) log to this test's subscriber.
#[tokio::test(flavor = "current_thread")]
async fn logs_name_keys_and_requests_and_never_show_secrets() {
    let logs = Logs::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(logs.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    keys_are_named_never_shown(&logs).await;
    a2a_failures_name_their_request(&logs).await;
}

async fn keys_are_named_never_shown(logs: &Logs) {
    let plain = Server::new().api_key("sk-plain-secret-2");
    let plain_name = plain.key_names().next().unwrap().to_owned();
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
    let plain_key = format!("key=\"{plain_name}\"");
    for name in ["key=\"alice\"", plain_key.as_str(), "key=\"ops\""] {
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

/// A model server that refuses connections, at a URL with a user name and a password.
async fn unreachable_provider() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://proxyuser:hunter2@{addr}/v1")
}

/// An A2A task whose model fails: its failure names the request id the answer's header
/// carries, and the server's log line about it names the same id, with the provider's URL
/// shown without its user name or password (as in the other APIs' failures).
async fn a2a_failures_name_their_request(logs: &Logs) {
    use tinyagent_openai::HttpConfig;
    let model = tinyagent_openai::OpenAiModel::new(
        tinyagent_openai::OpenAiConfig::new("gpt-test")
            .base_url(unreachable_provider().await)
            .api_key("sk-provider")
            .max_retries(0),
    )
    .unwrap();
    let server = Running::start(
        Server::new()
            .agent(agent("desk", model))
            .named_api_key("alice", "sk-alice"),
    )
    .await;
    let response = client()
        .post(server.url("/a2a/desk"))
        .bearer_auth("sk-alice")
        .json(
            &json!({"jsonrpc": "2.0", "id": "r1", "method": "message/send",
            "params": {"message": {"kind": "message", "messageId": "m1", "role": "user",
                "parts": [{"kind": "text", "text": "hi"}]}}}),
        )
        .send()
        .await
        .unwrap();
    let request_id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(request_id.starts_with("req_"), "{request_id}");
    let sent: serde_json::Value = response.json().await.unwrap();
    let status = &sent["result"]["status"];
    assert_eq!(status["state"], "failed", "{sent}");
    let text = status["message"]["parts"][0]["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "the agent's model failed; the server's log has the details under request id \
             {request_id}"
        )
    );

    // A chat completion of the same model fails the same way.
    let chat = client()
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-alice")
        .json(&common::chat("desk", "hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status(), 502);

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let failure = text
        .lines()
        .find(|l| l.contains("agent run failed") && l.contains(&request_id))
        .unwrap_or_else(|| panic!("no log line of the A2A failure names {request_id}:\n{text}"));
    assert!(
        failure.contains(&format!("request_id=\"{request_id}\"")),
        "{failure}"
    );
    assert!(failure.contains("[REDACTED]@127.0.0.1"), "{failure}");
    assert!(
        !text.lines().any(|l| l.contains("request_id=\"\"")),
        "a log line names no request:\n{text}"
    );
    for secret in ["proxyuser", "hunter2", "sk-provider"] {
        assert!(!text.contains(secret), "{secret} was logged:\n{text}");
    }
}
