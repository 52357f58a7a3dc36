//! What the `tinyagent serve` tests share: the binary started on an ephemeral loopback port
//! (killed when dropped), model servers replaying the demo's Chat Completions streams or
//! hand-built ones, and the URLs of the test servers.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

pub const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");
pub const PATIENCE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-demo/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

pub async fn model_server(replies: &[&str]) -> MockServer {
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
pub struct Serving {
    pub child: Child,
    pub base: String,
    pub stderr: mpsc::Receiver<String>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start(args: &[&str]) -> Serving {
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

/// A Chat Completions stream answering `text`, hand-built in OpenAI's wire format (the shape of
/// the demo fixtures: a role chunk, a content chunk, a finish chunk, `[DONE]`).
pub fn answer_stream(text: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-handbuilt", "object": "chat.completion.chunk", "created": 1741570100,
            "model": "gpt-4o-mini", "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
        })
    };
    [
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": text}), Value::Null),
        chunk(json!({}), json!("stop")),
    ]
    .iter()
    .map(|c| format!("data: {c}\n\n"))
    .chain(["data: [DONE]\n\n".to_owned()])
    .collect()
}

/// The test server's URL in `var`, or `None` when service tests are skipped.
pub fn service_url(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("TINYAGENT_SKIP_SERVICE_TESTS").is_ok_and(|v| v == "1") => None,
        _ => panic!(
            "{var} is not set: run the tests with `bash scripts/test.sh`, or start the servers \
             with `bash scripts/services.sh start` and `eval \"$(bash scripts/services.sh env)\"` \
             (TINYAGENT_SKIP_SERVICE_TESTS=1 skips such tests)"
        ),
    }
}
