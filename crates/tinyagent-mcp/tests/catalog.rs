//! Prompts, resources and completion served by `McpServer`, read by the official MCP Python
//! SDK's client over streamable HTTP.

mod common;

use common::{fixture, require_python_mcp};
use serde_json::{Value, json};
use tinyagent::ToolError;
use tinyagent_mcp::{
    McpPrompt, McpPromptMessage, McpResource, McpResourceTemplate, McpServer, ResourceBody,
};

fn server() -> McpServer {
    McpServer::new(tinyagent_demo::all_tools())
        .prompt(
            McpPrompt::new("code_review", |args| {
                Ok(vec![
                    McpPromptMessage::user(format!(
                        "Review this {} code for bugs:\n{}",
                        args.get("language").map_or("", String::as_str),
                        args["code"]
                    )),
                    McpPromptMessage::assistant("I will list each bug with its line."),
                ])
            })
            .description("Asks for a code review")
            .argument("code", "the code to review", true)
            .completed_argument(
                "language",
                "its language",
                false,
                ["rust", "python", "pascal"],
            ),
        )
        .resource(McpResource::text(
            "file:///README.md",
            "README",
            "text/markdown",
            "# Hello",
        ))
        .resource(McpResource::bytes(
            "file:///logo.png",
            "logo",
            "image/png",
            vec![0x89, b'P', b'N', b'G'],
        ))
        .resource_template(McpResourceTemplate::new(
            "orders://{id}/summary",
            "order summary",
            "text/plain",
            |vars| {
                if vars["id"] == "0" {
                    return Err(ToolError::not_found("no order 0"));
                }
                Ok(ResourceBody::Text(format!(
                    "order {} is on its way",
                    vars["id"]
                )))
            },
        ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_sdk_lists_gets_completes_and_reads_them() {
    require_python_mcp();
    let handle = server().serve_http("127.0.0.1:0").await.unwrap();
    let out = tokio::process::Command::new("python3")
        .arg(fixture("catalog_client.py"))
        .arg(handle.url())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("the Python client finished within 60 s")
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_str(stdout.trim()).unwrap();
    handle.shutdown().await;

    let caps = &report["capabilities"];
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");

    let prompt = &report["prompts"]["prompts"][0];
    assert_eq!(prompt["name"], "code_review");
    assert_eq!(
        prompt["arguments"][0],
        json!({"name": "code", "description": "the code to review", "required": true})
    );
    let messages = report["review"]["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(
        messages[0]["content"]["text"],
        "Review this rust code for bugs:\nfn main() {}"
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(
        report["completion"]["completion"]["values"],
        json!(["python"])
    );
    let missing = report["missing"].as_str().unwrap();
    assert!(missing.contains("needs the argument \"code\""), "{missing}");

    let resources = report["resources"]["resources"].as_array().unwrap();
    assert_eq!(resources[0]["uri"], "file:///README.md");
    assert_eq!(resources[0]["mimeType"], "text/markdown");
    assert_eq!(
        report["templates"]["resourceTemplates"][0]["uriTemplate"],
        "orders://{id}/summary"
    );
    assert_eq!(report["readme"]["contents"][0]["text"], "# Hello");
    assert_eq!(report["logo"]["contents"][0]["blob"], "iVBORw==");
    assert_eq!(
        report["order"]["contents"][0]["text"],
        "order 42 is on its way"
    );
    let unknown = report["unknown"].as_str().unwrap();
    assert!(unknown.contains("no resource has the URI"), "{unknown}");
}
