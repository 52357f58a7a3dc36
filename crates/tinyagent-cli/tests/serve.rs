//! `tinyagent serve` end to end: the binary on an ephemeral loopback port, its model a loopback
//! server replaying the demo's hand-built Chat Completions streams
//! (`tinyagent-demo/tests/fixtures`), its sessions in an SQLite file; a client talks to it
//! over both APIs, and SIGTERM stops it.
#![cfg(unix)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{BIN, PATIENCE, Serving, answer_stream, model_server, service_url, start};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const WEATHER_ANSWER: &str = "北京现在晴，气温 22.5°C，湿度 45%。";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_openai_clients_and_keeps_sessions_in_sqlite() {
    let model = model_server(&[
        "1_weather_call.sse",
        "2_weather_answer.sse",
        "1_weather_call.sse",
        "2_weather_answer.sse",
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sessions.db");
    let base_url = format!("{}/v1", model.uri());
    let store = format!("sqlite:{}", db.display());
    let mut serving = start(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--server-key",
        "sk-serve-test",
        "--agent-name",
        "weather",
        "--base-url",
        &base_url,
        "--api-key",
        "sk-model",
    ]);
    let http = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    chat_completions_need_a_key_and_run_the_tool(&http, &serving.base).await;
    the_session_api_keeps_the_turn(&http, &serving.base).await;
    sigterm_stops_it_cleanly_with_a_log_line_per_request(&mut serving);
    sessions_outlive_the_process(&http, &store, &base_url).await;
}

/// Chat Completions on the server at `base`: 401 in OpenAI's shape without a key, and with one
/// an answer from the weather tool, which runs in the server.
async fn chat_completions_need_a_key_and_run_the_tool(http: &reqwest::Client, base: &str) {
    let url = |p: &str| format!("{base}{p}");

    // No key: 401 in OpenAI's shape.
    let response = http
        .post(url("/v1/chat/completions"))
        .json(&json!({"model": "weather", "messages": [{"role": "user", "content": "北京天气怎么样？"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "authentication_error");

    // A chat completion: the weather tool runs in the server.
    let answer: Value = http
        .post(url("/v1/chat/completions"))
        .bearer_auth("sk-serve-test")
        .json(&json!({"model": "weather", "messages": [{"role": "user", "content": "北京天气怎么样？"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], WEATHER_ANSWER,
        "{answer}"
    );
    let events = answer["tinyagent"]["events"].as_array().unwrap();
    assert_eq!(events[0]["name"], "get_weather");
    assert_eq!(events[0]["arguments"]["city"], "北京");
    assert!(
        events[1]["content"].as_str().unwrap().contains("22.5"),
        "{events:?}"
    );
}

/// The session API on the server at `base`: a streamed turn to `cli-1`, stored in the SQLite
/// file and read back.
async fn the_session_api_keeps_the_turn(http: &reqwest::Client, base: &str) {
    let url = |p: &str| format!("{base}{p}");

    // The session API, stored in the SQLite file.
    let stream = http
        .post(url("/v1/sessions/cli-1/messages"))
        .bearer_auth("sk-serve-test")
        .json(&json!({"input": "北京天气怎么样？"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let text = stream.text().await.unwrap();
    assert!(text.contains("event: tool_call_finished"), "{text}");
    assert!(text.contains("event: finished"), "{text}");
    let session: Value = http
        .get(url("/v1/sessions/cli-1"))
        .bearer_auth("sk-serve-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["message_count"], 4, "{session}");
    assert_eq!(session["messages"][3]["parts"][0]["text"], WEATHER_ANSWER);
}

/// SIGTERM: a clean stop, with a log line per request on the way, naming the key (not its
/// secret) that made it.
fn sigterm_stops_it_cleanly_with_a_log_line_per_request(serving: &mut Serving) {
    let status = Command::new("kill")
        .args(["-TERM", &serving.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut lines = Vec::new();
    while let Ok(line) = serving.stderr.recv_timeout(PATIENCE) {
        lines.push(line);
    }
    let exit = serving.child.wait().unwrap();
    assert!(exit.success(), "{exit:?}; stderr: {lines:#?}");
    let requests: Vec<&String> = lines.iter().filter(|l| l.contains("request")).collect();
    assert!(
        requests
            .iter()
            .any(|l| l.contains("status=401") && l.contains("path=\"/v1/chat/completions\"")),
        "{lines:#?}"
    );
    // A key given alone is named after its secret, the same at every start.
    let name = tinyagent_server::Server::new()
        .api_key("sk-serve-test")
        .key_names()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        requests
            .iter()
            .any(|l| l.contains("status=200") && l.contains(&format!("key=\"{name}\""))),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("sk-serve-test")),
        "the key was logged: {lines:#?}"
    );
}

/// The sessions outlive the process, for the key that made them, whatever other keys come: a
/// second process on the same `store` shows `cli-1` to its key and 404 to another.
async fn sessions_outlive_the_process(http: &reqwest::Client, store: &str, base_url: &str) {
    // A key given alone keeps its name (the old names by place gave them to the first key).
    let mut again = start(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        store,
        "--server-key",
        "k2",
        "--server-key",
        "sk-serve-test",
        "--base-url",
        base_url,
    ]);
    let session: Value = http
        .get(format!("{}/v1/sessions/cli-1", again.base))
        .bearer_auth("sk-serve-test")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["message_count"], 4);
    let theirs = http
        .get(format!("{}/v1/sessions/cli-1", again.base))
        .bearer_auth("k2")
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 404);
    let _ = again.child.kill();
}

#[test]
fn serve_refuses_an_open_address_without_keys() {
    let out = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--base-url",
            "http://127.0.0.1:9/v1",
        ])
        .env_remove("TINYAGENT_API_KEYS")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without API keys"), "{stderr}");
    assert!(stderr.contains("--server-key"), "{stderr}");
}

/// Keys whose names collide are refused at start, in one line and a hint, exit 2: the admin
/// key's name (`admin` unless named) given to another key, two keys of one name, one secret
/// twice.
#[test]
fn serve_refuses_keys_it_cannot_tell_apart() {
    /// The flags, the environment, what the error says and what its hint says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 4] = [
        (
            &["--server-key", "admin=sk-low", "--admin-key", "sk-root"],
            &[],
            "two API keys are named \"admin\" (one of them the admin key",
            "--admin-key NAME=KEY",
        ),
        (
            &[],
            &[
                ("TINYAGENT_API_KEYS", "admin=sk-low"),
                ("TINYAGENT_ADMIN_KEY", "sk-root"),
            ],
            "two API keys are named \"admin\" (one of them the admin key",
            "--admin-key NAME=KEY",
        ),
        (
            &["--server-key", "dave=sk-1", "--server-key", "dave=sk-2"],
            &[],
            "two API keys are named \"dave\"",
            "--server-key NAME=KEY",
        ),
        (
            &["--server-key", "dave=sk-1", "--server-key", "erin=sk-1"],
            &[],
            "the keys named \"dave\" and \"erin\" have the same secret",
            "a secret is one key",
        ),
    ];
    for (args, env, says, hint) in cases {
        let out = Command::new(BIN)
            .arg("serve")
            .args([
                "--listen",
                "127.0.0.1:0",
                "--base-url",
                "http://127.0.0.1:9/v1",
            ])
            .args(args)
            .env_remove("TINYAGENT_API_KEYS")
            .env_remove("TINYAGENT_ADMIN_KEY")
            .envs(env.iter().copied())
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{stderr}");
        assert!(lines[0].starts_with("error: "), "{stderr}");
        assert!(lines[0].contains(says), "{args:?} {env:?}: {stderr}");
        assert!(
            lines[1].starts_with("hint: ") && lines[1].contains(hint),
            "{stderr}"
        );
        for secret in ["sk-low", "sk-root", "sk-1", "sk-2"] {
            assert!(!stderr.contains(secret), "{secret} shown: {stderr}");
        }
    }
}

#[test]
fn serve_mcp_refuses_an_open_address_without_a_token() {
    let out = Command::new(BIN)
        .args(["serve-mcp", "--http", "0.0.0.0:0"])
        .env_remove("TINYAGENT_MCP_TOKEN")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without a bearer token"), "{stderr}");
    assert!(stderr.contains("--allow-unauthenticated"), "{stderr}");
}

#[test]
fn serve_rejects_an_unknown_client_instructions_policy() {
    let out = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--client-instructions",
            "merge",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("below, deny or allow"), "{stderr}");
}

#[test]
fn serve_names_a_bad_store() {
    let out = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--store", "mysql://x/y"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a store"), "{stderr}");
}

/// Two `tinyagent serve` processes on one shared store answer one conversation in turns; one
/// is killed in the middle of an answer, and the other finishes that turn from its journal
/// before it answers the next: nothing is lost.
async fn two_processes_share_a_conversation(store: &str) {
    let model = replica_model().await;
    let base_url = format!("{}/v1", model.uri());
    let args = [
        "--listen",
        "127.0.0.1:0",
        "--store",
        store,
        "--server-key",
        "sk-replicas",
        "--server-key",
        "other=sk-other",
        "--session-lease",
        "1",
        "--base-url",
        &base_url,
        "--api-key",
        "sk-model",
    ];
    let mut a = start(&args);
    let b = start(&args);
    let http = reqwest::Client::builder()
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let session = format!("replicas-{}", std::process::id());
    let first = post_turn(&http, &a.base, &session, "turn 1").await.unwrap();
    assert!(first.contains("\"answer\":\"answer 1\""), "{first}");
    let second = post_turn(&http, &b.base, &session, "turn 2").await.unwrap();
    assert!(second.contains("\"answer\":\"answer 2\""), "{second}");
    a_dies_in_the_middle_of_turn_three(&http, &model, &mut a, &session).await;
    b_finishes_turn_three_then_answers_turn_four(&http, &model, &b.base, &session).await;
    the_conversation_is_the_first_keys(&http, &model, &b.base, &session).await;
}

/// The model of the replicas: answers 1 and 2, a third sent only after two minutes, answer 3
/// (to the turn finished by the other replica), answer 4, and the other key's answer, each
/// once.
async fn replica_model() -> MockServer {
    let model = MockServer::start().await;
    let respond = |text: &str| {
        ResponseTemplate::new(200).set_body_raw(answer_stream(text), "text/event-stream")
    };
    for (text, delay) in [
        ("answer 1", 0),
        ("answer 2", 0),
        ("answer 3, never sent", 120),
        ("answer 3", 0),
        ("answer 4", 0),
        ("the other key's answer", 0),
    ] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(respond(text).set_delay(Duration::from_secs(delay)))
            .up_to_n_times(1)
            .mount(&model)
            .await;
    }
    model
}

/// Posts `input` to `session` on the server at `base` with the replicas' key: the streamed
/// events, as text.
fn post_turn(
    http: &reqwest::Client,
    base: &str,
    session: &str,
    input: &'static str,
) -> impl Future<Output = reqwest::Result<String>> + Send + use<> {
    let request = http
        .post(format!("{base}/v1/sessions/{session}/messages"))
        .bearer_auth("sk-replicas")
        .json(&json!({"input": input}));
    async move { request.send().await?.text().await }
}

/// Turn 3 on A: the model is slow; A is killed while it waits, and the client of turn 3 never
/// gets an answer.
async fn a_dies_in_the_middle_of_turn_three(
    http: &reqwest::Client,
    model: &MockServer,
    a: &mut Serving,
    session: &str,
) {
    let third = tokio::spawn(post_turn(http, &a.base, session, "turn 3"));
    let until = std::time::Instant::now() + PATIENCE;
    while model.received_requests().await.unwrap_or_default().len() < 3 {
        assert!(
            std::time::Instant::now() < until,
            "turn 3 never reached the model"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    // The client of turn 3 sees its connection cut (or an error), never an answer.
    if let Ok(text) = third.await.unwrap() {
        assert!(!text.contains("event: finished"), "{text}");
    }
}

/// B, once A's hold on the session has lapsed, first finishes turn 3 from its journal (the
/// question was recorded, the model's answer was not: it is asked again), then answers turn 4
/// from turns 1-3; the stored history is every turn.
async fn b_finishes_turn_three_then_answers_turn_four(
    http: &reqwest::Client,
    model: &MockServer,
    b: &str,
    session: &str,
) {
    let fourth = post_turn(http, b, session, "turn 4").await.unwrap();
    assert!(fourth.contains("\"answer\":\"answer 4\""), "{fourth}");
    let requests = model.received_requests().await.unwrap();
    let seen = |k: usize| -> Vec<String> {
        let body: Value = serde_json::from_slice(&requests[k].body).unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] != "system")
            .map(|m| m["content"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert_eq!(
        seen(3),
        ["turn 1", "answer 1", "turn 2", "answer 2", "turn 3"]
    );
    assert_eq!(
        seen(4),
        [
            "turn 1", "answer 1", "turn 2", "answer 2", "turn 3", "answer 3", "turn 4"
        ]
    );
    let stored: Value = http
        .get(format!("{b}/v1/sessions/{session}"))
        .bearer_auth("sk-replicas")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let texts: Vec<&str> = stored["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["parts"][0]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            "turn 1", "answer 1", "turn 2", "answer 2", "turn 3", "answer 3", "turn 4", "answer 4"
        ]
    );
}

/// The conversation is the first key's: the other key gets 404 for it and does not see it
/// listed, and its post to that id is a post to a session of its own. Both keys then delete
/// their sessions.
async fn the_conversation_is_the_first_keys(
    http: &reqwest::Client,
    model: &MockServer,
    b: &str,
    session: &str,
) {
    let url = format!("{b}/v1/sessions/{session}");
    let theirs = http.get(&url).bearer_auth("sk-other").send().await.unwrap();
    assert_eq!(theirs.status(), 404);
    let theirs = http
        .post(format!("{url}/messages"))
        .bearer_auth("sk-other")
        .json(&json!({"input": "let me in"}))
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 200);
    let text = theirs.text().await.unwrap();
    assert!(text.contains("the other key's answer"), "{text}");
    let ours: Value = http
        .get(&url)
        .bearer_auth("sk-replicas")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ours["message_count"], 8, "untouched: {ours}");
    for (key, listed) in [("sk-other", true), ("sk-replicas", true)] {
        let page: Value = http
            .get(format!("{b}/v1/sessions?limit=200"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let ids: Vec<&str> = page["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids.contains(&session), listed, "{key}: {page}");
    }
    assert_eq!(model.received_requests().await.unwrap().len(), 6);
    let theirs = http
        .delete(&url)
        .bearer_auth("sk-other")
        .send()
        .await
        .unwrap();
    assert_eq!(theirs.status(), 200, "the other key deletes its own");
    let deleted = http
        .delete(format!("{b}/v1/sessions/{session}"))
        .bearer_auth("sk-replicas")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_share_a_conversation_in_postgres() {
    let Some(url) = service_url("TINYAGENT_TEST_POSTGRES_URL") else {
        return;
    };
    two_processes_share_a_conversation(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_serve_processes_share_a_conversation_in_redis() {
    let Some(url) = service_url("TINYAGENT_TEST_REDIS_URL") else {
        return;
    };
    two_processes_share_a_conversation(&url).await;
}
