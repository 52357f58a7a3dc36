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
        *tinyagent_demo::weather_tool().input_schema(),
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
    let handle = McpServer::new(tinyagent_demo::all_tools())
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
    let server = McpServer::new([panicking, tinyagent_demo::calculator_tool()]);

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
        tinyagent_demo::calculator_tool(),
        tinyagent_demo::calculator_tool(),
        tinyagent_demo::time_tool(),
    ])
    .server_name("x");
    assert_eq!(
        server.tool_names().collect::<Vec<_>>(),
        ["calculator", "get_current_time"]
    );
}

/// A client speaking raw JSON-RPC lines to a server over an in-memory pipe, so the test
/// chooses every request id.
struct RawClient {
    to_server: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_server:
        tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
}

impl RawClient {
    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = message.to_string();
        line.push('\n');
        self.to_server.write_all(line.as_bytes()).await.unwrap();
        self.to_server.flush().await.unwrap();
    }

    /// The next message from the server that answers a request (it has an `id`), within 30 s.
    async fn answer(&mut self) -> Value {
        let wait = async {
            loop {
                let line = self
                    .from_server
                    .next_line()
                    .await
                    .expect("read from the server")
                    .expect("the server closed the pipe");
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if message.get("id").is_some() {
                    return message;
                }
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), wait)
            .await
            .expect("the server answered within 30 s")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_tool_sees_the_mcp_request_id_as_its_call_id() {
    use tinyagent_mcp::rmcp::ServiceExt;
    use tokio::io::AsyncBufReadExt;

    let who: Arc<dyn Tool> = tools::new_tool(
        "call_id",
        "returns its call id",
        json!({"type": "object"}),
        |ctx: ToolContext, _input: String| async move {
            Ok::<_, ToolError>(ctx.call_id().unwrap_or("none").to_owned())
        },
    );
    let (client_end, server_end) = tokio::io::duplex(64 * 1024);
    let (server_read, server_write) = tokio::io::split(server_end);
    let server = tokio::spawn(async move {
        let running = McpServer::new([who])
            .serve((server_read, server_write))
            .await
            .expect("the handshake");
        let _ = running.waiting().await;
    });
    let (client_read, client_write) = tokio::io::split(client_end);
    let mut client = RawClient {
        to_server: client_write,
        from_server: tokio::io::BufReader::new(client_read).lines(),
    };

    client
        .send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
        .await;
    let init = client.answer().await;
    assert_eq!(init["id"], 0, "{init}");
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    client
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    // Ids of both JSON-RPC kinds, chosen here, none of them the next number in a sequence.
    for id in [json!(90210), json!("req-7f3a"), json!(3)] {
        client
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                         "params": {"name": "call_id", "arguments": {}}}))
            .await;
        let answer = client.answer().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        let expected = match &id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        assert_eq!(
            answer["result"]["content"][0]["text"], expected,
            "the tool's call id is the request's id: {answer}"
        );
    }
    drop(client);
    tokio::time::timeout(std::time::Duration::from_secs(30), server)
        .await
        .expect("the server stops when the client goes")
        .unwrap();
}
