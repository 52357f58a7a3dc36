//! Served tool calls over MCP's two transports, measured with a client of its own that never
//! waits on itself, so that the client is not the ceiling. Prints calls/s and µs per call for
//! each server:
//!
//! - stdio: the handshake, then 20,000 `tools/call` requests written without waiting
//!   (pipelined), then 2,000 one at a time;
//! - streamable HTTP (127.0.0.1, kept-open connections): the handshake, then 5,000 calls with
//!   16 in flight at once, then 1,000 one at a time on one connection.
//!
//! The servers:
//!
//! - `tinyagent`: [`McpServer`](tinyagent_mcp::McpServer) serving the demo tools (the
//!   calculator), as `serve_demo_tools` does; over stdio also on a current-thread runtime;
//! - `bare rmcp`: an rmcp server with one `add` tool and nothing else (no validation, no
//!   tracing), on rmcp's own transports: the floor of the Rust stack this crate is built on;
//! - any other server: `MCP_BENCH_SERVER="name=command args"` for stdio and
//!   `MCP_BENCH_HTTP_SERVER="name=command args"` for HTTP (`;`-separated; an HTTP server is
//!   given a free port as `{port}` in its arguments and as `PORT`, and is reached at
//!   `http://127.0.0.1:{port}/mcp`), called with `MCP_BENCH_TOOL` and `MCP_BENCH_ARGS` (JSON),
//!   such as the TypeScript SDK's `@modelcontextprotocol/server-everything` and its `get-sum`
//!   tool (`bash scripts/mcp_bench.sh` installs it, pinned, and runs everything).
//!
//! Then the client side, measured the same way: tinyagent's `McpToolset` (over stdio and over
//! HTTP) calling tinyagent's server, as an agent calls a remote tool.
//!
//! `cargo bench -p tinyagent-mcp --bench mcp_calls` (`MCP_BENCH_CALLS`, `MCP_BENCH_SEQUENTIAL`,
//! `MCP_BENCH_RUNS` change the counts; `MCP_BENCH_ONLY=text` keeps the servers whose name holds
//! it). The built-in servers are this binary itself, started again with `--serve NAME` or
//! `--serve-http NAME PORT`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::process::{ChildStdin, ChildStdout, Command};

/// A server to measure: how to start it and what to call.
#[derive(Clone)]
struct Target {
    name: String,
    command: Vec<String>,
    /// Over streamable HTTP (`{port}` in the command) rather than stdio.
    http: bool,
    tool: String,
    arguments: Value,
}

/// rmcp with one tool and nothing around it.
#[derive(Clone)]
struct Bare;

impl ServerHandler for Bare {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}});
        let schema = schema.as_object().cloned().unwrap_or_default();
        Ok(ListToolsResult::with_all_items(vec![Tool::new(
            "add",
            "Adds two numbers",
            std::sync::Arc::new(schema),
        )]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let number = |k: &str| args.get(k).and_then(Value::as_f64).unwrap_or(0.0);
        let sum = number("a") + number("b");
        Ok(CallToolResponse::Complete(CallToolResult::success(vec![
            ContentBlock::text(sum.to_string()),
        ])))
    }
}

async fn serve(which: &str) {
    let stdio = (tokio::io::stdin(), tokio::io::stdout());
    match which {
        "bare" => {
            let service = Bare.serve(stdio).await.expect("bare rmcp server");
            let _ = service.waiting().await;
        }
        _ => {
            tinyagent_mcp::McpServer::new(tinyagent_demo::all_tools())
                .serve_stdio()
                .await
                .expect("tinyagent server");
        }
    }
}

/// Serves over streamable HTTP on 127.0.0.1:`port` until killed.
async fn serve_http(which: &str, port: u16) {
    let addr = format!("127.0.0.1:{port}");
    match which {
        "bare" => {
            use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
            use rmcp::transport::streamable_http_server::{
                StreamableHttpServerConfig, StreamableHttpService,
            };
            let service = StreamableHttpService::<_, LocalSessionManager>::new(
                || Ok(Bare),
                Default::default(),
                StreamableHttpServerConfig::default(),
            );
            let app = axum::Router::new().nest_service("/mcp", service);
            use axum::serve::ListenerExt as _;
            // Without TCP_NODELAY each answer waits on the client's delayed ACK (~40 ms).
            let listener = tokio::net::TcpListener::bind(&addr)
                .await
                .expect("bind")
                .tap_io(|tcp| {
                    let _ = tcp.set_nodelay(true);
                });
            axum::serve(listener, app)
                .await
                .expect("bare rmcp HTTP server");
        }
        _ => {
            let _handle = tinyagent_mcp::McpServer::new(tinyagent_demo::all_tools())
                .serve_http(addr.as_str())
                .await
                .expect("tinyagent HTTP server");
            std::future::pending::<()>().await;
        }
    }
}

/// A client of one server process, reading its answers line by line.
struct Client {
    _child: tokio::process::Child,
    stdin: BufWriter<ChildStdin>,
    lines: tokio::io::Lines<BufReader<ChildStdout>>,
}

impl Client {
    async fn start(command: &[String]) -> Self {
        let mut child = Command::new(&command[0])
            .args(&command[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
        let stdin = BufWriter::new(child.stdin.take().unwrap());
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut client = Self {
            _child: child,
            stdin,
            lines,
        };
        client
            .send(
                &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "stdio-bench", "version": "1"}}}),
            )
            .await;
        client.flush().await;
        client.answer().await;
        client
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client.flush().await;
        client
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).unwrap();
        line.push(b'\n');
        self.stdin.write_all(&line).await.unwrap();
    }

    async fn flush(&mut self) {
        self.stdin.flush().await.unwrap();
    }

    /// The next answer (a line with an `id`), skipping notifications.
    async fn answer(&mut self) -> Value {
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .unwrap()
                .expect("the server closed its output");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value.get("id").is_some() {
                assert!(value.get("error").is_none(), "{value}");
                return value;
            }
        }
    }
}

fn call(id: u64, target: &Target) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": target.tool, "arguments": target.arguments}})
}

/// Calls per second with `n` calls in flight at once, and µs per call one at a time.
async fn measure(target: &Target, pipelined: u64, sequential: u64) -> (f64, f64) {
    let mut client = Client::start(&target.command).await;
    // Warm up.
    for id in 1..=200 {
        client.send(&call(id, target)).await;
        client.flush().await;
        client.answer().await;
    }
    let started = Instant::now();
    let Client {
        _child,
        mut stdin,
        mut lines,
    } = client;
    let requests: Vec<Value> = (0..pipelined).map(|i| call(1_000 + i, target)).collect();
    let writer = tokio::spawn(async move {
        for request in requests {
            let mut line = serde_json::to_vec(&request).unwrap();
            line.push(b'\n');
            stdin.write_all(&line).await.unwrap();
        }
        stdin.flush().await.unwrap();
        stdin
    });
    let mut answered = 0;
    while answered < pipelined {
        let line = lines.next_line().await.unwrap().expect("output");
        if line.contains("\"id\"") {
            answered += 1;
        }
    }
    let per_second = pipelined as f64 / started.elapsed().as_secs_f64();
    let stdin = writer.await.unwrap();
    let mut client = Client {
        _child,
        stdin,
        lines,
    };
    let started = Instant::now();
    for id in 0..sequential {
        client.send(&call(100_000 + id, target)).await;
        client.flush().await;
        client.answer().await;
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / sequential as f64;
    (per_second, per_call)
}

/// How many HTTP calls are in flight at once in the concurrent part.
const IN_FLIGHT: u64 = 16;

/// An MCP session over streamable HTTP.
#[derive(Clone)]
struct HttpSession {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
}

impl HttpSession {
    /// Posts one message; the answer's JSON-RPC message (if it has one) and the session id.
    async fn post(&self, body: &Value) -> reqwest::Result<(Option<Value>, Option<String>)> {
        let mut request = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap());
        if let Some(id) = &self.session {
            request = request
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", "2025-06-18");
        }
        let response = request.send().await?.error_for_status()?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await?;
        Ok((answer_of(&text), session))
    }

    async fn call(&self, id: u64, target: &Target) {
        let (answer, _) = self
            .post(&call(id, target))
            .await
            .expect("the call is answered");
        let answer = answer.expect("a JSON-RPC answer");
        assert!(answer.get("result").is_some(), "{answer}");
    }
}

/// The JSON-RPC answer in a response body: the body itself, or the `data:` line of an event
/// stream that holds one.
fn answer_of(body: &str) -> Option<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return Some(value);
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|value| value.get("id").is_some())
}

/// Calls per second with [`IN_FLIGHT`] calls at once, and µs per call one at a time.
async fn measure_http(target: &Target, concurrent: u64, sequential: u64) -> (f64, f64) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let command: Vec<String> = target
        .command
        .iter()
        .map(|a| a.replace("{port}", &port.to_string()))
        .collect();
    let _child = Command::new(&command[0])
        .args(&command[1..])
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("start {command:?}: {e}"));
    let mut session = HttpSession {
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(IN_FLIGHT as usize)
            .build()
            .unwrap(),
        url: format!("http://127.0.0.1:{port}/mcp"),
        session: None,
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "mcp-bench", "version": "1"}}});
    let started = Instant::now();
    let id = loop {
        match session.post(&initialize).await {
            Ok((_, id)) => break id,
            Err(_) if started.elapsed() < Duration::from_secs(30) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{}: no answer to initialize: {e}", target.name),
        }
    };
    session.session = id;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    session.post(&initialized).await.expect("initialized");
    for id in 1..=200 {
        session.call(id, target).await;
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|worker| {
            let (session, target) = (session.clone(), target.clone());
            tokio::spawn(async move {
                for i in 0..concurrent / IN_FLIGHT {
                    session.call(1_000 + worker * 1_000_000 + i, &target).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let per_second = (concurrent / IN_FLIGHT * IN_FLIGHT) as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    for id in 0..sequential {
        session.call(100_000_000 + id, target).await;
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / sequential as f64;
    (per_second, per_call)
}

/// tinyagent's MCP client, an [`McpToolset`](tinyagent_mcp::McpToolset) over stdio or HTTP,
/// calling tinyagent's server the way an agent calls a remote tool: calls/s with
/// [`IN_FLIGHT`] calls at once, and µs per call one at a time.
async fn measure_client(http: bool, concurrent: u64, sequential: u64) -> (f64, f64) {
    use tinyagent::tools::ToolInput;
    use tinyagent::{Tool, ToolContext};
    let me = std::env::current_exe().unwrap().display().to_string();
    let mut _server = None;
    let toolset = if http {
        let server = tinyagent_mcp::McpServer::new(tinyagent_demo::all_tools())
            .serve_http("127.0.0.1:0")
            .await
            .expect("tinyagent HTTP server");
        let toolset = tinyagent_mcp::McpToolset::http(server.url());
        _server = Some(server);
        toolset
    } else {
        tinyagent_mcp::McpToolset::stdio(&format!("{me} --serve tinyagent")).unwrap()
    };
    let tools = toolset.tools().await.expect("the tools are listed");
    let tool = tools
        .into_iter()
        .find(|t| t.name() == "calculator")
        .expect("the calculator");
    let call = |tool: std::sync::Arc<dyn Tool>| async move {
        let input = ToolInput::from_value(json!({"operation": "add", "a": 7, "b": 8}));
        let output = tool
            .call(&ToolContext::new(), input)
            .await
            .expect("answered");
        assert!(!output.is_error(), "{}", output.into_text());
    };
    for _ in 0..200 {
        call(tool.clone()).await;
    }
    let started = Instant::now();
    let workers: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let tool = tool.clone();
            tokio::spawn(async move {
                for _ in 0..concurrent / IN_FLIGHT {
                    call(tool.clone()).await;
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let per_second = (concurrent / IN_FLIGHT * IN_FLIGHT) as f64 / started.elapsed().as_secs_f64();
    let started = Instant::now();
    for _ in 0..sequential {
        call(tool.clone()).await;
    }
    let per_call = started.elapsed().as_secs_f64() * 1e6 / sequential as f64;
    (per_second, per_call)
}

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn targets() -> Vec<Target> {
    let me = std::env::current_exe().unwrap().display().to_string();
    let calculator = json!({"operation": "add", "a": 7, "b": 8});
    let own = |name: &str, http: bool, args: &[&str], tool: &str, arguments: &Value| Target {
        name: name.into(),
        command: std::iter::once(me.as_str())
            .chain(args.iter().copied())
            .map(str::to_owned)
            .collect(),
        http,
        tool: tool.into(),
        arguments: arguments.clone(),
    };
    let add = json!({"a": 7, "b": 8});
    let mut targets = vec![
        own(
            "tinyagent",
            false,
            &["--serve", "tinyagent"],
            "calculator",
            &calculator,
        ),
        own(
            "tinyagent, current-thread runtime",
            false,
            &["--serve", "tinyagent-1"],
            "calculator",
            &calculator,
        ),
        own("bare rmcp", false, &["--serve", "bare"], "add", &add),
        own(
            "tinyagent",
            true,
            &["--serve-http", "tinyagent", "{port}"],
            "calculator",
            &calculator,
        ),
        own(
            "bare rmcp",
            true,
            &["--serve-http", "bare", "{port}"],
            "add",
            &add,
        ),
    ];
    let tool = std::env::var("MCP_BENCH_TOOL").unwrap_or_else(|_| "get-sum".into());
    let arguments = std::env::var("MCP_BENCH_ARGS")
        .ok()
        .and_then(|a| serde_json::from_str(&a).ok())
        .unwrap_or_else(|| json!({"a": 7, "b": 8}));
    for (variable, http) in [("MCP_BENCH_SERVER", false), ("MCP_BENCH_HTTP_SERVER", true)] {
        for spec in std::env::var(variable).unwrap_or_default().split(';') {
            if let Some((name, command)) = spec.split_once('=') {
                targets.push(Target {
                    name: name.trim().into(),
                    command: command.split_whitespace().map(str::to_owned).collect(),
                    http,
                    tool: tool.clone(),
                    arguments: arguments.clone(),
                });
            }
        }
    }
    // `MCP_BENCH_ONLY=text`: only the servers whose name holds it.
    match std::env::var("MCP_BENCH_ONLY") {
        Ok(only) => targets
            .into_iter()
            .filter(|t| t.name.contains(&only))
            .collect(),
        Err(_) => targets,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args
        .iter()
        .position(|a| a == "--serve" || a == "--serve-http")
    {
        let which = args.get(at + 1).cloned().unwrap_or_default();
        // `--serve tinyagent-1`: the same server on a current-thread runtime.
        let runtime = match which.strip_suffix("-1") {
            Some(_) => tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build(),
            None => tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build(),
        };
        let which = which.trim_end_matches("-1").to_owned();
        let runtime = runtime.unwrap();
        match args.get(at + 2).and_then(|p| p.parse().ok()) {
            Some(port) if args[at] == "--serve-http" => runtime.block_on(serve_http(&which, port)),
            _ => runtime.block_on(serve(&which)),
        }
        return;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing else: run once, small.
    let quick = !args.iter().any(|a| a == "--bench");
    let number = |name, quick_default, default| {
        env_number(name, if quick { quick_default } else { default })
    };
    let runs = number("MCP_BENCH_RUNS", 1, 3);
    println!(
        "{:<10} {:<36} {:>16} {:>10} {:>14}",
        "transport", "server", "calls/s", "at once", "µs per call"
    );
    runtime.block_on(async {
        for target in targets() {
            for _ in 0..runs {
                let (transport, in_flight, measured) = if target.http {
                    let concurrent = number("MCP_BENCH_CALLS", 320, 5_000);
                    let sequential = number("MCP_BENCH_SEQUENTIAL", 50, 1_000);
                    let run = measure_http(&target, concurrent, sequential);
                    (
                        "HTTP",
                        IN_FLIGHT.to_string(),
                        tokio::time::timeout(Duration::from_secs(600), run).await,
                    )
                } else {
                    let pipelined = number("MCP_BENCH_CALLS", 500, 20_000);
                    let sequential = number("MCP_BENCH_SEQUENTIAL", 100, 2_000);
                    let run = measure(&target, pipelined, sequential);
                    (
                        "stdio",
                        "all".to_owned(),
                        tokio::time::timeout(Duration::from_secs(600), run).await,
                    )
                };
                let (per_second, per_call) = measured.expect("the server answered in time");
                println!(
                    "{:<10} {:<36} {:>16.0} {:>10} {:>14.1}",
                    transport, target.name, per_second, in_flight, per_call
                );
            }
        }
        // The client side: tinyagent's McpToolset calling tinyagent's server.
        let client = "McpToolset -> tinyagent";
        if std::env::var("MCP_BENCH_ONLY").is_ok_and(|only| !client.contains(&only)) {
            return;
        }
        for http in [false, true] {
            for _ in 0..runs {
                let concurrent = number("MCP_BENCH_CALLS", 320, 5_000);
                let sequential = number("MCP_BENCH_SEQUENTIAL", 50, 1_000);
                let run = measure_client(http, concurrent, sequential);
                let (per_second, per_call) = tokio::time::timeout(Duration::from_secs(600), run)
                    .await
                    .expect("the server answered in time");
                let transport = if http { "HTTP" } else { "stdio" };
                println!(
                    "{transport:<10} {client:<36} {per_second:>16.0} {IN_FLIGHT:>10} {per_call:>14.1}"
                );
            }
        }
    });
}
