//! tinyagent's toolset against the official MCP Python SDK's server, over stdio and streamable
//! HTTP, and against tinyagent's own server; plus the fault cases.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{PythonHttpServer, eventually, fixture, require_python_mcp};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{AgentExt, LlmAgent, Session, Tool, ToolContext, ToolErrorKind};
use tinyagent_mcp::{McpHealth, McpServer, McpToolset};

fn stdio_toolset() -> McpToolset {
    require_python_mcp();
    McpToolset::stdio(&format!("python3 {}", fixture("fixture_server.py")))
        .expect("valid command line")
        .server_name("fixture")
        .connect_timeout(Duration::from_secs(30))
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    tools
        .iter()
        .find(|t| t.name() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool `{name}` among {names:?}"))
}

async fn call(tool: &Arc<dyn Tool>, input: &str) -> Result<String, tinyagent::ToolError> {
    tool.handle(&ToolContext::new(), input).await
}

/// The checks both transports share.
async fn check_fixture_tools(toolset: &McpToolset) {
    let tools = toolset.tools().await.expect("list the fixture's tools");
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    for expected in [
        "add",
        "add_tool",
        "die",
        "dotted_name",
        "echo",
        "fail",
        "hang",
        "picture",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }

    let echo = find(&tools, "echo");
    assert_eq!(echo.description(), "Echoes the text back");
    assert_eq!(echo.input_schema()["properties"]["text"]["type"], "string");
    assert_eq!(echo.input_schema()["required"][0], "text");
    let hints = echo.hints();
    assert!(hints.read_only && hints.idempotent && !hints.open_world);
    assert!(
        !find(&tools, "add").hints().read_only,
        "no annotations: assume the worst"
    );

    assert_eq!(
        call(&echo, r#"{"text": "你好"}"#).await.unwrap(),
        "echo: 你好"
    );
    assert_eq!(
        call(&find(&tools, "add"), r#"{"a": 2, "b": 40}"#)
            .await
            .unwrap(),
        "42"
    );
    assert_eq!(
        call(&find(&tools, "dotted_name"), "").await.unwrap(),
        "dotted"
    );

    let err = call(&find(&tools, "fail"), r#"{"reason": "testing"}"#)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    assert!(
        err.message().contains("failed on purpose: testing"),
        "{err}"
    );

    let err = call(&find(&tools, "add"), r#"{"a": "x"}"#)
        .await
        .unwrap_err();
    assert_eq!(
        err.kind(),
        ToolErrorKind::Failed,
        "the server's isError result: {err}"
    );
    assert!(!err.message().is_empty());

    let err = call(&echo, "{not json").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::InvalidInput);
    assert!(err.message().contains("not valid JSON"), "{err}");

    let picture = call(&find(&tools, "picture"), "{}").await.unwrap();
    assert_eq!(picture, "a red dot\n[image image/png, 5 B]");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolset_over_stdio_against_the_python_sdk() {
    check_fixture_tools(&stdio_toolset()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolset_over_streamable_http_against_the_python_sdk() {
    let server = PythonHttpServer::start();
    let toolset = McpToolset::http(&server.url).server_name("fixture-http");
    toolset
        .connect()
        .await
        .expect("connect over streamable HTTP");
    check_fixture_tools(&toolset).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_and_filter_shape_the_offered_tools() {
    let toolset = stdio_toolset()
        .prefix("py_")
        .filter(|name| name == "echo" || name == "add");
    let tools = toolset.tools().await.unwrap();
    let mut names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["py_add", "py_echo"]);
    let out = call(&find(&tools, "py_echo"), r#"{"text": "x"}"#)
        .await
        .unwrap();
    assert_eq!(out, "echo: x", "the call goes out under the server's name");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_calls_mcp_tools_through_its_resolver() {
    let model = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "echo", r#"{"text": "hi"}"#),
        reply::text("done"),
    ]));
    let agent = LlmAgent::builder("mcp-user")
        .model(model.clone())
        .tool_resolver(stdio_toolset())
        .build()
        .unwrap();
    assert_eq!(agent.ask(&Session::new(), "say hi").await.unwrap(), "done");
    let requests = model.requests();
    assert!(requests[0].tools.iter().any(|t| t.name == "echo"));
    let result = requests[1]
        .messages
        .last()
        .unwrap()
        .tool_results()
        .next()
        .unwrap()
        .clone();
    assert_eq!(result.content, "echo: hi");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toolset_against_tinyagents_own_server() {
    let handle = McpServer::new(tinyagent_demo::all_tools())
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let toolset = McpToolset::http(handle.url());
    let tools = toolset.tools().await.unwrap();
    assert_eq!(tools.len(), 4);
    let weather = find(&tools, "get_weather");
    assert_eq!(
        weather.input_schema(),
        tinyagent_demo::weather_tool().input_schema()
    );
    assert!(weather.hints().read_only);
    let out = call(&weather, r#"{"city": "北京"}"#).await.unwrap();
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        out,
        serde_json::json!({"city":"北京","temperature":22.5,"condition":"晴","humidity":45})
    );
    let err = call(
        &find(&tools, "calculator"),
        r#"{"operation": "sqrt", "a": -1}"#,
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Failed);
    drop(toolset);
    handle.shutdown().await;
}

// --- faults -------------------------------------------------------------------------------

/// Waits (at most 60 s) until `health` changes from what was last seen and then reads
/// `Connected`.
async fn connected_again(health: &mut tokio::sync::watch::Receiver<McpHealth>) {
    tokio::time::timeout(Duration::from_secs(60), async {
        health.changed().await.unwrap();
        health
            .wait_for(|h| *h == McpHealth::Connected)
            .await
            .unwrap();
    })
    .await
    .expect("the toolset did not connect again within 60 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_gives_a_clear_error_and_is_started_again() {
    let toolset = stdio_toolset();
    let tools = toolset.tools().await.unwrap();
    let mut health = toolset.health();
    assert_eq!(*health.borrow_and_update(), McpHealth::Connected);
    let err = call(&find(&tools, "die"), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable, "{err}");
    assert!(
        err.message()
            .contains("MCP server `fixture` is not running"),
        "{err}"
    );
    assert!(err.message().contains("is being reconnected"), "{err}");
    assert!(err.is_retryable());

    // The toolset starts the server again by itself; watchers see it lost, then back.
    connected_again(&mut health).await;
    // The tools handed out before reach the new process: no new invocation is needed.
    let out = call(&find(&tools, "echo"), r#"{"text": "back"}"#)
        .await
        .unwrap();
    assert_eq!(out, "echo: back");

    // Killed again soon after it started: the second restart in a row waits a second.
    let asked = std::time::Instant::now();
    let err = call(&find(&tools, "die"), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable, "{err}");
    connected_again(&mut health).await;
    assert!(
        asked.elapsed() >= Duration::from_secs(1),
        "restarted after {:?}, before the second of back-off",
        asked.elapsed()
    );
    let out = call(&find(&tools, "echo"), r#"{"text": "again"}"#)
        .await
        .unwrap();
    assert_eq!(out, "echo: again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_killed_mid_call_gives_a_clear_error_and_is_connected_again() {
    let server = PythonHttpServer::start();
    let port = server.port();
    let toolset = McpToolset::http(&server.url).server_name("fixture-http");
    let mut health = toolset.health();
    assert_eq!(*health.borrow(), McpHealth::NotConnected);
    let tools = toolset.tools().await.unwrap();
    assert_eq!(*health.borrow_and_update(), McpHealth::Connected);
    let err = call(&find(&tools, "die"), "{}").await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable, "{err}");
    assert!(
        err.message()
            .contains("MCP server `fixture-http` is not running"),
        "{err}"
    );
    drop(server);

    // Nothing listens now: the toolset's own attempts fail, and it says when the next is.
    let unreachable = tokio::time::timeout(
        Duration::from_secs(60),
        health.wait_for(|h| matches!(h, McpHealth::Unreachable { .. })),
    )
    .await
    .expect("the toolset tried to connect again")
    .unwrap()
    .clone();
    match unreachable {
        McpHealth::Unreachable {
            failures,
            retry_in,
            error,
        } => {
            assert!(failures >= 1);
            assert_eq!(retry_in, reconnect_delay(failures));
            assert!(error.contains("fixture-http"), "{error}");
        }
        other => panic!("expected unreachable, got {other:?}"),
    }
    // Until the back-off has passed, invocations fail at once instead of each waiting on
    // the dead server.
    let err = toolset.tools().await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable);
    assert!(
        err.message().contains("attempts in a row failed)")
            || err.message().contains("could not connect"),
        "{err}"
    );

    // The server comes back at the same address: the toolset connects again by itself,
    // and the old tools work.
    let _server = PythonHttpServer::start_on(port);
    tokio::time::timeout(
        Duration::from_secs(120),
        health.wait_for(|h| *h == McpHealth::Connected),
    )
    .await
    .expect("connected again within 120 s")
    .unwrap();
    let out = call(&find(&tools, "echo"), r#"{"text": "back"}"#)
        .await
        .unwrap();
    assert_eq!(out, "echo: back");
}

/// The back-off after `failures` failed attempts in a row: 1 s, doubling, at most 64 s.
fn reconnect_delay(failures: u32) -> Duration {
    Duration::from_secs(1 << failures.saturating_sub(1).min(6))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    let toolset = stdio_toolset().call_timeout(Duration::from_millis(300));
    let tools = toolset.tools().await.unwrap();
    // A bounded wait: the call must end by its own timeout, long before this one.
    let err = tokio::time::timeout(Duration::from_secs(60), call(&find(&tools, "hang"), "{}"))
        .await
        .expect("the call's 300 ms timeout did not end it within 60 s")
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::TimedOut, "{err}");
    assert!(err.message().contains("did not answer within"), "{err}");
    // The connection is still usable: the next call is answered. (Under the same 300 ms
    // limit, which a loaded machine's Python may miss; a miss is tried again, any other
    // error fails.)
    let echo = find(&tools, "echo");
    let mut tries = 0;
    let out = loop {
        tries += 1;
        match call(&echo, r#"{"text": "still here"}"#).await {
            Err(err) if err.kind() == ToolErrorKind::TimedOut && tries < 20 => continue,
            answer => break answer.unwrap(),
        }
    };
    assert_eq!(out, "echo: still here");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_never_starts_times_out() {
    // A "server" that reads its input and never answers the handshake.
    let toolset = McpToolset::stdio("sleep 30")
        .unwrap()
        .connect_timeout(Duration::from_millis(300));
    let err = toolset.tools().await.unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::TimedOut, "{err}");
    let err = McpToolset::stdio("/nonexistent/mcp-server")
        .unwrap()
        .tools()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ToolErrorKind::Unavailable, "{err}");
    assert!(err.message().contains("could not be started"), "{err}");
}

async fn check_list_changes(toolset: &McpToolset, added: &str) {
    let tools = toolset.tools().await.unwrap();
    assert!(tools.iter().all(|t| t.name() != added));
    let out = call(
        &find(&tools, "add_tool"),
        &format!(r#"{{"name": "{added}"}}"#),
    )
    .await
    .unwrap();
    assert_eq!(out, format!("added {added}"));
    let seen = eventually(Duration::from_secs(10), || async {
        let tools = toolset.tools().await.unwrap();
        tools.iter().any(|t| t.name() == added)
    })
    .await;
    assert!(seen, "the list was not refreshed after list_changed");
    let tools = toolset.tools().await.unwrap();
    assert_eq!(
        call(&find(&tools, added), "{}").await.unwrap(),
        format!("I am {added}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_that_changes_between_invocations_over_stdio() {
    check_list_changes(&stdio_toolset(), "late_tool").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_list_that_changes_between_invocations_over_http() {
    let server = PythonHttpServer::start();
    check_list_changes(&McpToolset::http(&server.url), "late_http_tool").await;
}

/// How many `tools/list` requests the fixture server has answered, asked through `tools`.
async fn list_requests(tools: &[Arc<dyn Tool>]) -> u64 {
    let out = call(&find(tools, "list_requests"), "{}").await.unwrap();
    out.parse()
        .unwrap_or_else(|e| panic!("list_requests answered {out:?}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tool_list_is_cached_until_the_server_says_it_changed() {
    let model = Arc::new(ScriptedModel::new([
        reply::text("first"),
        reply::text("second"),
        reply::text("third"),
    ]));
    let toolset = stdio_toolset();
    let agent = LlmAgent::builder("cache")
        .model(model.clone())
        .tool_resolver(toolset.clone())
        .build()
        .unwrap();
    let session = Session::new();
    agent.ask(&session, "one").await.unwrap();
    agent.ask(&session, "two").await.unwrap();
    let tools = toolset.tools().await.unwrap();
    assert_eq!(
        list_requests(&tools).await,
        1,
        "two invocations and one more look at the tools: one tools/list request"
    );
    let requests = model.requests();
    assert_eq!(tool_names(&requests[0]), tool_names(&requests[1]));
    assert!(!tool_names(&requests[0]).contains(&"cache_probe".to_owned()));

    // The server changes its list and says so: the next invocation lists again, once.
    let out = call(&find(&tools, "add_tool"), r#"{"name": "cache_probe"}"#)
        .await
        .unwrap();
    assert_eq!(out, "added cache_probe");
    let seen = eventually(Duration::from_secs(30), || async {
        let tools = toolset.tools().await.unwrap();
        tools.iter().any(|t| t.name() == "cache_probe")
    })
    .await;
    assert!(seen, "the list was not refreshed after list_changed");
    agent.ask(&session, "three").await.unwrap();
    let tools = toolset.tools().await.unwrap();
    assert_eq!(
        list_requests(&tools).await,
        2,
        "list_changed makes exactly one more tools/list request"
    );
    let requests = model.requests();
    assert!(tool_names(&requests[2]).contains(&"cache_probe".to_owned()));
}

fn tool_names(request: &tinyagent::ModelRequest) -> Vec<String> {
    let mut names: Vec<String> = request.tools.iter().map(|t| t.name.clone()).collect();
    names.sort_unstable();
    names
}
