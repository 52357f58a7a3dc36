//! Rich tool results over MCP, both ways, against the official Python SDK: a Python server
//! returning every content type reaches tinyagent as exact content parts (titles and output
//! schemas kept), and tinyagent's server sends a tool's parts and structured content so that
//! the Python client sees them.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{fixture, require_python_mcp};
use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::{self, Structured, ToolInput, ToolOutput};
use tinyagent::{AgentExt, ContentPart, LlmAgent, Session, Tool, ToolContext, ToolError};
use tinyagent_mcp::McpToolset;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

fn rich_server() -> McpToolset {
    require_python_mcp();
    McpToolset::stdio(&format!("python3 {}", fixture("rich_server.py")))
        .expect("valid command line")
        .server_name("rich")
        .connect_timeout(Duration::from_secs(30))
}

/// What a tool's output holds besides its text.
#[derive(Debug)]
struct Rich {
    parts: Vec<ContentPart>,
    structured: Option<Value>,
}

/// Calls a tool; returns the text of its output and, when it has any, its parts and
/// structured content.
async fn call(tool: &dyn Tool, input: &str) -> (Result<String, ToolError>, Option<Rich>) {
    match tool
        .call(&ToolContext::new(), ToolInput::from_text(input))
        .await
    {
        Ok(output) => {
            let (text, parts, structured) = output.into_parts();
            let rich =
                (!parts.is_empty() || structured.is_some()).then_some(Rich { parts, structured });
            (Ok(text), rich)
        }
        Err(err) => (Err(err), None),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mcp_content_type_from_a_python_server_becomes_a_content_part() {
    let toolset = rich_server();
    let tools = toolset.tools().await.expect("list the tools");
    let tool = |name: &str| -> Arc<dyn Tool> {
        tools
            .iter()
            .find(|t| t.name() == name)
            .cloned()
            .unwrap_or_else(|| panic!("no tool {name}"))
    };

    let (text, rich) = call(tool("image").as_ref(), "{}").await;
    assert_eq!(text.unwrap(), "[image image/png, 70 B]");
    assert_eq!(
        rich.unwrap().parts,
        vec![ContentPart::image(PNG, "image/png")]
    );

    let (text, rich) = call(tool("audio").as_ref(), "{}").await;
    assert_eq!(text.unwrap(), "[audio audio/wav, 44 B]");
    assert_eq!(
        rich.unwrap().parts,
        vec![ContentPart::audio(WAV, "audio/wav")]
    );

    let (text, rich) = call(tool("embedded_text").as_ref(), "{}").await;
    assert_eq!(
        text.unwrap(),
        "[resource file:///notes/todo.txt (text/plain)]\nbuy milk"
    );
    assert_eq!(
        rich.unwrap().parts,
        vec![ContentPart::resource_text(
            "file:///notes/todo.txt",
            Some("text/plain".into()),
            "buy milk"
        )]
    );

    let (text, rich) = call(tool("embedded_blob").as_ref(), "{}").await;
    assert_eq!(
        text.unwrap(),
        "[resource file:///data.bin (application/octet-stream), 3 B]"
    );
    assert_eq!(
        rich.unwrap().parts,
        vec![ContentPart::resource_blob(
            "file:///data.bin",
            Some("application/octet-stream".into()),
            "AQID"
        )]
    );

    let (text, rich) = call(tool("resource_link").as_ref(), "{}").await;
    assert_eq!(
        text.unwrap(),
        "[resource link file:///big.csv \"big.csv\" (text/csv): All the sales]"
    );
    let parts = rich.unwrap().parts;
    assert_eq!(
        serde_json::to_value(&parts).unwrap(),
        json!([{"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv",
                "description": "All the sales", "mime_type": "text/csv"}])
    );

    let (text, rich) = call(tool("mixed").as_ref(), "{}").await;
    assert_eq!(
        text.unwrap(),
        "the chart:\n[image image/png, 70 B]\n[resource file:///chart.csv (text/csv)]\nm,n\n1,2"
    );
    assert_eq!(rich.unwrap().parts.len(), 3);

    let weather = tool("weather");
    assert_eq!(weather.title(), Some("Current weather"));
    let schema = weather.output_schema().expect("an output schema");
    assert_eq!(schema["properties"]["celsius"]["type"], "number");
    let (text, rich) = call(weather.as_ref(), r#"{"city": "Paris"}"#).await;
    let rich = rich.unwrap();
    assert_eq!(
        rich.structured,
        Some(json!({"celsius": 22.5, "condition": "sunny in Paris"}))
    );
    let text = text.unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"celsius": 22.5, "condition": "sunny in Paris"}),
        "{text}"
    );

    let (err, rich) = call(tool("failing_image").as_ref(), "{}").await;
    let err = err.unwrap_err();
    assert!(
        err.message()
            .starts_with("the camera is broken\n[image image/png"),
        "{err}"
    );
    assert!(rich.is_none(), "an error result leaves no parts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_gets_the_parts_of_a_remote_tool() {
    let toolset = rich_server();
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "mixed", "{}"),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("a")
        .model(model.clone())
        .tool_resolver(toolset.clone())
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "go").await.unwrap(), "done");
    let requests = model.requests();
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.parts[1], ContentPart::image(PNG, "image/png"));
    assert!(result.content.contains("[image image/png, 70 B]"));
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Kind {
    /// Which content to return
    kind: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Weather {
    celsius: f64,
    condition: String,
}

fn rich_tools() -> Vec<Arc<dyn Tool>> {
    let content = tools::new_func(
        "content",
        "Returns one kind of content",
        |k: Kind| async move {
            Ok::<_, ToolError>(match k.kind.as_str() {
                "image" => ToolOutput::image(PNG, "image/png"),
                "audio" => ToolOutput::parts([ContentPart::audio(WAV, "audio/wav")]),
                "embedded_text" => ToolOutput::parts([ContentPart::resource_text(
                    "file:///notes/todo.txt",
                    Some("text/plain".into()),
                    "buy milk",
                )]),
                "embedded_blob" => ToolOutput::parts([ContentPart::resource_blob(
                    "file:///data.bin",
                    Some("application/octet-stream".into()),
                    "AQID",
                )]),
                "resource_link" => {
                    ToolOutput::parts([ContentPart::resource_link("file:///big.csv", "big.csv")])
                }
                "mixed" => {
                    ToolOutput::text("the chart:").with_part(ContentPart::image(PNG, "image/png"))
                }
                other => ToolOutput::error(format!("no content of kind {other}")),
            })
        },
    );
    let weather = tools::new_func("weather", "The weather, structured", |_: Kind| async move {
        Ok::<_, ToolError>(Structured(Weather {
            celsius: 22.5,
            condition: "sunny".into(),
        }))
    })
    .with_title("Current weather")
    .with_output_schema_of::<Weather>();
    vec![Arc::new(content), Arc::new(weather)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_sees_every_content_type_from_tinyagent() {
    let report = common::python_client_report(rich_tools(), "rich_client.py").await;
    let weather_tool = &report["tools"]["weather"];
    assert_eq!(weather_tool["title"], "Current weather");
    assert_eq!(
        weather_tool["outputSchema"]["properties"]["condition"]["type"],
        "string"
    );
    assert_eq!(
        report["image"]["content"],
        json!([{"type": "image", "data": PNG, "mimeType": "image/png"}])
    );
    assert_eq!(
        report["audio"]["content"],
        json!([{"type": "audio", "data": WAV, "mimeType": "audio/wav"}])
    );
    assert_eq!(
        report["embedded_text"]["content"],
        json!([{"type": "resource", "resource": {"uri": "file:///notes/todo.txt",
                 "mimeType": "text/plain", "text": "buy milk"}}])
    );
    assert_eq!(
        report["embedded_blob"]["content"],
        json!([{"type": "resource", "resource": {"uri": "file:///data.bin",
                 "mimeType": "application/octet-stream", "blob": "AQID"}}])
    );
    assert_eq!(
        report["resource_link"]["content"],
        json!([{"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv"}])
    );
    assert_eq!(
        report["mixed"]["content"],
        json!([{"type": "text", "text": "the chart:"},
               {"type": "image", "data": PNG, "mimeType": "image/png"}])
    );
    assert_eq!(
        report["weather"]["structuredContent"],
        json!({"celsius": 22.5, "condition": "sunny"})
    );
    assert_eq!(
        report["weather"]["content"],
        json!([{"type": "text", "text": r#"{"celsius":22.5,"condition":"sunny"}"#}])
    );
    for kind in ["image", "audio", "mixed", "weather"] {
        assert_eq!(report[kind]["isError"], false, "{kind}");
    }
}
