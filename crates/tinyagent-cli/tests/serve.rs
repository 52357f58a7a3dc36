//! `tinyagent serve` end to end: the binary on an ephemeral loopback port, its model a loopback
//! server replaying the demo's hand-built Chat Completions streams
//! (`tinyagent-examples/tests/fixtures`), its sessions in an SQLite file; a client talks to it
//! over both APIs, and SIGTERM stops it.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");
const WEATHER_ANSWER: &str = "北京现在晴，气温 22.5°C，湿度 45%。";
const PATIENCE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-examples/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

async fn model_server(replies: &[&str]) -> MockServer {
    let server = MockServer::start().await;
    for name in replies {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(fixture(name), "text/event-stream"),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    server
}

/// The running command, killed if the test fails before it stops it.
struct Serving {
    child: Child,
    base: String,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Serving {
    let mut child = Command::new(BIN)
        .arg("serve")
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TINYAGENT_API_KEYS")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start tinyagent serve");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let base = loop {
        let line = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
            panic!("tinyagent serve printed no address; stderr so far: {seen:#?}")
        });
        if let Some(rest) = line.split("on http://").nth(1) {
            let addr = rest.split('/').next().unwrap();
            break format!("http://{addr}");
        }
        seen.push(line);
    };
    Serving {
        child,
        base,
        stderr: rx,
    }
}

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
    let url = |p: &str| format!("{}{p}", serving.base);

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

    // SIGTERM: a clean stop, with a log line per request on the way.
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
    assert!(
        requests
            .iter()
            .any(|l| l.contains("status=200") && l.contains("key=\"key-1\"")),
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("sk-serve-test")),
        "the key was logged: {lines:#?}"
    );

    // The sessions outlive the process.
    let mut again = start(&[
        "--listen",
        "127.0.0.1:0",
        "--store",
        &store,
        "--server-key",
        "k2",
        "--base-url",
        &base_url,
    ]);
    let session: Value = http
        .get(format!("{}/v1/sessions/cli-1", again.base))
        .bearer_auth("k2")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["message_count"], 4);
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
