//! The server's answers to requests MCP says must be refused or reported: foreign origins,
//! malformed `tools/call`, bodies and lines that are not JSON-RPC, ending a session, and a
//! bearer token — over streamable HTTP (raw requests) and stdio (raw lines).

use std::time::Duration;

use serde_json::{Value, json};
use tinyagent_mcp::{HttpServerHandle, McpServer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const ACCEPT: &str = "application/json, text/event-stream";

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}})
}

async fn serve(server: McpServer) -> HttpServerHandle {
    server.serve_http("127.0.0.1:0").await.unwrap()
}

fn post(url: &str) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(url)
        .header("accept", ACCEPT)
        .header("content-type", "application/json")
}

/// The JSON-RPC message of a response, whether sent as JSON or as one SSE event.
async fn message(response: reqwest::Response) -> Value {
    let text = response.text().await.unwrap();
    let data = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .find(|d| !d.is_empty())
        .unwrap_or(&text);
    serde_json::from_str(data).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// Initializes a session and returns its id.
async fn session(url: &str) -> String {
    let response = post(url).json(&initialize()).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let id = response.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = message(response).await;
    let done = post(url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send()
        .await
        .unwrap();
    assert!(done.status().is_success());
    id
}

#[tokio::test]
async fn a_foreign_origin_is_forbidden_and_loopback_or_listed_origins_pass() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools())).await;
    let url = handle.url();
    let evil = post(&url)
        .header("origin", "http://evil.example.com")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(evil.status(), 403);
    assert!(evil.headers().get("mcp-session-id").is_none(), "no session");
    for origin in ["http://localhost:6274", "http://127.0.0.1:3000"] {
        let ok = post(&url)
            .header("origin", origin)
            .json(&initialize())
            .send()
            .await
            .unwrap();
        assert_eq!(ok.status(), 200, "{origin}");
    }
    handle.shutdown().await;

    let listed = serve(
        McpServer::new(tinyagent_demo::all_tools()).allowed_origins(["https://app.example.com"]),
    )
    .await;
    let ok = post(&listed.url())
        .header("origin", "https://app.example.com")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let other = post(&listed.url())
        .header("origin", "https://other.example.com")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 403);
    listed.shutdown().await;
}

#[tokio::test]
async fn malformed_tools_call_is_invalid_params_over_http() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools())).await;
    let url = handle.url();
    let id = session(&url).await;
    let call = |params: Value| {
        post(&url)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}))
            .send()
    };
    let no_name = message(call(json!({"arguments": {}})).await.unwrap()).await;
    assert_eq!(no_name["error"]["code"], -32602, "{no_name}");
    assert_eq!(no_name["id"], 7);
    assert!(
        no_name["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`name`"),
        "{no_name}"
    );
    let array = message(
        call(json!({"name": "calculator", "arguments": [1, 2]}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(array["error"]["code"], -32602, "{array}");
    assert!(
        array["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`arguments` must be an object"),
        "{array}"
    );
    let unknown_method = message(
        post(&url)
            .header("mcp-session-id", &id)
            .header("mcp-protocol-version", "2025-06-18")
            .json(&json!({"jsonrpc": "2.0", "id": 8, "method": "no/such"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(unknown_method["error"]["code"], -32601, "{unknown_method}");
    handle.shutdown().await;
}

#[tokio::test]
async fn bodies_that_are_not_json_rpc_get_json_rpc_errors() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools())).await;
    let url = handle.url();
    let response = post(&url).body("{not json").send().await.unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(response.headers()["content-type"], "application/json");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32700, "{body}");
    assert_eq!(body["id"], Value::Null);
    assert_eq!(body["jsonrpc"], "2.0");

    let response = post(&url)
        .body(r#"{"id": 3, "hello": "world"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32600, "{body}");
    assert_eq!(body["id"], 3);
    handle.shutdown().await;
}

#[tokio::test]
async fn ending_a_session_answers_200_and_the_session_is_gone() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools())).await;
    let url = handle.url();
    let id = session(&url).await;
    let client = reqwest::Client::new();
    let ended = client
        .delete(&url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 200);
    let after = post(&url)
        .header("mcp-session-id", &id)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 404);
    handle.shutdown().await;
}

#[tokio::test]
async fn a_bearer_token_guards_the_endpoint() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools()).bearer_token("s3cret")).await;
    let url = handle.url();
    let refused = post(&url).json(&initialize()).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert!(
        refused.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let wrong = post(&url)
        .bearer_auth("guess")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    let ok = post(&url)
        .bearer_auth("s3cret")
        .json(&initialize())
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    handle.shutdown().await;
}

/// Writes `lines` to a server on stdio-like streams and returns the replies to the requests
/// with ids (those without id get no reply).
async fn over_stdio(lines: &[&str], replies: usize) -> Vec<Value> {
    let (client, server_end) = tokio::io::duplex(1 << 16);
    let (server_in, server_out) = tokio::io::split(server_end);
    let server =
        tokio::spawn(McpServer::new(tinyagent_demo::all_tools()).serve_io(server_in, server_out));
    let (client_in, mut client_out) = tokio::io::split(client);
    for line in lines {
        client_out.write_all(line.as_bytes()).await.unwrap();
        client_out.write_all(b"\n").await.unwrap();
    }
    let mut reader = BufReader::new(client_in).lines();
    let mut out = Vec::new();
    while out.len() < replies {
        let line = tokio::time::timeout(Duration::from_secs(20), reader.next_line())
            .await
            .expect("a reply within 20 s")
            .unwrap()
            .expect("the server is still there");
        out.push(serde_json::from_str(&line).unwrap());
    }
    drop(client_out);
    drop(reader);
    server.abort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lines_that_are_not_json_rpc_get_replies_over_stdio_and_the_session_goes_on() {
    let init = initialize().to_string();
    let replies = over_stdio(
        &[
            &init,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "this is not json",
            r#"{"id": 5, "what": "no method"}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"calculator","arguments":[1]}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#,
        ],
        6,
    )
    .await;
    let by_id = |id: Value| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .unwrap_or_else(|| panic!("no reply with id {id} in {replies:?}"))
            .clone()
    };
    assert!(by_id(json!(1))["result"]["serverInfo"].is_object());
    assert_eq!(by_id(Value::Null)["error"]["code"], -32700);
    assert_eq!(by_id(json!(5))["error"]["code"], -32600);
    assert_eq!(by_id(json!(6))["error"]["code"], -32602);
    assert_eq!(by_id(json!(7))["error"]["code"], -32602);
    assert_eq!(
        by_id(json!(8))["result"]["tools"].as_array().unwrap().len(),
        4
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stdio_binary_answers_a_line_that_is_not_json() {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_serve_demo_tools"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"garbage\n").await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("a reply within 20 s")
        .unwrap()
        .unwrap();
    let reply: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(reply["error"]["code"], -32700, "{reply}");
    drop(stdin);
    // Its input ended before any handshake: it stops.
    let ended = tokio::time::timeout(Duration::from_secs(20), child.wait()).await;
    assert!(ended.is_ok(), "the server ends when its input ends");
}

/// Sends a raw HTTP/1.1 request and reads the answer until the server closes.
async fn raw(addr: std::net::SocketAddr, request: &str) -> String {
    use tokio::io::AsyncReadExt;
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut answer))
        .await
        .expect("the server answers and closes");
    String::from_utf8_lossy(&answer).into_owned()
}

fn initialize_as(host: &str) -> String {
    let body = initialize().to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nAccept: {ACCEPT}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn serve_http_answers_only_the_address_connected_to_and_loopback_names_with_its_port() {
    let handle = serve(McpServer::new(tinyagent_demo::all_tools())).await;
    let addr = handle.local_addr();
    let port = addr.port();
    for host in [
        "evil.example".to_owned(),
        format!("evil.example:{port}"),
        format!("localhost:{}", port ^ 1),
        format!("localhost.evil.example:{port}"),
    ] {
        let answer = raw(addr, &initialize_as(&host)).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{host}: {answer}");
    }
    for host in [
        addr.to_string(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let answer = raw(addr, &initialize_as(&host)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{host}: {answer}");
    }
    handle.shutdown().await;

    let listed =
        serve(McpServer::new(tinyagent_demo::all_tools()).allowed_hosts(["tools.example.com"]))
            .await;
    let answer = raw(listed.local_addr(), &initialize_as("tools.example.com")).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    listed.shutdown().await;
}

#[tokio::test]
async fn serve_http_refuses_an_open_address_without_a_token() {
    let refused = McpServer::new(tinyagent_demo::all_tools())
        .serve_http("0.0.0.0:0")
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            tinyagent_mcp::McpServeError::Unauthenticated { .. }
        ),
        "{refused}"
    );
    assert!(
        refused.to_string().contains("without a bearer token"),
        "{refused}"
    );
}

#[tokio::test]
async fn serve_http_bounds_its_connections() {
    let handle = serve(
        McpServer::new(tinyagent_demo::all_tools())
            .http_header_timeout(Duration::from_millis(500))
            .http_max_connections(2),
    )
    .await;
    let addr = handle.local_addr();
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
        socket.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        held.push(socket);
    }
    let refused = raw(addr, &initialize_as(&addr.to_string())).await;
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    // The header timeout closes the two that never finished their headers.
    for mut socket in held {
        use tokio::io::AsyncReadExt;
        let mut rest = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(20), socket.read_to_end(&mut rest))
            .await
            .expect("a connection without headers is closed");
    }
    let answer = raw(addr, &initialize_as(&addr.to_string())).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    handle.shutdown().await;
}
