//! The official MCP Python SDK's client against tinyagent's server, over stdio and streamable
//! HTTP; and the server's answers checked directly.

mod common;

use std::sync::Arc;

use common::{fixture, require_python_mcp};
use serde_json::{Value, json};
use tinyagent::{Tool, ToolContext, ToolError, tools};
use tinyagent_mcp::McpServer;

/// Runs the Python client script and returns the JSON it printed.
async fn run_python_client(args: &[&str]) -> Value {
    require_python_mcp();
    let out = tokio::process::Command::new("python3")
        .arg(fixture("fixture_client.py"))
        .args(args)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("the Python client finished within 60 s")
        .expect("run the Python client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the Python client failed ({}):\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn check_client_report(report: &Value) {
    let tools = report["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(
        names,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    let weather = &tools[0];
    assert_eq!(
        weather["inputSchema"],
        *tinyagent::demo::weather_tool().input_schema(),
        "input schemas are served as generated"
    );
    assert_eq!(weather["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[3]["inputSchema"]["required"], json!(["message"]));

    assert_eq!(report["ok"]["isError"], false);
    let ok: Value = serde_json::from_str(report["ok"]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(ok["expression"], "10.00 + 3.00 = 13.00");

    assert_eq!(report["failing"]["isError"], true);
    assert_eq!(report["failing"]["text"][0], "除数不能为零");

    assert_eq!(report["invalid"]["isError"], true);
    let invalid = report["invalid"]["text"][0].as_str().unwrap();
    assert!(
        invalid.contains("invalid arguments (2 problems)"),
        "{invalid}"
    );
    assert!(invalid.contains("/operation"), "{invalid}");
    assert!(invalid.contains("/a"), "{invalid}");

    assert_eq!(report["translator"]["isError"], false);
    assert!(
        report["translator"]["text"][0]
            .as_str()
            .unwrap()
            .contains("你好，世界"),
        "agent tools are served too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_against_tinyagent_over_stdio() {
    let report = run_python_client(&["stdio", env!("CARGO_BIN_EXE_serve_demo_tools")]).await;
    check_client_report(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_against_tinyagent_over_streamable_http() {
    let handle = McpServer::new(tinyagent::demo::seed_tools())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let report = run_python_client(&["http", &handle.url()]).await;
    check_client_report(&report);
    handle.shutdown().await;
}

#[tokio::test]
async fn tool_errors_panics_and_bad_arguments_are_error_results() {
    let panicking: Arc<dyn Tool> = tools::new_tool(
        "boom",
        "panics",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move {
            if true {
                panic!("kaboom");
            }
            Ok::<_, ToolError>(String::new())
        },
    );
    let server = McpServer::new([panicking, tinyagent::demo::calculator_tool()]);

    let result = server.call("boom", None).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(tinyagent_mcp::result_text(&result).contains("panicked"));

    let args = json!({"operation": "add"}).as_object().cloned();
    let result = server.call("calculator", args).await.unwrap();
    assert_eq!(result.is_error, Some(true));
    let text = tinyagent_mcp::result_text(&result);
    assert!(
        text.contains("invalid arguments") && text.contains("/a"),
        "{text}"
    );

    let err = server.call("nope", None).await.unwrap_err();
    assert!(
        err.message.contains("unknown tool `nope`"),
        "{}",
        err.message
    );
    assert!(err.message.contains("calculator"), "{}", err.message);
}

#[test]
fn duplicate_names_serve_the_first_tool() {
    let server = McpServer::new([
        tinyagent::demo::calculator_tool(),
        tinyagent::demo::calculator_tool(),
        tinyagent::demo::time_tool(),
    ])
    .name("x");
    assert_eq!(
        server.tool_names().collect::<Vec<_>>(),
        ["calculator", "get_current_time"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_tool_sees_the_mcp_request_id_as_its_call_id() {
    let who: Arc<dyn Tool> = tools::new_tool(
        "call_id",
        "returns its call id",
        json!({"type": "object"}),
        |ctx: ToolContext, _input: String| async move {
            Ok::<_, ToolError>(ctx.call_id().unwrap_or("none").to_owned())
        },
    );
    let handle = McpServer::new([who])
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let toolset = tinyagent_mcp::McpToolset::http(handle.url());
    let tools = toolset.tools().await.unwrap();
    let id = tools[0].handle(&ToolContext::new(), "{}").await.unwrap();
    assert!(
        id.parse::<i64>().is_ok(),
        "rmcp's request ids are numbers: {id}"
    );
    drop(toolset);
    handle.shutdown().await;
}
