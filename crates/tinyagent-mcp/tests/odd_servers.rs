//! The toolset against servers that do unusual or wrong things: names that clash once made
//! valid, a non-ASCII name, a tool that needs task support, oversize results, output that is
//! not MCP, and HTTP servers that want credentials.

mod common;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{fixture, require_python_mcp};
use tinyagent::{Tool, ToolContext, ToolErrorKind};
use tinyagent_mcp::{McpServer, McpToolset};

fn odd_server() -> McpToolset {
    require_python_mcp();
    McpToolset::stdio(&format!("python3 {}", fixture("odd_server.py")))
        .expect("valid command line")
        .server_name("odd")
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool `{name}` among {names:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_remote_tool_is_reachable_under_a_unique_valid_stable_name() {
    let toolset = odd_server();
    let infos = toolset.tool_infos().await.expect("list the odd server");
    let by_remote = |remote: &str| {
        infos
            .iter()
            .find(|i| i.remote_name == remote)
            .unwrap_or_else(|| panic!("`{remote}` missing from {infos:?}"))
            .clone()
    };
    let clashing = ["files.read", "files read", "files_read", "天气"];
    let names: Vec<String> = clashing.iter().map(|r| by_remote(r).name).collect();
    assert_eq!(names[2], "files_read", "a valid name is kept");
    assert_eq!(names[3], "u5929_u6c14", "a non-ASCII name is spelled out");
    assert!(names[0].starts_with("files_read_") && names[1].starts_with("files_read_"));
    assert_eq!(names.iter().collect::<HashSet<_>>().len(), 4, "{names:?}");
    assert!(by_remote("files.read").renamed(""));
    assert!(!by_remote("files_read").renamed(""));

    // Each offered name calls its own remote tool.
    let tools = toolset.tools().await.unwrap();
    for (remote, name) in clashing.iter().zip(&names) {
        let out = find(&tools, name)
            .handle(&ToolContext::new(), "{}")
            .await
            .unwrap();
        assert_eq!(out, format!("called {remote}"));
    }

    // The same names from a fresh connection: stable.
    let again = odd_server().tool_infos().await.unwrap();
    for info in &infos {
        let other = again
            .iter()
            .find(|i| i.remote_name == info.remote_name)
            .unwrap();
        assert_eq!(other.name, info.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn titles_output_schemas_and_task_only_tools_are_reported() {
    let toolset = odd_server();
    let infos = toolset.tool_infos().await.unwrap();
    let titled = infos.iter().find(|i| i.remote_name == "titled").unwrap();
    assert_eq!(titled.title.as_deref(), Some("A Titled Tool"));
    assert_eq!(
        titled.output_schema.as_ref().unwrap()["properties"]["ok"]["type"],
        "boolean"
    );
    assert_eq!(titled.not_offered, None);

    let task = infos
        .iter()
        .find(|i| i.remote_name == "needs_task")
        .unwrap();
    let reason = task.not_offered.as_deref().expect("not offered");
    assert!(reason.contains("task support"), "{reason}");
    let tools = toolset.tools().await.unwrap();
    assert!(tools.iter().all(|t| t.name() != "needs_task"));
    assert_eq!(tools.len(), infos.len() - 1, "everything else is offered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_results_are_cut_with_a_marker() {
    let toolset = odd_server();
    let tools = toolset.tools().await.unwrap();
    let out = find(&tools, "big")
        .handle(&ToolContext::new(), "{}")
        .await
        .unwrap();
    assert!(out.len() < 100_200, "bounded: {} bytes", out.len());
    assert!(out.starts_with(&"x".repeat(100_000)));
    assert!(
        out.ends_with(
            "[result truncated: 4900000 of 5000000 bytes cut, the limit is 100000 bytes]"
        ),
        "{}",
        &out[out.len() - 120..]
    );
    let err = find(&tools, "big_error")
        .handle(&ToolContext::new(), "{}")
        .await
        .unwrap_err();
    assert!(err.message().len() < 100_200);
    assert!(err.message().contains("result truncated"));

    let small = odd_server().max_result_bytes(10);
    let tools = small.tools().await.unwrap();
    let out = find(&tools, "big")
        .handle(&ToolContext::new(), "{}")
        .await
        .unwrap();
    assert_eq!(
        out,
        "xxxxxxxxxx\n[result truncated: 4999990 of 5000000 bytes cut, the limit is 10 bytes]"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_printing_garbage_is_reported_within_seconds_naming_the_cause() {
    let toolset =
        McpToolset::stdio("sh -c 'echo Starting the weather server on port 8080; sleep 60'")
            .unwrap()
            .server_name("noisy");
    let started = Instant::now();
    let err = toolset.tools().await.unwrap_err();
    let elapsed = started.elapsed();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable, "{err}");
    let message = err.message();
    assert!(
        message.contains("does not speak MCP on its standard output")
            && message.contains("Starting the weather server on port 8080"),
        "{message}"
    );
    assert!(!message.contains("rmcp::"), "{message}");
    // Well before the 30 s connect timeout (a generous bound for a loaded machine).
    assert!(elapsed < Duration::from_secs(20), "took {elapsed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_says_so() {
    let err = McpToolset::stdio("sh -c 'echo oops; exit 3'")
        .unwrap()
        .server_name("quitter")
        .tools()
        .await
        .unwrap_err();
    let message = err.message();
    assert!(message.contains("exited"), "{message}");
    assert!(message.contains("oops"), "{message}");
    assert!(!message.contains("rmcp::"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_name_no_internal_types() {
    // A port bound for the whole test but never listened on: connections are refused, and no
    // other process can start listening there meanwhile.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    let err = McpToolset::http(format!("http://127.0.0.1:{port}/mcp"))
        .connect_timeout(Duration::from_secs(20))
        .tools()
        .await
        .unwrap_err();
    let message = err.message();
    assert!(message.contains("could not connect"), "{message}");
    assert!(
        !message.contains("rmcp::") && !message.contains("WorkerTransport"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_tokens_and_headers_reach_the_server() {
    let handle = McpServer::new(tinyagent_demo::all_tools())
        .bearer_token("s3cret")
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();

    let err = McpToolset::http(handle.url()).tools().await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Denied, "{err}");
    assert!(err.message().contains("401"), "{err}");
    assert!(err.message().contains("none were sent"), "{err}");

    let wrong = McpToolset::http(handle.url()).bearer_token("guess");
    let err = wrong.tools().await.unwrap_err();
    assert!(err.message().contains("were refused"), "{err}");
    assert!(
        !err.message().contains("guess"),
        "the token is not shown: {err}"
    );
    assert!(!format!("{wrong:?}").contains("guess"));

    let right = McpToolset::http(handle.url()).bearer_token("s3cret");
    assert_eq!(right.tools().await.unwrap().len(), 4);
    let header = McpToolset::http(handle.url()).header("authorization", "Bearer s3cret");
    assert_eq!(header.tools().await.unwrap().len(), 4);

    let bad = McpToolset::http(handle.url()).header("bad header", "x");
    let err = bad.tools().await.unwrap_err();
    assert!(
        err.message()
            .contains("`bad header` is not a valid HTTP header name"),
        "{err}"
    );
    drop((right, header));
    handle.shutdown().await;
}
