//! The `tinyagent` binary end to end: against a loopback server replaying the demo's hand-built
//! Chat Completions streams (`tinyagent-demo/tests/fixtures`, in the exact wire format of
//! OpenAI's spec; see their README), the MCP Python SDK's server and client fixtures, and (when the model
//! file is there, as `scripts/setup.sh` makes sure) the embedded default model.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The binary under test.
const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");

const WEATHER_ANSWER: &str = "北京现在晴，气温 22.5°C，湿度 45%。";
const CALC_ANSWER: &str = "7 × 8 = 56。";

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn fixture(krate: &str, name: &str) -> PathBuf {
    crates_dir().join(krate).join("tests/fixtures").join(name)
}

fn read_fixture(krate: &str, name: &str) -> String {
    let path = fixture(krate, name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// The binary, with an environment that cannot leak in a real model or colours.
fn tinyagent() -> Command {
    let mut cmd = Command::new(BIN);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "RUST_BACKTRACE",
        "RUST_LIB_BACKTRACE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("NO_COLOR", "1")
        .env("TINYAGENT_HISTORY", "")
        .timeout(Duration::from_secs(120));
    cmd
}

/// Runs a command off the async runtime (the mock server lives on it).
async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run tinyagent"))
        .await
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A loopback model server that answers each request with the next fixture.
async fn model_server(replies: &[&str]) -> MockServer {
    let server = MockServer::start().await;
    let bodies = replies
        .iter()
        .map(|name| read_fixture("tinyagent-demo", name));
    mount_replies(&server, bodies).await;
    server
}

/// Answers each request with the next of these server-sent-event bodies.
async fn mount_replies(server: &MockServer, bodies: impl IntoIterator<Item = String>) {
    for body in bodies {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .up_to_n_times(1)
            .mount(server)
            .await;
    }
}

fn on(server: &MockServer) -> Vec<String> {
    vec![
        "--base-url".into(),
        format!("{}/v1", server.uri()),
        "--api-key".into(),
        "sk-test".into(),
    ]
}

/// A failure as the issue wants it: non-zero, exactly one `error:` line, no backtrace.
fn assert_one_error_line(out: &Output, code: i32) -> String {
    let stderr = text(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "stderr: {stderr}\nstdout: {}",
        text(&out.stdout)
    );
    let errors = stderr.lines().filter(|l| l.starts_with("error: ")).count();
    assert_eq!(errors, 1, "one error line expected:\n{stderr}");
    for noise in ["panicked", "backtrace", "RUST_BACKTRACE", "internal error"] {
        assert!(!stderr.contains(noise), "{noise} in:\n{stderr}");
    }
    let extra = stderr
        .lines()
        .filter(|l| !l.starts_with("error: ") && !l.starts_with("hint: "))
        .count();
    assert_eq!(extra, 0, "only error and hint lines expected:\n{stderr}");
    stderr
}

/// A model-server URL on 127.0.0.1 where nothing listens, for as long as this value lives: its
/// port is bound (no other process can take it) but never listened on, so connections are
/// refused at once.
struct ClosedPort {
    _socket: tokio::net::TcpSocket,
    url: String,
}

fn closed_port() -> ClosedPort {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket
        .bind("127.0.0.1:0".parse().expect("an address"))
        .expect("bind 127.0.0.1:0");
    let port = socket.local_addr().expect("the bound address").port();
    ClosedPort {
        _socket: socket,
        url: format!("http://127.0.0.1:{port}/v1"),
    }
}

fn require_python_mcp() {
    let out = std::process::Command::new("python3")
        .args(["-c", "import mcp, mcp.server.mcpserver, mcp.client.stdio"])
        .output();
    match out {
        Ok(out) if out.status.success() => {}
        _ => panic!("python3 with the MCP Python SDK is needed: python3 -m pip install mcp==2.3.0"),
    }
}

fn python_server_command() -> String {
    format!(
        "python3 {}",
        fixture("tinyagent-mcp", "fixture_server.py").display()
    )
}

// ---------------------------------------------------------------------------------------------
// run

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_answers_with_a_tool_call() {
    let server = model_server(&["1_weather_call.sse", "2_weather_answer.sse"]).await;
    let mut cmd = tinyagent();
    cmd.arg("run").args(on(&server)).arg("北京天气怎么样？");
    let out = output(cmd).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(stdout, format!("{WEATHER_ANSWER}\n"));
    // The tool call with its arguments, then its result and duration, on standard error; last
    // what the run took (the fixtures' model, gpt-4o-mini, has a list price).
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    assert_eq!(lines[0], r#"→ get_weather {"city":"北京"}"#);
    assert!(lines[1].starts_with("✓ get_weather ("), "{stderr}");
    assert!(lines[1].contains(" ms) "), "{stderr}");
    assert!(lines[1].contains(r#""temperature":22.5"#), "{stderr}");
    assert!(lines[2].starts_with("(2 model calls · "), "{stderr}");
    assert!(
        lines[2].contains(" tokens in, ") && lines[2].contains(" · $0.0"),
        "{stderr}"
    );

    // The model got the three demo tools and, in the second request, the tool's result.
    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2);
    let names: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["get_weather", "calculator", "get_current_time"]);
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "tool");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .contains("\"temperature\":22.5")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_json_prints_one_event_per_line() {
    let server = model_server(&["1_weather_call.sse", "2_weather_answer.sse"]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--json"])
        .args(on(&server))
        .arg("北京天气怎么样？");
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types
            .iter()
            .filter(|t| **t != "text_delta")
            .copied()
            .collect::<Vec<_>>(),
        [
            "usage",
            "tool_call_started",
            "tool_call_finished",
            "usage",
            "finished"
        ],
        "{events:#?}"
    );
    let started = &events[types
        .iter()
        .position(|t| *t == "tool_call_started")
        .unwrap()];
    assert_eq!(
        started,
        &json!({"type": "tool_call_started", "id": "call_weather_bj", "name": "get_weather",
                "arguments": {"city": "北京"}})
    );
    let finished = &events[types
        .iter()
        .position(|t| *t == "tool_call_finished")
        .unwrap()];
    assert_eq!(finished["id"], "call_weather_bj");
    assert_eq!(finished["is_error"], false);
    assert_eq!(finished["error_kind"], Value::Null);
    assert!(finished["duration_ms"].as_f64().unwrap() >= 0.0);
    let result: Value = serde_json::from_str(finished["content"].as_str().unwrap()).unwrap();
    assert_eq!(result["temperature"], 22.5);
    let deltas: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(deltas, WEATHER_ANSWER);
    let last = events.last().unwrap();
    assert_eq!(last["answer"], WEATHER_ANSWER);
    assert_eq!(last["steps"], 2);
    assert_eq!(events[0]["type"], "usage");
    assert_eq!(events[0]["finish_reason"], "tool_calls");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_quiet_prints_the_answer_only() {
    let server = model_server(&["1_weather_call.sse", "2_weather_answer.sse"]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--quiet"])
        .args(on(&server))
        .args(["北京天气", "怎么样？"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{WEATHER_ANSWER}\n"));
    assert_eq!(text(&out.stderr), "");
    // Several words make one question.
    let body: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(body["messages"][1]["content"], "北京天气 怎么样？");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_reads_the_question_from_standard_input() {
    let server = model_server(&["1_weather_call.sse", "2_weather_answer.sse"]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "-q"])
        .args(on(&server))
        .write_stdin("北京天气怎么样？\n");
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(text(&out.stdout), format!("{WEATHER_ANSWER}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_tool_call_is_shown_and_the_run_goes_on() {
    // The hand-built exchange, asking for a city the weather tool does not know.
    let replies = || {
        let call = read_fixture("tinyagent-demo", "1_weather_call.sse").replace("北京", "火星");
        assert!(call.contains("火星"));
        [call, read_fixture("tinyagent-demo", "2_weather_answer.sse")]
    };
    let server = MockServer::start().await;
    mount_replies(&server, replies()).await;
    let mut cmd = tinyagent();
    cmd.arg("run").args(on(&server)).arg("火星天气怎么样？");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines[0], r#"→ get_weather {"city":"火星"}"#, "{stderr}");
    assert!(lines[1].starts_with("✗ get_weather ("), "{stderr}");
    assert!(
        lines[1].contains("error: ") && lines[1].contains("火星"),
        "{stderr}"
    );

    server.reset().await;
    mount_replies(&server, replies()).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--json"])
        .args(on(&server))
        .arg("火星天气怎么样？");
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let finished: Value = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["is_error"], true, "{finished}");
    assert!(finished["error_kind"].is_string(), "{finished}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_calls_a_tool_of_an_mcp_server() {
    // The weather tool comes from `tinyagent serve-mcp`, started by `--mcp`; no built-in tools.
    let server = model_server(&["1_weather_call.sse", "2_weather_answer.sse"]).await;
    let mut cmd = tinyagent();
    cmd.args([
        "run",
        "--json",
        "--tools",
        "none",
        "--mcp",
        &format!("'{BIN}' serve-mcp"),
    ])
    .args(on(&server))
    .arg("北京天气怎么样？");
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let finished = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(finished["name"], "get_weather");
    assert_eq!(finished["is_error"], false, "{finished}");
    assert!(
        finished["content"].as_str().unwrap().contains("22.5"),
        "{finished}"
    );
    assert_eq!(events.last().unwrap()["answer"], WEATHER_ANSWER);
    // The model was offered the server's four tools.
    let body: Value = server.received_requests().await.unwrap()[0]
        .body_json()
        .unwrap();
    assert_eq!(body["tools"].as_array().unwrap().len(), 4);
}

// ---------------------------------------------------------------------------------------------
// chat

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_keeps_the_session_between_turns() {
    let server = model_server(&[
        "1_weather_call.sse",
        "2_weather_answer.sse",
        "3_calc_call.sse",
        "4_calc_answer.sse",
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["chat", "--quiet"])
        .args(on(&server))
        .write_stdin("北京天气怎么样？\n\n帮我算一下 7 乘以 8 等于多少。\n/exit\nnot sent\n");
    let out = output(cmd).await;
    assert!(out.status.success(), "stderr: {}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("{WEATHER_ANSWER}\n{CALC_ANSWER}\n")
    );
    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 4, "/exit ends the chat");
    // The second question carries the first turn: question, tool call, result, answer.
    let history = bodies[2]["messages"].as_array().unwrap();
    let texts: Vec<&str> = history
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(texts.contains(&"北京天气怎么样？"), "{history:#?}");
    assert!(texts.contains(&WEATHER_ANSWER), "{history:#?}");
    assert_eq!(
        history.last().unwrap()["content"],
        "帮我算一下 7 乘以 8 等于多少。"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_asks_before_a_confirmed_tool_runs() {
    // Twice the weather question: the first call is declined, the second approved.
    let server = model_server(&[
        "1_weather_call.sse",
        "2_weather_answer.sse",
        "1_weather_call.sse",
        "2_weather_answer.sse",
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["chat", "--confirm", "get_weather"])
        .args(on(&server))
        .write_stdin("北京天气怎么样？\nn\n北京天气怎么样？\ny\n/exit\n");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(stderr.matches("[y/N]").count(), 2, "{stderr}");
    assert!(
        stderr.contains("get_weather waits for approval"),
        "{stderr}"
    );
    assert!(
        stderr.contains(r#"run get_weather {"city":"北京"}"#)
            || stderr.contains("run get_weather {\"city\": \"北京\"}"),
        "{stderr}"
    );
    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 4);
    // The model read the denial, then the weather.
    let results: Vec<&str> = [&bodies[1], &bodies[3]]
        .iter()
        .map(|b| {
            b["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        results[0],
        "Error: the call to get_weather was denied: the user declined this call"
    );
    assert!(results[1].contains("22.5"), "{}", results[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_stops_with_an_error_when_not_interactive() {
    let closed = closed_port();
    let mut cmd = tinyagent();
    cmd.args(["chat", "--base-url", &closed.url])
        .write_stdin("北京天气怎么样？\n");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: cannot reach the model server"),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// tools

#[test]
fn tools_lists_the_demo_tools_as_a_table() {
    let out = tinyagent()
        .args(["tools", "--tools", "demo"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("NAME"), "{stdout}");
    assert!(lines[0].contains("DESCRIPTION"), "{stdout}");
    assert!(lines[1].starts_with("get_weather"), "{stdout}");
    assert!(lines[1].contains("city*, unit"), "{stdout}");
    // The weather tool returns a fixed table: it says so, and no longer claims real time.
    assert!(lines[1].contains("demo data"), "{stdout}");
    assert!(!lines[1].contains("实时天气信息"), "{stdout}");
    assert!(lines[2].starts_with("calculator"), "{stdout}");
    assert!(lines[2].contains("operation*, a*, b"), "{stdout}");
    assert!(lines[3].starts_with("get_current_time"), "{stdout}");
}

#[test]
fn tools_json_gives_names_descriptions_and_schemas() {
    let out = tinyagent()
        .args(["tools", "--json", "--tools", "all"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = tool_names(&tools);
    assert_eq!(
        names,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    // The tutorial's schema of get_weather, as the spec gives it.
    assert_eq!(
        tools[0]["input_schema"],
        json!({"type":"object","properties":{
            "city":{"type":"string","description":"城市名称，如北京、上海、广州"},
            "unit":{"type":"string","description":"温度单位","enum":["celsius","fahrenheit"]}},
            "required":["city"]})
    );
    assert_eq!(tools[0]["source"], "demo");
    // The two tools that return canned data say so to the model.
    for i in [0, 3] {
        let description = tools[i]["description"].as_str().unwrap();
        assert!(
            description.contains("demo data") && description.contains("演示数据"),
            "{description}"
        );
    }
    assert!(tools[3]["description"].as_str().unwrap().contains("翻译"));
    assert_eq!(tools[1]["description"], "执行数学运算");
}

#[test]
fn tools_lists_the_tools_of_an_mcp_server() {
    require_python_mcp();
    let out = tinyagent()
        .args(["tools", "--json", "--mcp", &python_server_command()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = tools.as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // With --mcp and no --tools, only the server's tools.
    assert!(
        names.contains(&"echo") && names.contains(&"add"),
        "{names:?}"
    );
    assert!(!names.contains(&"get_weather"), "{names:?}");
    let echo = tools.iter().find(|t| t["name"] == "echo").unwrap();
    assert_eq!(echo["description"], "Echoes the text back");
    assert_eq!(echo["input_schema"]["required"], json!(["text"]));
    assert!(echo["source"].as_str().unwrap().starts_with("python3"));

    // With --tools demo too, the demo tools come first, and the table shows both.
    let out = tinyagent()
        .args([
            "tools",
            "--tools",
            "demo",
            "--mcp",
            &python_server_command(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.lines().nth(1).unwrap().starts_with("get_weather"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("echo ") && l.contains("text*")),
        "{stdout}"
    );
}

// ---------------------------------------------------------------------------------------------
// serve-mcp

#[test]
fn serve_mcp_answers_the_python_client_over_stdio() {
    require_python_mcp();
    let out = std::process::Command::new("python3")
        .arg(fixture("tinyagent-mcp", "fixture_client.py"))
        .arg("stdio")
        .arg(BIN)
        .arg("serve-mcp")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    check_client_report(&serde_json::from_slice(&out.stdout).unwrap());
}

/// The binary serving over HTTP on a port it picks, killed on drop.
struct HttpServe(Child, String);

impl HttpServe {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// `serve-mcp --http` with more options.
    fn start_with(options: &[&str]) -> Self {
        let mut child = std::process::Command::new(BIN)
            .args(["serve-mcp", "--http", "127.0.0.1:0"])
            .args(options)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // It says where it serves once it listens; a child that never says it fails the test
        // after a bounded wait instead of hanging it.
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            let _ = tx.send(lines.next());
            // Keep reading, so that later writes to standard error never fail.
            for _ in lines {}
        });
        let first = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Some(Ok(line))) => line,
            Ok(other) => {
                let _ = child.kill();
                panic!(
                    "serve-mcp --http ended its standard error before saying where it serves \
                     ({other:?}; exit {:?})",
                    child.wait()
                );
            }
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve-mcp --http did not say where it serves within 60 s");
            }
        };
        let url = first
            .split_whitespace()
            .map(|w| w.trim_end_matches([',', '.', ';']))
            .find(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/mcp"))
            .unwrap_or_else(|| panic!("no http://127.0.0.1:PORT/mcp in {first:?}"))
            .to_owned();
        assert!(!url.contains(":0/"), "the real port, not 0: {first}");
        Self(child, url)
    }
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn serve_mcp_answers_the_python_client_over_http_and_tinyagent_itself() {
    require_python_mcp();
    let server = HttpServe::start();
    let out = std::process::Command::new("python3")
        .arg(fixture("tinyagent-mcp", "fixture_client.py"))
        .args(["http", &server.1])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    check_client_report(&serde_json::from_slice(&out.stdout).unwrap());

    // And `tinyagent tools --mcp-url` reads them back.
    let out = tinyagent()
        .args(["tools", "--json", "--tools", "none", "--mcp-url", &server.1])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names = tool_names(&tools);
    assert_eq!(
        names,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    assert_eq!(tools[0]["source"], server.1);
}

#[test]
fn tools_shows_the_servers_names_and_the_tools_not_offered() {
    require_python_mcp();
    let odd = format!(
        "python3 {}",
        fixture("tinyagent-mcp", "odd_server.py").display()
    );
    let out = tinyagent()
        .args(["tools", "--json", "--mcp", &odd])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    let remote_of = |name: &str| -> String {
        tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {tools}"))["remote_name"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(remote_of("files_read"), "files_read");
    assert_eq!(remote_of("u5929_u6c14"), "天气");
    let renamed: Vec<String> = tool_names(&tools)
        .into_iter()
        .filter(|n| n.starts_with("files_read_"))
        .map(remote_of)
        .collect();
    assert_eq!(renamed.len(), 2, "{tools}");
    assert!(
        renamed.contains(&"files.read".to_owned()) && renamed.contains(&"files read".to_owned())
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("tool \"needs_task\" is not offered") && stderr.contains("task support"),
        "{stderr}"
    );
    assert!(!tool_names(&tools).contains(&"needs_task"));

    let out = tinyagent().args(["tools", "--mcp", &odd]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("u5929_u6c14 ") && l.contains("(\"天气\")")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("files_read_") && l.contains("(\"files.read\")")),
        "{table}"
    );
}

#[test]
fn a_guarded_server_needs_mcp_header_and_says_so() {
    let server = HttpServe::start_with(&["--bearer-token", "s3cret"]);
    let out = tinyagent()
        .args(["tools", "--tools", "none", "--mcp-url", &server.1])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(stderr.contains("401"), "{stderr}");
    assert!(
        stderr.contains("--mcp-header 'Authorization: Bearer TOKEN'"),
        "{stderr}"
    );

    let out = tinyagent()
        .args([
            "tools",
            "--json",
            "--tools",
            "none",
            "--mcp-url",
            &server.1,
            "--mcp-header",
            "Authorization: Bearer wrong-guess",
        ])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(
        !stderr.contains("wrong-guess"),
        "the secret is not printed: {stderr}"
    );
    assert!(!text(&out.stdout).contains("wrong-guess"));

    let out = tinyagent()
        .args([
            "tools",
            "--json",
            "--tools",
            "none",
            "--mcp-url",
            &server.1,
            "--mcp-header",
            "Authorization: Bearer s3cret",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tool_names(&tools).len(), 4);

    let out = tinyagent()
        .args([
            "tools",
            "--mcp-header",
            "Authorization s3cret",
            "--mcp-url",
            &server.1,
        ])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 2);
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_mcp_is_a_gateway_to_other_servers() {
    require_python_mcp();
    let server = tokio::task::spawn_blocking(|| {
        HttpServe::start_with(&[
            "--tools",
            "calculator",
            "--mcp",
            &python_server_command(),
            "--mcp",
            &format!("'{BIN}' serve-mcp --tools get_weather"),
        ])
    })
    .await
    .unwrap();
    let toolset = tinyagent_mcp::McpToolset::http(&server.1);
    let tools = toolset.tools().await.expect("list the gateway's tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    for expected in ["calculator", "echo", "add", "get_weather"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let call = |name: &str, input: &str| {
        let tool = tools.iter().find(|t| t.name() == name).unwrap().clone();
        let input = input.to_owned();
        async move { tool.handle(&tinyagent::ToolContext::new(), &input).await }
    };
    assert_eq!(
        call("echo", r#"{"text": "via the gateway"}"#)
            .await
            .unwrap(),
        "echo: via the gateway"
    );
    let weather: Value =
        serde_json::from_str(&call("get_weather", r#"{"city": "北京"}"#).await.unwrap()).unwrap();
    assert_eq!(weather["city"], "北京");
    let err = call("fail", r#"{"reason": "proxied"}"#).await.unwrap_err();
    assert!(
        err.message().contains("failed on purpose: proxied"),
        "{err}"
    );
    drop(toolset);
    tokio::task::spawn_blocking(move || drop(server))
        .await
        .unwrap();
}

fn check_client_report(report: &Value) {
    let tools = report["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "get_weather",
            "calculator",
            "get_current_time",
            "translator"
        ]
    );
    // Offered to MCP clients, the canned tools say they return demo data.
    for tool in [&tools[0], &tools[3]] {
        let description = tool["description"].as_str().unwrap();
        assert!(description.contains("demo data"), "{tool}");
    }
    assert_eq!(report["ok"]["isError"], false);
    let ok: Value = serde_json::from_str(report["ok"]["text"][0].as_str().unwrap()).unwrap();
    assert_eq!(ok["expression"], "10.00 + 3.00 = 13.00");

    // Division by zero: the tool's own error text, whole.
    assert_eq!(report["failing"]["isError"], true);
    assert_eq!(report["failing"]["text"], json!(["除数不能为零"]));

    // Arguments that fail the schema: every violation, by JSON pointer.
    assert_eq!(report["invalid"]["isError"], true);
    let invalid = report["invalid"]["text"][0].as_str().unwrap();
    assert!(
        invalid.contains("invalid arguments (2 problems)"),
        "{invalid}"
    );
    assert!(
        invalid.contains("/operation") && invalid.contains("modulo"),
        "{invalid}"
    );
    assert!(invalid.contains("/a"), "{invalid}");

    assert_eq!(report["translator"]["isError"], false);
    let translated = report["translator"]["text"][0].as_str().unwrap();
    assert!(
        translated.contains("你好，世界") && translated.contains("Hello, World!"),
        "{translated}"
    );
}

// ---------------------------------------------------------------------------------------------
// errors: one readable line, a non-zero exit, no backtrace

#[test]
fn an_unreachable_server_is_one_error_line() {
    let closed = closed_port();
    let url = closed.url.as_str();
    let out = tinyagent()
        .args(["run", "--base-url", url, "北京天气怎么样？"])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(
        stderr.starts_with(&format!("error: cannot reach the model server at {url}")),
        "{stderr}"
    );
    assert!(stderr.contains("hint: "), "{stderr}");
    assert_eq!(text(&out.stdout), "");
}

#[test]
fn an_unreachable_server_is_an_error_event_in_json() {
    let closed = closed_port();
    let url = closed.url.as_str();
    let out = tinyagent()
        .args(["run", "--json", "--base-url", url, "北京天气怎么样？"])
        .output()
        .unwrap();
    assert_one_error_line(&out, 1);
    let stdout = text(&out.stdout);
    let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "error");
    assert_eq!(last["kind"], "unavailable");
}

#[test]
fn credentials_in_urls_never_reach_the_output() {
    let closed = closed_port();
    // The same closed port, with a user and password, and a key in the query string.
    let url = closed
        .url
        .replace("http://", "http://user:pa55w0rd@")
        .replace("/v1", "/v1?api_key=k3y-s3cr3t");
    let shown = closed
        .url
        .replace("http://", "http://[REDACTED]@")
        .replace("/v1", "/v1?api_key=[REDACTED]");
    for json in [false, true] {
        let mut cmd = tinyagent();
        cmd.args(["run", "--provider", "openai", "--base-url", url.as_str()]);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.arg("北京天气怎么样？").output().unwrap();
        let stderr = assert_one_error_line(&out, 1);
        let stdout = text(&out.stdout);
        for secret in ["pa55w0rd", "k3y-s3cr3t"] {
            assert!(!stderr.contains(secret), "{secret} in {stderr}");
            assert!(!stdout.contains(secret), "{secret} in {stdout}");
        }
        assert!(
            stderr.starts_with(&format!("error: cannot reach the model server at {shown}")),
            "{stderr}"
        );
        if json {
            let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            assert_eq!(last["type"], "error");
            assert!(
                last["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains("[REDACTED]"),
                "{last}"
            );
        }
    }
    // An MCP server URL the command line refuses is quoted without its credentials too.
    let out = tinyagent()
        .args(["tools", "--mcp-url", "ftp://ann:pa55w0rd@127.0.0.1/mcp"])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 2);
    assert!(!stderr.contains("pa55w0rd"), "{stderr}");
    assert!(
        stderr.contains("ftp://[REDACTED]@127.0.0.1/mcp"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_key_is_one_error_line() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(401).set_body_raw(
            read_fixture("tinyagent-openai", "error_401.json"),
            "application/json",
        ))
        .mount(&server)
        .await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--base-url", &format!("{}/v1", server.uri())])
        .args(["--api-key", "sk-wrong", "北京天气怎么样？"]);
    let out = output(cmd).await;
    let stderr = assert_one_error_line(&out, 1);
    assert!(stderr.contains("Incorrect API key provided"), "{stderr}");
    assert!(stderr.contains("hint: check the API key"), "{stderr}");
    // The key is sent; a 401 is not retried.
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].headers["authorization"], "Bearer sk-wrong");
}

#[test]
fn an_mcp_command_that_fails_to_start_is_one_error_line() {
    let closed = closed_port();
    let url = closed.url.as_str();
    for command in [
        "/nonexistent/mcp-server --stdio",
        "python3 -c 'import sys; sys.exit(3)'",
    ] {
        let out = tinyagent()
            .args([
                "run",
                "--base-url",
                url,
                "--mcp",
                command,
                "北京天气怎么样？",
            ])
            .output()
            .unwrap();
        let stderr = assert_one_error_line(&out, 1);
        assert!(stderr.contains("MCP server"), "{stderr}");
        let out = tinyagent()
            .args(["tools", "--mcp", command])
            .output()
            .unwrap();
        assert_one_error_line(&out, 1);
    }
}

#[test]
fn a_missing_model_file_is_one_error_line() {
    let out = tinyagent()
        .env("TINYAGENT_GGUF", "/nonexistent.gguf")
        .args(["run", "北京天气怎么样？"])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(
        stderr.starts_with("error: cannot load the local model"),
        "{stderr}"
    );
    assert!(stderr.contains("/nonexistent.gguf"), "{stderr}");
    assert!(stderr.contains("scripts/fetch-model.sh"), "{stderr}");
    // The variable's former name is still read, and the error gives the new one.
    let out = tinyagent()
        .env_remove("TINYAGENT_GGUF")
        .env("TINYAGENT_MODEL", "/nonexistent.gguf")
        .args(["run", "北京天气怎么样？"])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(stderr.contains("/nonexistent.gguf"), "{stderr}");
    assert!(stderr.contains("TINYAGENT_GGUF"), "{stderr}");
    let out = tinyagent()
        .args([
            "run",
            "--model-file",
            "/nonexistent.gguf",
            "北京天气怎么样？",
        ])
        .output()
        .unwrap();
    assert_one_error_line(&out, 1);
}

#[test]
fn usage_errors_exit_with_2() {
    let out = tinyagent()
        .args(["run", "--tools", "nope", "q"])
        .output()
        .unwrap();
    assert_one_error_line(&out, 2);
    let out = tinyagent().args(["run"]).write_stdin("").output().unwrap();
    assert_one_error_line(&out, 2);
    let out = tinyagent()
        .args(["run", "--base-url", "localhost:8080", "q"])
        .output()
        .unwrap();
    assert_one_error_line(&out, 2);
    // clap's own errors.
    let out = tinyagent()
        .args(["run", "--no-such-flag", "q"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = tinyagent().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(
        help.contains("Exit codes:") && help.contains("OPENAI_BASE_URL"),
        "{help}"
    );
}

// ---------------------------------------------------------------------------------------------
// the embedded model

#[test]
fn the_local_model_answers_with_a_weather_tool_call() {
    let model = crates_dir().join("../models/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf");
    assert!(
        model.is_file(),
        "the default model is needed: run `bash scripts/fetch-model.sh` ({} is missing)",
        model.display()
    );
    let started = Instant::now();
    let out = tinyagent()
        .env_remove("TINYAGENT_GGUF")
        .env_remove("TINYAGENT_MODEL")
        .args(["run", "--json", "--threads", "1", "北京天气怎么样？"])
        .output()
        .unwrap();
    // With --json a failure is an event on standard output: show both.
    assert!(
        out.status.success(),
        "{:?}\n{}\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    eprintln!("local run took {:?}", started.elapsed());
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = events
        .iter()
        .find(|e| e["type"] == "tool_call_started")
        .unwrap_or_else(|| panic!("no tool call: {events:#?}"));
    assert_eq!(call["name"], "get_weather", "{events:#?}");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .unwrap();
    assert_eq!(result["is_error"], false, "{events:#?}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "finished", "{events:#?}");
    assert!(
        !last["answer"].as_str().unwrap().trim().is_empty(),
        "{events:#?}"
    );
}

/// The `name` of each tool in `tinyagent tools --json` output.
fn tool_names(tools: &Value) -> Vec<&str> {
    tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

#[test]
fn mcp_oauth_asks_only_servers_that_require_it_and_says_what_failed() {
    let config = std::env::temp_dir().join(format!("tinyagent-cli-oauth-{}", std::process::id()));
    let open = HttpServe::start_with(&[]);
    let out = tinyagent()
        .env("XDG_CONFIG_HOME", &config)
        .args([
            "tools",
            "--json",
            "--tools",
            "none",
            "--mcp-url",
            &open.1,
            "--mcp-oauth",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        tool_names(&tools).len(),
        4,
        "an open server needs no authorization"
    );
    assert!(
        !text(&out.stderr).contains("authorize"),
        "{}",
        text(&out.stderr)
    );

    // A server that answers 401 but publishes no OAuth metadata cannot be authorized with.
    let guarded = HttpServe::start_with(&["--bearer-token", "s3cret"]);
    let out = tinyagent()
        .env("XDG_CONFIG_HOME", &config)
        .args([
            "tools",
            "--tools",
            "none",
            "--mcp-url",
            &guarded.1,
            "--mcp-oauth",
        ])
        .output()
        .unwrap();
    let stderr = assert_one_error_line(&out, 1);
    assert!(
        stderr.contains("OAuth authorization failed while discovering the authorization server"),
        "{stderr}"
    );
    assert!(
        stderr.contains("mcp-oauth"),
        "the hint names where tokens are kept: {stderr}"
    );

    let out = tinyagent().args(["tools", "--mcp-oauth"]).output().unwrap();
    let stderr = assert_one_error_line(&out, 2);
    assert!(
        stderr.contains("--mcp-oauth needs an --mcp-url server"),
        "{stderr}"
    );
}

/// Answers every request whose body contains `text` with the fixture `reply`.
async fn reply_when(server: &MockServer, text: &str, reply: &str) {
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(wiremock::matchers::body_string_contains(text))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(read_fixture("tinyagent-demo", reply), "text/event-stream"),
        )
        .mount(server)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_reports_tools_arguments_and_answers_without_a_tool() {
    let server = MockServer::start().await;
    // The replayed model: the right calls for the weather and the product, a plain answer
    // to the greeting, and a weather call for the thanks after a conversation.
    reply_when(&server, "北京天气怎么样", "1_weather_call.sse").await;
    reply_when(&server, "7 乘以 8", "3_calc_call.sse").await;
    reply_when(&server, "你好", "2_weather_answer.sse").await;
    reply_when(&server, "谢谢", "1_weather_call.sse").await;
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("questions.jsonl");
    std::fs::write(
        &questions,
        [
            json!({"question": "北京天气怎么样？", "tool": "get_weather", "arguments": {"city": ["北京", "Beijing"], "unit": [null, "celsius"]}}),
            // The call has a = 7, b = 8: the tool is right, the arguments are not.
            json!({"id": "product", "question": "帮我算一下 7 乘以 8 再加 1", "tool": "calculator", "arguments": {"a": 7, "b": 9}}),
            json!({"part": "reporting", "question": "你好！", "tool": null}),
            json!({"part": "reporting", "history": [{"user": "上海天气？"}, {"call": {"name": "get_weather", "arguments": {"city": "上海"}}, "result": "{\"temperature\": 25}"}, {"assistant": "25 ℃。"}], "question": "谢谢！", "tool": null}),
        ]
        .iter()
        .map(|q| q.to_string() + "\n")
        .collect::<String>(),
    )
    .unwrap();
    let report_file = dir.path().join("report.json");
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(&questions)
        .args(on(&server))
        .arg("--report")
        .arg(&report_file)
        .arg("--json");
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    let report: Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&report_file).unwrap()).unwrap();
    assert_eq!(report, written);
    let summaries = report["summaries"].as_array().unwrap();
    let parts: Vec<&str> = summaries
        .iter()
        .map(|s| s["part"].as_str().unwrap())
        .collect();
    assert_eq!(parts, ["reporting", "all"]);
    assert_eq!(summaries[0]["questions"], 2);
    assert_eq!(summaries[0]["need_a_tool"], 0);
    assert_eq!(summaries[0]["right_tool"], Value::Null);
    let whole = summaries.last().unwrap();
    assert_eq!(whole["questions"], 4);
    assert_eq!(whole["need_a_tool"], 2);
    assert_eq!(whole["right_tool"], 1.0);
    assert_eq!(whole["right_arguments"], 0.5);
    assert_eq!(whole["no_tool_precision"], 1.0);
    assert_eq!(whole["no_tool_recall"], 0.5);
    assert_eq!(whole["errors"], 0);
    assert_eq!(report["confusion"]["(none)"]["get_weather"], 1);
    assert_eq!(report["confusion"]["(none)"]["(none)"], 1);
    assert_eq!(report["confusion"]["calculator"]["calculator"], 1);
    let questions = report["questions"].as_array().unwrap();
    assert_eq!(questions[1]["id"], "product");
    assert_eq!(
        questions[1]["arguments"],
        json!({"operation": "multiply", "a": 7, "b": 8})
    );
    assert_eq!(questions[2]["answer"], WEATHER_ANSWER);
    // The history went to the model before the question, the call with its result.
    let requests = server.received_requests().await.unwrap();
    let thanks: Value = requests
        .iter()
        .map(|r| r.body_json::<Value>().unwrap())
        .find(|b| b.to_string().contains("谢谢"))
        .unwrap();
    let roles: Vec<&str> = thanks["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    // One line per question on standard error, as it is answered.
    assert_eq!(
        stderr.lines().filter(|l| l.contains(" → ")).count(),
        4,
        "{stderr}"
    );

    // Without --json: the tables.
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(dir.path().join("questions.jsonl"))
        .args(on(&server));
    let out = output(cmd).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("right tool"), "{stdout}");
    assert!(stdout.contains("expected \\ called"), "{stdout}");
}

#[test]
fn eval_refuses_a_bad_file_and_a_tool_not_offered() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"question\": \"a\", \"tool\": null}\n{\"question\": 3}\n",
    )
    .unwrap();
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(&bad)
        .arg("--base-url")
        .arg("http://127.0.0.1:9/v1");
    let out = cmd.output().unwrap();
    let line = assert_one_error_line(&out, 2);
    assert!(line.contains("line 2"), "{line}");

    let other = dir.path().join("other.jsonl");
    std::fs::write(
        &other,
        "{\"question\": \"translate hi\", \"tool\": \"translator\"}\n",
    )
    .unwrap();
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(&other)
        .arg("--base-url")
        .arg("http://127.0.0.1:9/v1");
    let out = cmd.output().unwrap();
    let line = assert_one_error_line(&out, 2);
    assert!(line.contains("`translator`"), "{line}");
    assert!(
        text(&out.stderr).contains("--tools"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_mcp_passes_the_prompts_and_resources_of_the_servers_it_fronts() {
    use tinyagent_mcp::{
        McpPrompt, McpPromptMessage, McpResource, McpResourceTemplate, McpServer, ResourceBody,
    };
    let upstream = McpServer::new(tinyagent_demo::all_tools())
        .prompt(
            McpPrompt::new("greet", |args| async move {
                Ok(vec![McpPromptMessage::user(format!(
                    "Say hello to {}",
                    args["name"]
                ))])
            })
            .description("A greeting")
            .argument("name", "who to greet", true),
        )
        .resource(McpResource::text(
            "file:///notes.txt",
            "notes",
            "text/plain",
            "remember the milk",
        ))
        .resource(McpResource::bytes(
            "file:///icon.png",
            "icon",
            "image/png",
            vec![1, 2, 3],
        ))
        .resource_template(McpResourceTemplate::new(
            "orders://{id}",
            "order",
            "text/plain",
            |vars| async move { Ok(ResourceBody::Text(format!("order {}", vars["id"]))) },
        ))
        .serve_http("127.0.0.1:0")
        .await
        .unwrap();
    let url = upstream.url().to_owned();
    let gateway = tokio::task::spawn_blocking(move || {
        HttpServe::start_with(&["--tools", "none", "--mcp-url", &url])
    })
    .await
    .unwrap();
    let toolset = tinyagent_mcp::McpToolset::http(&gateway.1);
    let prompts = toolset.prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    let messages = toolset.prompt("greet", [("name", "Ada")]).await.unwrap();
    assert_eq!(messages[0].to_message().text(), "Say hello to Ada");
    let err = toolset
        .prompt("greet", Vec::<(String, String)>::new())
        .await
        .unwrap_err();
    assert!(
        err.message().contains("needs the argument \"name\""),
        "{err}"
    );
    let uris: Vec<String> = toolset
        .resources()
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.uri)
        .collect();
    assert_eq!(
        uris,
        ["file:///notes.txt", "file:///icon.png", "orders://{id}"]
    );
    let notes = toolset.read_resource("file:///notes.txt").await.unwrap();
    assert_eq!(
        notes,
        [tinyagent::ContentPart::resource_text(
            "file:///notes.txt",
            Some("text/plain".to_owned()),
            "remember the milk"
        )]
    );
    let icon = toolset.read_resource("file:///icon.png").await.unwrap();
    assert_eq!(
        icon,
        [tinyagent::ContentPart::resource_blob(
            "file:///icon.png",
            Some("image/png".to_owned()),
            "AQID"
        )]
    );
    let order = toolset.read_resource("orders://9").await.unwrap();
    assert!(format!("{order:?}").contains("order 9"), "{order:?}");
    upstream.shutdown().await;
}

/// A Responses API stream: one function call, or one text answer (the events a client reads).
fn responses_stream(call: Option<(&str, &str)>, text: &str) -> String {
    let mut events = vec![json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}})];
    let item = match call {
        Some((name, arguments)) => {
            let added = json!({"id": "fc_1", "type": "function_call", "status": "in_progress",
                "call_id": "call_1", "name": name, "arguments": ""});
            events.push(
                json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
            );
            events.push(json!({"type": "response.function_call_arguments.delta",
                "item_id": "fc_1", "output_index": 0, "delta": arguments}));
            json!({"id": "fc_1", "type": "function_call", "status": "completed",
                "call_id": "call_1", "name": name, "arguments": arguments})
        }
        None => {
            events.push(
                json!({"type": "response.output_text.delta", "item_id": "msg_1",
                "output_index": 0, "content_index": 0, "delta": text}),
            );
            json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
    };
    events.push(json!({"type": "response.output_item.done", "output_index": 0, "item": item}));
    events.push(
        json!({"type": "response.completed", "response": {"id": "resp_1",
        "object": "response", "status": "completed", "output": [item],
        "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60}}}),
    );
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_speaks_the_responses_api_with_provider_openai_responses() {
    let server = MockServer::start().await;
    for body in [
        responses_stream(Some(("get_weather", r#"{"city":"北京"}"#)), ""),
        responses_stream(None, "北京今天晴，22.5℃。"),
    ] {
        Mock::given(method("POST"))
            .and(path("/v1/responses"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    let mut cmd = tinyagent();
    cmd.args(["run", "--provider", "openai-responses"])
        .args(on(&server))
        .arg("北京天气怎么样？");
    let out = output(cmd).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "stderr: {stderr}");
    assert_eq!(stdout, "北京今天晴，22.5℃。\n");
    assert!(
        stderr.starts_with(r#"→ get_weather {"city":"北京"}"#),
        "{stderr}"
    );
    let bodies: Vec<Value> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| r.body_json().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["tools"][0]["name"], "get_weather");
    let input = bodies[1]["input"].as_array().unwrap();
    assert_eq!(input[1]["type"], "function_call");
    assert_eq!(input[2]["type"], "function_call_output");
    assert_eq!(input[2]["call_id"], "call_1");
    assert!(input[2]["output"].as_str().unwrap().contains("22.5"));
}
