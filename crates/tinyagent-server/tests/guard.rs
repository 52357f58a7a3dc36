//! What stands in front of the agents: keys, body size, time and concurrency limits, health
//! checks, client disconnects and graceful shutdown.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Dropped, GatedModel, Running, agent, chat, client, frames, read_until, stuck_tool};
use serde_json::{Value, json};
use tinyagent::store::SessionStore;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{LlmAgent, store::MemoryStore};
use tinyagent_server::Server;

fn greeter(replies: usize) -> LlmAgent {
    agent(
        "greeter",
        ScriptedModel::new((0..replies).map(|i| reply::text(format!("Hello #{i}")))),
    )
}

#[tokio::test]
async fn keys_are_required_everywhere_but_health_and_the_page() {
    let server = Running::start(
        Server::new()
            .agent(greeter(2))
            .api_key("sk-first")
            .named_api_key("ops", "sk-second"),
    )
    .await;
    let http = client();
    for (method, path) in [
        ("POST", "/v1/chat/completions"),
        ("GET", "/v1/models"),
        ("GET", "/v1/agents"),
        ("GET", "/v1/sessions"),
        ("GET", "/v1/sessions/s1"),
        ("DELETE", "/v1/sessions/s1"),
        ("POST", "/v1/sessions/s1/messages"),
        ("GET", "/v1/nothing-here"),
    ] {
        for key in [
            None,
            Some("sk-wrong"),
            Some("sk-firs"),
            Some("sk-first-and-more"),
        ] {
            let mut request = http.request(method.parse().unwrap(), server.url(path));
            if let Some(key) = key {
                request = request.bearer_auth(key);
            }
            let response = request.send().await.unwrap();
            assert_eq!(response.status(), 401, "{method} {path} with {key:?}");
            assert_eq!(response.headers()["www-authenticate"], "Bearer");
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"]["type"], "authentication_error");
            let expected = if key.is_some() {
                "invalid_api_key"
            } else {
                "missing_api_key"
            };
            assert_eq!(body["error"]["code"], expected);
            let text = body.to_string();
            assert!(
                !text.contains("sk-first") && !text.contains("sk-second"),
                "{text}"
            );
        }
    }
    // A scheme other than Bearer is no key either.
    let response = http
        .get(server.url("/v1/agents"))
        .basic_auth("sk-first", None::<&str>)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);

    for key in ["sk-first", "sk-second"] {
        let response = http
            .post(server.url("/v1/chat/completions"))
            .bearer_auth(key)
            .json(&chat("greeter", "hi", false))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{key}");
    }
    for path in ["/healthz", "/readyz", "/"] {
        let response = http.get(server.url(path)).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
    }
    let ready: Value = http
        .get(server.url("/readyz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ready, json!({"status": "ready"}));
}

#[tokio::test]
async fn an_oversize_body_is_413() {
    let server = Running::start(Server::new().agent(greeter(1)).max_body_bytes(2048)).await;
    let big = "x".repeat(4096);
    for path in ["/v1/chat/completions", "/v1/sessions/s1/messages"] {
        let response = client()
            .post(server.url(path))
            .json(&json!({"model": "greeter", "agent": "greeter", "input": big, "messages": [{"role": "user", "content": big}]}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 413, "{path}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "request_too_large");
    }
    // Under the limit, the same server answers.
    let response = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("greeter", "hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn one_request_too_many_for_a_key_is_429_and_other_keys_go_on() {
    let model = GatedModel::new([
        reply::text("first"),
        reply::text("second"),
        reply::text("third"),
    ]);
    let server = Running::start(
        Server::new()
            .agent(agent("slow", model.clone()))
            .api_key("sk-a")
            .api_key("sk-b")
            .max_concurrent_per_key(1),
    )
    .await;
    let http = client();
    // A stream in flight holds the key's one slot until it ends.
    let mut first = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-a")
        .json(&chat("slow", "1", true))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 200);

    let refused = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-a")
        .json(&chat("slow", "2", false))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    assert_eq!(refused.headers()["retry-after"], "1");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert_eq!(body["error"]["code"], "concurrency_limit_exceeded");

    // Another key has its own slots.
    model.open(1);
    let mut buffer = String::new();
    read_until(&mut first, &mut buffer, |f| f.data == "[DONE]").await;
    drop(first);
    model.open(1);
    let other = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-b")
        .json(&chat("slow", "3", false))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200);

    // The finished stream gave its slot back.
    model.open(1);
    let again = http
        .post(server.url("/v1/chat/completions"))
        .bearer_auth("sk-a")
        .json(&chat("slow", "4", false))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let body: Value = again.json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "third");
}

#[tokio::test]
async fn an_answer_past_the_time_limit_is_504_or_a_cut_stream() {
    let model = GatedModel::new([]);
    let server = Running::start(
        Server::new()
            .agent(agent("slow", model.clone()))
            .request_timeout(Duration::from_millis(200)),
    )
    .await;
    let response = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("slow", "hi", false))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 504);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "timeout_error");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("0.2 s"),
        "{body}"
    );

    let text = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("slow", "hi", true))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let frames = frames(&text);
    assert_eq!(frames.len(), 2, "{text}");
    assert_eq!(frames[1].json()["error"]["code"], "request_timeout");
}

#[tokio::test]
async fn a_session_stream_past_the_time_limit_ends_with_an_error_event_and_keeps_the_tool_call_interrupted()
 {
    let dropped = Dropped::default();
    let model = ScriptedModel::new([reply::tool_call("c1", "wait", "{}")]);
    let slow = LlmAgent::builder("slow")
        .model(model)
        .tool(stuck_tool(dropped.clone()))
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let server = Running::start(
        Server::new()
            .agent(slow)
            .store(store.clone())
            .request_timeout(Duration::from_millis(300)),
    )
    .await;
    let text = client()
        .post(server.url("/v1/sessions/s1/messages"))
        .json(&json!({"input": "wait"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let frames = frames(&text);
    let kinds: Vec<&str> = frames.iter().map(|f| f.event.as_deref().unwrap()).collect();
    assert_eq!(
        kinds,
        ["usage", "message", "tool_call_started", "error"],
        "{text}"
    );
    let error = frames[3].json();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["code"], "request_timeout");
    dropped.wait("the cut run's tool call is cancelled").await;
    // What the run did is kept: the call, an error result saying it was interrupted, and a
    // closing message.
    let stored = common::stored_when(&store, "s1", |s| s.version == 1).await;
    let roles: Vec<_> = stored.messages.iter().map(|m| m.role).collect();
    use tinyagent::Role::{Assistant, Tool, User};
    assert_eq!(roles, [User, Assistant, Tool, Assistant]);
    assert!(stored.messages[3].id.starts_with("interrupted"));
}

#[tokio::test]
async fn a_client_that_disconnects_cancels_the_run_and_the_session_stays_consistent() {
    let dropped = Dropped::default();
    let model = ScriptedModel::new([
        reply::text("Hello!"),
        reply::tool_call("c1", "wait", "{}"),
        reply::text("Still here."),
    ]);
    let slow = LlmAgent::builder("slow")
        .model(model)
        .tool(stuck_tool(dropped.clone()))
        .build()
        .unwrap();
    let store = MemoryStore::new();
    let server = Running::start(Server::new().agent(slow).store(store.clone())).await;
    let http = client();
    let post = |input: &str| {
        http.post(server.url("/v1/sessions/s1/messages"))
            .json(&json!({"agent": "slow", "input": input}))
            .send()
    };
    let first = post("hi").await.unwrap().text().await.unwrap();
    assert!(first.contains("event: finished"), "{first}");

    let mut second = post("wait for it").await.unwrap();
    let mut buffer = String::new();
    read_until(&mut second, &mut buffer, |f| {
        f.event.as_deref() == Some("tool_call_started")
    })
    .await;
    assert!(!dropped.get());
    drop(second);
    dropped
        .wait("the run's tool call is cancelled when its client goes")
        .await;

    // The finished run is stored, and of the cut one the tool call, marked interrupted; the
    // session is free for the next one.
    let stored = common::stored_when(&store, "s1", |s| s.version == 2).await;
    let texts: Vec<String> = stored.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts[..3], ["hi", "Hello!", "wait for it"]);
    assert_eq!(stored.messages.len(), 6);
    assert!(stored.messages[5].id.starts_with("interrupted"));
    let third = post("still there?").await.unwrap().text().await.unwrap();
    assert!(third.contains("Still here."), "{third}");
    assert_eq!(store.load("s1").await.unwrap().unwrap().messages.len(), 8);
}

#[tokio::test]
async fn shutdown_lets_a_stream_in_flight_finish() {
    let model = GatedModel::new([reply::text("goodbye")]);
    let mut server = Running::start(
        Server::new()
            .agent(agent("slow", model.clone()))
            .drain_timeout(common::PATIENCE),
    )
    .await;
    let mut stream = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("slow", "hi", true))
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    read_until(&mut stream, &mut buffer, |_| true).await;
    server.shut_down();
    // The server stops taking connections while the answer runs.
    let until = tokio::time::Instant::now() + common::PATIENCE;
    loop {
        let fresh = reqwest::Client::new()
            .get(server.url("/healthz"))
            .send()
            .await;
        if fresh.is_err() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < until,
            "the server still accepts connections"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!server.task.is_finished());
    model.open(1);
    let frames = read_until(&mut stream, &mut buffer, |f| f.data == "[DONE]").await;
    let content: String = frames
        .iter()
        .filter(|f| f.data != "[DONE]")
        .filter_map(|f| {
            f.json()["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(content, "goodbye");
    drop(stream);
    let result = tokio::time::timeout(common::PATIENCE, &mut server.task)
        .await
        .expect("the server stops once the stream is over")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn the_drain_timeout_cuts_answers_that_do_not_finish() {
    let model = GatedModel::new([]);
    let mut server = Running::start(
        Server::new()
            .agent(agent("slow", model.clone()))
            .drain_timeout(Duration::from_millis(100)),
    )
    .await;
    let mut stream = client()
        .post(server.url("/v1/chat/completions"))
        .json(&chat("slow", "hi", true))
        .send()
        .await
        .unwrap();
    let mut buffer = String::new();
    read_until(&mut stream, &mut buffer, |_| true).await;
    server.shut_down();
    let result = tokio::time::timeout(common::PATIENCE, &mut server.task)
        .await
        .expect("the server stops after its drain timeout")
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
}

#[tokio::test]
async fn readyz_is_503_when_the_store_fails() {
    let store = Arc::new(MemoryStore::new());
    let server = Running::start(
        Server::new()
            .agent(greeter(0))
            .store(Arc::new(FailingStore(store))),
    )
    .await;
    let response = client().get(server.url("/readyz")).send().await.unwrap();
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"status": "store_unavailable"}));
    let healthz = client().get(server.url("/healthz")).send().await.unwrap();
    assert_eq!(healthz.status(), 200);
    // A session read answers 503 too, without the backend's details.
    let response = client()
        .get(server.url("/v1/sessions/s1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 503);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "store_unavailable");
    assert!(!body.to_string().contains("disk on fire"));
}

/// A store whose every call fails as a backend error.
struct FailingStore(Arc<MemoryStore>);

mod failing {
    use super::FailingStore;
    use serde_json::Value;
    use std::time::Duration;
    use tinyagent::BoxFuture;
    use tinyagent::store::{
        Changes, ListOptions, SessionInfo, SessionLock, SessionPage, SessionStore, StoreError,
        StoredSession,
    };

    fn fail<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T, StoreError>> {
        Box::pin(async { Err(StoreError::backend("test", "disk on fire")) })
    }

    impl SessionStore for FailingStore {
        fn load<'a>(
            &'a self,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Option<StoredSession>, StoreError>> {
            fail()
        }
        fn create<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<SessionInfo, StoreError>> {
            fail()
        }
        fn commit<'a>(
            &'a self,
            _: &'a str,
            _: Option<u64>,
            _: &'a Changes,
        ) -> BoxFuture<'a, Result<u64, StoreError>> {
            fail()
        }
        fn list<'a>(
            &'a self,
            _: &'a ListOptions,
        ) -> BoxFuture<'a, Result<SessionPage, StoreError>> {
            fail()
        }
        fn delete<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, StoreError>> {
            fail()
        }
        fn set_ttl<'a>(
            &'a self,
            _: &'a str,
            _: Option<Duration>,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            fail()
        }
        fn lock<'a>(
            &'a self,
            id: &'a str,
            wait: Option<Duration>,
        ) -> BoxFuture<'a, Result<SessionLock, StoreError>> {
            self.0.lock(id, wait)
        }
        fn get_state<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
        ) -> BoxFuture<'a, Result<Option<Value>, StoreError>> {
            fail()
        }
        fn set_state<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: Value,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            fail()
        }
        fn remove_state<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
        ) -> BoxFuture<'a, Result<(), StoreError>> {
            fail()
        }
    }
}

#[tokio::test]
async fn the_routes_mount_under_a_prefix_in_an_app_of_ones_own() {
    let routes = Server::new()
        .agent(greeter(1))
        .api_key("sk-mounted")
        .router();
    let app = axum::Router::new()
        .route("/", axum::routing::get(|| async { "the app's own page" }))
        .nest("/agents", routes);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let http = client();
    let own = http
        .get(format!("{base}/"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(own, "the app's own page");
    let page = http.get(format!("{base}/agents")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<title>tinyagent</title>")
    );
    let refused = http
        .get(format!("{base}/agents/v1/agents"))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let answer: Value = http
        .post(format!("{base}/agents/v1/chat/completions"))
        .bearer_auth("sk-mounted")
        .json(&chat("greeter", "hi", false))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "Hello #0");
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let server = Running::start(
        Server::new()
            .agent(greeter(1))
            .body_timeout(Duration::from_millis(200)),
    )
    .await;
    let addr = server.base.trim_start_matches("http://").to_owned();
    let mut socket = tokio::net::TcpStream::connect(&addr).await.unwrap();
    // Headers promising 100 bytes, then 10 of them, then nothing.
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"model\":"
    );
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 4096];
    let read = tokio::time::timeout(common::PATIENCE, socket.read(&mut answer))
        .await
        .expect("the server answers a stalled body")
        .unwrap();
    let text = String::from_utf8_lossy(&answer[..read]);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"code\":\"request_timeout\""), "{text}");
}
