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
            McpPrompt::new("code_review", |args| async move {
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
            |vars| async move {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toolset_reads_prompts_and_resources_and_gives_an_agent_a_resource_tool() {
    use tinyagent::testing::{ScriptedModel, reply};
    use tinyagent::{AgentExt, ContentPart, LlmAgent, Role, Session};
    use tinyagent_mcp::{McpToolset, PromptRole};

    let handle = server().serve_http("127.0.0.1:0").await.unwrap();
    let toolset = McpToolset::http(handle.url()).prefix("docs_");

    let prompts = toolset.prompts().await.unwrap();
    assert_eq!(prompts[0].name, "code_review");
    assert_eq!(
        prompts[0].arguments[0],
        (
            "code".to_owned(),
            Some("the code to review".to_owned()),
            true
        )
    );
    let messages = toolset
        .prompt("code_review", [("code", "x = 1"), ("language", "python")])
        .await
        .unwrap();
    assert_eq!(messages[0].role, PromptRole::User);
    assert_eq!(
        messages[0].to_message().text(),
        "Review this python code for bugs:\nx = 1"
    );
    assert_eq!(messages[1].to_message().role, Role::Assistant);
    let err = toolset
        .prompt("code_review", [("language", "go")])
        .await
        .unwrap_err();
    assert!(
        err.message().contains("needs the argument \"code\""),
        "{err}"
    );

    let resources = toolset.resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(
        uris,
        [
            "file:///README.md",
            "file:///logo.png",
            "orders://{id}/summary"
        ]
    );
    assert_eq!(
        toolset.read_resource("file:///logo.png").await.unwrap(),
        [ContentPart::resource_blob(
            "file:///logo.png",
            Some("image/png".to_owned()),
            "iVBORw=="
        )]
    );
    let order = toolset.read_resource("orders://7/summary").await.unwrap();
    assert_eq!(order[0].as_text(), None);
    assert!(format!("{order:?}").contains("order 7 is on its way"));
    let err = toolset
        .read_resource("orders://0/summary")
        .await
        .unwrap_err();
    assert!(err.message().contains("no order 0"), "{err}");

    // An agent reads a resource through the generated tool.
    let tool = toolset.resource_tool().await.unwrap();
    assert_eq!(tool.name(), "docs_read_resource");
    assert!(
        tool.description().contains("file:///README.md"),
        "{}",
        tool.description()
    );
    let model = std::sync::Arc::new(ScriptedModel::new([
        reply::tool_call(
            "c1",
            "docs_read_resource",
            r#"{"uri": "file:///README.md"}"#,
        ),
        reply::text("The README says hello."),
    ]));
    let agent = LlmAgent::builder("reader")
        .model(model.clone())
        .tool(tool)
        .build()
        .unwrap();
    let answer = agent
        .ask(&Session::new(), "What does the README say?")
        .await
        .unwrap();
    assert_eq!(answer, "The README says hello.");
    let result = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .cloned()
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert!(result.content.contains("# Hello"), "{}", result.content);
    handle.shutdown().await;
}
