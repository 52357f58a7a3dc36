//! The long-run options of `run`, `chat`, `serve` and `eval`, through the real binary against
//! loopback model servers: a fallback with its own server and key, prices, the cost of each
//! call and of the run, a money limit, the answer at the step limit, tool search over an MCP
//! server of 500 tools, and the context budget of a long conversation.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use assert_cmd::Command;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");
const WEATHER_ANSWER: &str = "北京现在晴，气温 22.5°C，湿度 45%。";
const PATIENCE: Duration = Duration::from_secs(60);

fn fixture(name: &str) -> String {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-demo/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// The `usage` a fixture's stream reports: (prompt tokens, completion tokens).
fn fixture_usage(name: &str) -> (u64, u64) {
    let text = fixture(name);
    let usage = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .find_map(|chunk| chunk.get("usage").filter(|u| u.is_object()).cloned())
        .expect("a usage chunk");
    (
        usage["prompt_tokens"].as_u64().unwrap(),
        usage["completion_tokens"].as_u64().unwrap(),
    )
}

/// The binary, with an environment that cannot leak in a real model, keys or colours.
fn tinyagent() -> Command {
    let mut cmd = Command::new(BIN);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "TINYAGENT_FALLBACK",
        "TINYAGENT_PRICES",
        "TINYAGENT_API_KEYS",
        "RUST_BACKTRACE",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("NO_COLOR", "1")
        .env("TINYAGENT_HISTORY", "")
        .timeout(Duration::from_secs(120));
    cmd
}

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run tinyagent"))
        .await
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A model server answering each request with the next of these streams.
async fn model_server(bodies: impl IntoIterator<Item = String>) -> MockServer {
    let server = MockServer::start().await;
    for body in bodies {
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    server
}

/// A model server answering every streamed request with the same stream, and every request
/// that is not streamed (a summary's) with `answer` as one completion.
async fn steady_server(body: String, answer: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(wiremock::matchers::body_partial_json(
            json!({"stream": true}),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-s", "object": "chat.completion", "created": 1741570100,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": "stop", "logprobs": null}],
            "usage": {"prompt_tokens": 500, "completion_tokens": 40, "total_tokens": 540}})))
        .mount(&server)
        .await;
    server
}

async fn requests(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r: &Request| r.body_json::<Value>().expect("a JSON request"))
        .collect()
}

/// A Chat Completions stream: a tool call or a text answer, with a usage chunk.
fn chat_stream(call: Option<(&str, Value)>, answer: &str) -> String {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1741570100,
               "model": "gpt-4o-mini-2024-07-18",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![];
    match call {
        Some((name, arguments)) => {
            events.push(chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                       "function": {"name": name, "arguments": arguments.to_string()}}]}),
                Value::Null,
            ));
            events.push(chunk(json!({}), json!("tool_calls")));
        }
        None => {
            events.push(chunk(
                json!({"role": "assistant", "content": answer}),
                Value::Null,
            ));
            events.push(chunk(json!({}), json!("stop")));
        }
    }
    events.push(
        json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "created": 1741570100,
        "model": "gpt-4o-mini-2024-07-18", "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}}),
    );
    let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// A loopback URL where nothing listens while this lives (the port is bound, never listened
/// on, so connections are refused at once).
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

/// `tinyagent serve` on an ephemeral loopback port, killed when dropped.
struct Serving {
    child: Child,
    base: String,
    _stderr: mpsc::Receiver<String>,
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str], env: &[(&str, &str)]) -> Serving {
    let mut cmd = std::process::Command::new(BIN);
    cmd.arg("serve")
        .args(["--listen", "127.0.0.1:0"])
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("TINYAGENT_API_KEYS")
        .env_remove("TINYAGENT_FALLBACK")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        cmd.env(name, value);
    }
    let mut child = cmd.spawn().expect("start tinyagent serve");
    let (tx, rx) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let base = loop {
        let line = rx.recv_timeout(PATIENCE).unwrap_or_else(|_| {
            panic!("tinyagent serve printed no address; stderr so far: {seen:#?}")
        });
        if let Some(rest) = line.split("on http://").nth(1) {
            break format!("http://{}", rest.split('/').next().unwrap());
        }
        seen.push(line);
    };
    Serving {
        child,
        base,
        _stderr: rx,
    }
}

async fn chat_completion(base: &str, content: &str) -> Value {
    let response = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "tinyagent", "messages": [{"role": "user", "content": content}]}))
        .send()
        .await
        .expect("the server answers");
    let status = response.status();
    let body: Value = response.json().await.expect("a JSON answer");
    assert_eq!(status, 200, "{body}");
    body
}

fn python_mcp(script: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(script);
    format!("python3 {}", path.display())
}

// ---------------------------------------------------------------------------------------------
// 1. A fallback names its own server, and its key by the variable that holds it.

const BACKUP_KEY: &str = "sk-backup-9f8e7d";

fn fallback_spec(backup: &MockServer) -> String {
    format!(
        "openai:backup-model,base-url={}/v1,api-key-env=BACKUP_KEY",
        backup.uri()
    )
}

/// What the backup server was sent: each request's model and bearer token.
async fn backup_calls(backup: &MockServer) -> Vec<(String, String)> {
    backup
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let body: Value = r.body_json().unwrap();
            let auth = r
                .headers
                .get("authorization")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            (body["model"].as_str().unwrap_or_default().to_owned(), auth)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fallback_names_its_own_server_and_key_in_run_chat_and_eval() {
    let primary = closed_port();
    let backup = steady_server(fixture("2_weather_answer.sse"), WEATHER_ANSWER).await;
    // OPENAI_BASE_URL points elsewhere: the fallback must not read it.
    let elsewhere = closed_port();
    let env = |cmd: &mut Command| {
        cmd.env("BACKUP_KEY", BACKUP_KEY)
            .env("OPENAI_BASE_URL", &elsewhere.url);
    };

    let mut cmd = tinyagent();
    cmd.args(["run", "--verbose", "--tools", "none", "--base-url"])
        .arg(&primary.url)
        .args(["--api-key", "sk-primary", "--fallback"])
        .arg(fallback_spec(&backup))
        .arg("北京天气怎么样？");
    env(&mut cmd);
    let out = output(cmd).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(WEATHER_ANSWER), "{stdout}");
    assert_eq!(
        backup_calls(&backup).await,
        [("backup-model".to_owned(), format!("Bearer {BACKUP_KEY}"))]
    );
    // The key is read, never shown, even in the debug log.
    assert!(
        !stderr.contains(BACKUP_KEY) && !stdout.contains(BACKUP_KEY),
        "{stderr}"
    );

    // chat: the same agent, a turn from standard input.
    let mut cmd = tinyagent();
    cmd.args(["chat", "--tools", "none", "--base-url"])
        .arg(&primary.url)
        .args(["--fallback"])
        .arg(fallback_spec(&backup))
        .write_stdin("北京天气怎么样？\n");
    env(&mut cmd);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(WEATHER_ANSWER));
    assert_eq!(backup_calls(&backup).await.len(), 2);

    // eval: the questions reach the fallback too (from TINYAGENT_FALLBACK, the same form).
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        json!({"question": "你好！", "tool": null}).to_string() + "\n",
    )
    .unwrap();
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(&questions)
        .args(["--tools", "none", "--json", "--base-url"])
        .arg(&primary.url)
        .env("TINYAGENT_FALLBACK", fallback_spec(&backup));
    env(&mut cmd);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["questions"][0]["answer"], WEATHER_ANSWER, "{report}");
    assert_eq!(backup_calls(&backup).await.len(), 3);
}

#[test]
fn a_fallback_with_a_variable_that_is_not_set_is_a_usage_error() {
    let out = tinyagent()
        .env_remove("NOT_SET_KEY")
        .args([
            "run",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--fallback",
            "openai:m,base-url=http://127.0.0.1:9/v1,api-key-env=NOT_SET_KEY",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().next(),
        Some(
            r#"error: --fallback "openai:m,base-url=http://127.0.0.1:9/v1,api-key-env=NOT_SET_KEY": the variable NOT_SET_KEY (api-key-env) is not set"#
        ),
        "{stderr}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Prices, the cost of each call and of the run, and a money limit.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cost_of_each_call_and_of_the_run_is_in_the_events_and_the_summary() {
    let server = model_server([
        fixture("1_weather_call.sse"),
        fixture("2_weather_answer.sse"),
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--json", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        // The answering model is gpt-4o-mini-2024-07-18: a dated version of the priced name.
        .args([
            "--api-key",
            "sk-test",
            "--price",
            "gpt-4o-mini=1.5/6",
            "北京天气怎么样？",
        ]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let priced = |(input, output): (u64, u64)| (input as f64 * 1.5 + output as f64 * 6.0) / 1e6;
    let first = priced(fixture_usage("1_weather_call.sse"));
    let second = priced(fixture_usage("2_weather_answer.sse"));
    let usage: Vec<f64> = events
        .iter()
        .filter(|e| e["type"] == "usage")
        .map(|e| e["cost"].as_f64().expect("a cost on each usage event"))
        .collect();
    assert_eq!(usage.len(), 2);
    assert!((usage[0] - first).abs() < 1e-9, "{usage:?} vs {first}");
    assert!((usage[1] - second).abs() < 1e-9, "{usage:?} vs {second}");
    let finished = events.iter().find(|e| e["type"] == "finished").unwrap();
    assert!((finished["cost"].as_f64().unwrap() - (first + second)).abs() < 1e-9);

    // The human summary: the calls, the tokens and the cost, after the answer.
    let server = model_server([fixture("2_weather_answer.sse")]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--tools", "none", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .args(["--api-key", "sk-test", "--price", "gpt-4o-mini=1.5/6", "hi"]);
    let out = output(cmd).await;
    assert!(out.status.success());
    let (input, output_tokens) = fixture_usage("2_weather_answer.sse");
    let last = text(&out.stderr)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(
        last,
        format!(
            "(1 model call · {input} tokens in, {output_tokens} out · ${:.6})",
            second
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_cost_stops_the_run_before_it_spends_more() {
    let server = model_server([
        fixture("1_weather_call.sse"),
        fixture("2_weather_answer.sse"),
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .args([
            "--api-key",
            "sk-test",
            "--price",
            "gpt-4o-mini=1000/1000",
            "--max-cost",
            "0.10",
            "北京天气怎么样？",
        ]);
    let out = output(cmd).await;
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let (input, output_tokens) = fixture_usage("1_weather_call.sse");
    let spent = (input + output_tokens) as f64 * 1000.0 / 1e6;
    assert!(
        stderr.contains(&format!(
            "error: stopped before the next model call: the run's model calls have cost ${spent:.6}, and --max-cost is $0.100000"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("hint: raise the limit with --max-cost USD"));
    // One call was made; the second was never asked for.
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[test]
fn max_cost_needs_a_price_for_every_model() {
    let out = tinyagent()
        .args([
            "run",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "qwen2.5:7b",
            "--max-cost",
            "1",
            "hi",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(r#"error: --max-cost: the price of the model "qwen2.5:7b" is unknown"#),
        "{stderr}"
    );
    assert!(stderr.contains(
        "hint: give it, in US dollars per million tokens: --price qwen2.5:7b=INPUT/OUTPUT"
    ));
    // A price file gives it.
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(&prices, r#"{"qwen2.5:7b": {"input": 0.2, "output": 0.6}}"#).unwrap();
    let out = tinyagent()
        .env("TINYAGENT_PRICES", &prices)
        .args([
            "run",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "qwen2.5:7b",
            "--max-cost",
            "1",
            "hi",
        ])
        .output()
        .unwrap();
    // Past the check, the run fails on the unreachable server instead.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}

// ---------------------------------------------------------------------------------------------
// 3. The answer at the step limit.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_step_answers_with_answer_at_step_limit() {
    let server = model_server([
        fixture("1_weather_call.sse"),
        fixture("2_weather_answer.sse"),
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .args([
            "--api-key",
            "sk-test",
            "--max-steps",
            "2",
            "--answer-at-step-limit",
            "北京天气怎么样？",
        ]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(WEATHER_ANSWER));
    let sent = requests(&server).await;
    assert_eq!(sent.len(), 2);
    assert_ne!(sent[0]["tool_choice"], "none");
    assert_eq!(sent[1]["tool_choice"], "none");

    // Without it, the run fails at the limit, and the hint names the option.
    let server = model_server([fixture("1_weather_call.sse")]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--base-url"])
        .arg(format!("{}/v1", server.uri()))
        .args([
            "--api-key",
            "sk-test",
            "--max-steps",
            "1",
            "北京天气怎么样？",
        ]);
    let out = output(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: no answer after 1 model calls"),
        "{stderr}"
    );
    assert!(stderr.contains("--answer-at-step-limit"), "{stderr}");
}

// ---------------------------------------------------------------------------------------------
// 4. Tool search over an MCP server of 500 tools.

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_mcp_tools_are_searched_and_the_right_one_is_called() {
    let server = model_server([
        chat_stream(Some(("flight_status", json!({"flight": "CA981"}))), ""),
        chat_stream(None, "CA981 departed on time."),
    ])
    .await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--json", "--mcp"])
        .arg(python_mcp("many_tools_server.py"))
        .arg("--base-url")
        .arg(format!("{}/v1", server.uri()))
        .args([
            "--api-key",
            "sk-test",
            "What is the status of flight CA981?",
        ]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let events: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_call_finished")
        .expect("the tool ran");
    assert_eq!(result["name"], "flight_status");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("departed on time from gate B12"),
        "{result}"
    );
    let sent = requests(&server).await;
    let offered = tool_names(&sent[0]);
    // The found tools (8 by default) and the two that reach the rest, the right one first.
    assert!(offered.len() <= 10, "{offered:?}");
    assert_eq!(offered[0], "flight_status", "{offered:?}");
    assert!(offered.contains(&"search_tools".to_owned()));
    assert!(offered.contains(&"call_tool".to_owned()));
    let searched_size = serde_json::to_string(&sent[0]).unwrap().len();

    // Off: every definition in the request.
    let server = model_server([chat_stream(None, "ok")]).await;
    let mut cmd = tinyagent();
    cmd.args(["run", "--tool-search", "off", "--mcp"])
        .arg(python_mcp("many_tools_server.py"))
        .arg("--base-url")
        .arg(format!("{}/v1", server.uri()))
        .args([
            "--api-key",
            "sk-test",
            "What is the status of flight CA981?",
        ]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let sent = requests(&server).await;
    assert_eq!(tool_names(&sent[0]).len(), 500);
    let whole_size = serde_json::to_string(&sent[0]).unwrap().len();
    assert!(
        whole_size > 20 * searched_size,
        "{whole_size} vs {searched_size}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eval_offers_searched_tools_and_scores_call_tool_as_the_tool_it_calls() {
    let server = steady_server(
        chat_stream(
            Some((
                "call_tool",
                json!({"name": "flight_status", "arguments": {"flight": "CA981"}}),
            )),
            "",
        ),
        "",
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let questions = dir.path().join("q.jsonl");
    std::fs::write(
        &questions,
        json!({"question": "Is flight CA981 on time?", "tool": "flight_status", "arguments": {"flight": "CA981"}})
            .to_string()
            + "\n",
    )
    .unwrap();
    let mut cmd = tinyagent();
    cmd.arg("eval")
        .arg(&questions)
        .args(["--json", "--tools", "none", "--mcp"])
        .arg(python_mcp("many_tools_server.py"))
        .arg("--base-url")
        .arg(format!("{}/v1", server.uri()))
        .args(["--api-key", "sk-test"]);
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let question = &report["questions"][0];
    assert_eq!(question["called"], "flight_status", "{report}");
    assert_eq!(question["right_tool"], true);
    assert_eq!(question["right_arguments"], true);
    let offered = tool_names(&requests(&server).await[0]);
    assert!(
        offered.len() <= 10 && offered[0] == "flight_status",
        "{offered:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. The context budget of a long conversation, in serve.

/// The tokens of a request's history (every message but the instruction), estimated as the
/// context policy documents it: a token per four ASCII bytes, one per other character, and
/// four for each message's framing.
fn history_tokens(request: &Value) -> u64 {
    let text_tokens = |text: &str| {
        let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
            if c.is_ascii() { (a + 1, o) } else { (a, o + 1) }
        });
        ascii.div_ceil(4) + other
    };
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let content = match &m["content"] {
                Value::String(text) => text_tokens(text),
                Value::Array(parts) => parts
                    .iter()
                    .filter_map(|p| p["text"].as_str())
                    .map(text_tokens)
                    .sum(),
                _ => 0,
            };
            content + 4
        })
        .sum()
}

/// Posts `turns` messages of about 150 tokens each to one session; returns each request the
/// model was sent.
async fn long_conversation(serving: &Serving, model: &MockServer, turns: usize) -> Vec<Value> {
    let client = reqwest::Client::new();
    for turn in 0..turns {
        let input = format!(
            "Turn {turn}: here is a longer note for the record about the project's progress, \
             what was decided in the meeting, the open questions on the budget and the next \
             steps for the team, written out in full so that the conversation grows quickly. {}",
            "More detail follows. ".repeat(20)
        );
        let response = client
            .post(format!("{}/v1/sessions/long-1/messages", serving.base))
            .json(&json!({"input": input}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let events = response.text().await.unwrap();
        assert!(events.contains("finished"), "turn {turn}: {events}");
    }
    requests(model).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_conversation_in_serve_stays_within_the_context_budget() {
    const BUDGET: u64 = 2_000;
    const TURNS: usize = 30;
    let model = steady_server(
        chat_stream(None, "Noted."),
        "The user sent notes on the project's progress, decisions and budget questions.",
    )
    .await;
    let url = format!("{}/v1", model.uri());
    let budget = BUDGET.to_string();
    let serving = serve(
        &[
            "--tools",
            "none",
            "--base-url",
            &url,
            "--context-budget",
            &budget,
            "--keep-tool-outputs",
            "2",
        ],
        &[("OPENAI_API_KEY", "sk-test")],
    );
    let sent = long_conversation(&serving, &model, TURNS).await;
    // The summaries are asked for with the summariser's instruction; the turns' requests are
    // the others.
    let (summaries, turns): (Vec<&Value>, Vec<&Value>) = sent.iter().partition(|r| {
        r["messages"][0]["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Summarise the conversation"))
    });
    assert_eq!(turns.len(), TURNS);
    assert!(!summaries.is_empty(), "no summary was written");
    let largest = turns.iter().map(|r| history_tokens(r)).max().unwrap();
    assert!(largest <= BUDGET, "a request of {largest} tokens");
    // The session keeps every message.
    let session: Value = reqwest::get(format!("{}/v1/sessions/long-1", serving.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(session["messages"].as_array().unwrap().len(), 2 * TURNS);
    drop(serving);

    // Without a budget, the same conversation's last request carries all of it.
    let model = steady_server(chat_stream(None, "Noted."), "").await;
    let url = format!("{}/v1", model.uri());
    let serving = serve(
        &["--tools", "none", "--base-url", &url],
        &[("OPENAI_API_KEY", "sk-test")],
    );
    let sent = long_conversation(&serving, &model, TURNS).await;
    let last = history_tokens(sent.last().unwrap());
    assert!(last > 2 * BUDGET, "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_takes_the_fallback_the_price_and_the_step_limit_answer() {
    let primary = closed_port();
    let backup = model_server([
        fixture("1_weather_call.sse"),
        fixture("2_weather_answer.sse"),
    ])
    .await;
    let spec = fallback_spec(&backup);
    let serving = serve(
        &[
            "--base-url",
            &primary.url,
            "--fallback",
            &spec,
            "--price",
            "gpt-4o-mini=1.5/6",
            "--max-steps",
            "2",
            "--answer-at-step-limit",
        ],
        &[("BACKUP_KEY", BACKUP_KEY)],
    );
    let answer = chat_completion(&serving.base, "北京天气怎么样？").await;
    assert_eq!(answer["choices"][0]["message"]["content"], WEATHER_ANSWER);
    let calls = backup_calls(&backup).await;
    assert_eq!(calls.len(), 2);
    assert!(
        calls
            .iter()
            .all(|(_, auth)| *auth == format!("Bearer {BACKUP_KEY}"))
    );
    assert_eq!(requests(&backup).await[1]["tool_choice"], "none");
}
