//! What the `tinyagent` command shows when the model server misbehaves: a stream cut once, an
//! error event, a silent server, a tool call cut by the token limit, an HTML page with status
//! 200, a reply that never ends. Each test pins the exact `error:` and `hint:` lines (or, when
//! the run recovers, what it says on the way). The servers are loopback only.

use std::process::Output;
use std::time::Duration;

use assert_cmd::Command;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BIN: &str = env!("CARGO_BIN_EXE_tinyagent");

const WEATHER_ANSWER: &str = "北京现在晴，气温 22.5°C，湿度 45%。";

/// The binary, with an environment that cannot leak in a real model or colours.
fn tinyagent() -> Command {
    let mut cmd = Command::new(BIN);
    for var in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "TINYAGENT_TIMEOUT",
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

async fn output(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run tinyagent"))
        .await
        .expect("join")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tinyagent-demo/tests/fixtures")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
}

/// The first `n` events of a fixture, ending there (no finish, no `[DONE]`).
fn first_events(name: &str, n: usize) -> String {
    fixture(name)
        .split("\n\n")
        .take(n)
        .map(|e| format!("{e}\n\n"))
        .collect()
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

async fn mount(server: &MockServer, reply: ResponseTemplate, times: Option<u64>) {
    let mock = Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(reply);
    match times {
        Some(n) => mock.up_to_n_times(n).mount(server).await,
        None => mock.mount(server).await,
    }
}

/// `run` against `base` (up to `/v1`'s parent) with these options and the weather question.
fn run_on(base: &str, options: &[&str]) -> Command {
    let mut cmd = tinyagent();
    cmd.arg("run")
        .args(["--base-url", &format!("{base}/v1"), "--api-key", "sk-test"])
        .args(options)
        .arg("北京天气怎么样？");
    cmd
}

/// The `error:` and `hint:` lines of a failed run (exit code 1), which must be all of its
/// standard error.
fn error_and_hint(out: &Output) -> (String, String) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "an error and a hint line expected:\n{stderr}"
    );
    let error = lines[0]
        .strip_prefix("error: ")
        .unwrap_or_else(|| panic!("{stderr}"));
    let hint = lines[1]
        .strip_prefix("hint: ")
        .unwrap_or_else(|| panic!("{stderr}"));
    (error.to_owned(), hint.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_cut_once_restarts_and_the_answer_is_whole() {
    let server = MockServer::start().await;
    mount(&server, sse(fixture("1_weather_call.sse")), Some(1)).await;
    mount(
        &server,
        sse(first_events("2_weather_answer.sse", 3)),
        Some(1),
    )
    .await;
    mount(&server, sse(fixture("2_weather_answer.sse")), None).await;
    let out = output(run_on(&server.uri(), &[])).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    // The text streamed before the cut stays on the screen, ended by a line break; the
    // notice says it is void; the whole answer follows.
    assert_eq!(stdout, format!("北京现在\n{WEATHER_ANSWER}\n"));
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{stderr}");
    assert_eq!(lines[0], r#"→ get_weather {"city":"北京"}"#);
    assert!(lines[1].starts_with("✓ get_weather ("), "{stderr}");
    assert_eq!(
        lines[2],
        "↻ the reply was cut off and starts again (the text above is void): the stream ended \
         before the response was complete (no finish_reason), after 3 chunks and 12 bytes of \
         text; retrying (attempt 2 of 3, the reply starts again)"
    );
    assert!(lines[3].starts_with("(2 model calls"), "{stderr}");

    // In JSON, an event says so.
    let server = MockServer::start().await;
    mount(
        &server,
        sse(first_events("2_weather_answer.sse", 3)),
        Some(1),
    )
    .await;
    mount(&server, sse(fixture("2_weather_answer.sse")), None).await;
    let out = output(run_on(&server.uri(), &["--json"])).await;
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let types: Vec<String> = stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["type"].to_string())
        .collect();
    let restart = types.iter().position(|t| t == "\"reply_restarted\"");
    assert_eq!(restart, Some(2), "{stdout}");
    assert_eq!(types.last().unwrap(), "\"finished\"");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_event_that_persists_names_the_server() {
    let server = MockServer::start().await;
    let body = format!(
        "{}data: {{\"error\":{{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}}}\n\n",
        first_events("2_weather_answer.sse", 1)
    );
    mount(&server, sse(body), None).await;
    let out = output(run_on(&server.uri(), &["--tools", "none"])).await;
    let (error, hint) = error_and_hint(&out);
    assert_eq!(
        error,
        format!(
            "the model server at {}/v1 failed: the server reported an error: The server had an \
             error while processing your request. Sorry about that! (type server_error)",
            server.uri()
        )
    );
    assert_eq!(
        hint,
        "the trouble is on the server's side and retrying did not help; try again later, or \
         look at the server's logs or status page"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_gives_up_after_the_timeout_flag_or_variable() {
    let server = MockServer::start().await;
    mount(
        &server,
        sse(fixture("2_weather_answer.sse")).set_delay(Duration::from_secs(60)),
        None,
    )
    .await;
    let expected = format!(
        "the model server at {0}/v1 did not answer in time: no answer from \
         {0}/v1/chat/completions within 0.3 s (the first-byte timeout; attempt 3 of 3)",
        server.uri()
    );
    let hint = "give it longer with --timeout SECS (or TINYAGENT_TIMEOUT), or check that the \
                server is up and not overloaded";
    let out = output(run_on(&server.uri(), &["--timeout", "0.3"])).await;
    assert_eq!(error_and_hint(&out), (expected.clone(), hint.to_owned()));
    let mut cmd = run_on(&server.uri(), &[]);
    cmd.env("TINYAGENT_TIMEOUT", "0.3");
    let out = output(cmd).await;
    assert_eq!(error_and_hint(&out), (expected, hint.to_owned()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_call_cut_by_the_token_limit_is_not_run() {
    let server = MockServer::start().await;
    let cut = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\":\\\"北\"}}]},\"finish_reason\":null}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    mount(&server, sse(cut.to_owned()), None).await;
    let out = output(run_on(&server.uri(), &[])).await;
    assert_eq!(
        error_and_hint(&out),
        (
            "the model's reply was cut off by the token limit (max_tokens 4096) while it was \
             calling get_weather; the calls were not run"
                .to_owned(),
            "raise the limit with --max-tokens N".to_owned()
        )
    );
    let out = output(run_on(&server.uri(), &["--max-tokens", "64"])).await;
    assert!(error_and_hint(&out).0.contains("(max_tokens 64)"));
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2, "one model call per run, no tool step");
    let bodies: Vec<serde_json::Value> = requests.iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies[0]["max_tokens"], 4096);
    assert_eq!(bodies[1]["max_tokens"], 64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_with_status_200_names_what_came_back() {
    let server = MockServer::start().await;
    mount(
        &server,
        ResponseTemplate::new(200).set_body_raw(
            "<html><head><title>Welcome to nginx!</title></head></html>",
            "text/html",
        ),
        None,
    )
    .await;
    let out = output(run_on(&server.uri(), &[])).await;
    assert_eq!(
        error_and_hint(&out),
        (
            format!(
                "the model server at {0}/v1 sent an unusable answer: HTTP 200 OK from {0}/v1 \
                 with text/html instead of an event stream: <html><head><title>Welcome to \
                 nginx!</title></head></html>; check the base URL: it must be the root of an \
                 OpenAI-compatible API (usually ending in /v1, such as \
                 https://api.openai.com/v1)",
                server.uri()
            ),
            "check --base-url (or OPENAI_BASE_URL): it must be the root of an \
             OpenAI-compatible API, usually ending in /v1"
                .to_owned()
        )
    );
}

/// Answers every connection with an event stream of text deltas that never ends.
async fn endless_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut buf).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let delta = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"哈\"},\"finish_reason\":null}]}\n\n".repeat(100);
                let framed = format!("{:x}\r\n{delta}\r\n", delta.len());
                while socket.write_all(framed.as_bytes()).await.is_ok() {}
            });
        }
    });
    format!("http://{addr}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_reply_ends_at_the_size_cap() {
    let base = endless_server().await;
    let out = output(run_on(&base, &["--tools", "none", "--quiet"])).await;
    let (error, hint) = error_and_hint(&out);
    let prefix =
        format!("the model server at {base}/v1 sent an unusable answer: the reply grew past ");
    assert!(error.starts_with(&prefix), "{error}");
    assert!(
        error.ends_with(
            " bytes without finishing (the limit is max_reply_bytes = 16777216); the server may \
             be ignoring the token limit sent, max_tokens 4096"
        ),
        "{error}"
    );
    assert_eq!(
        hint,
        "the server did not stop writing; lower --max-tokens, or check that the server honours \
         max_tokens"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escaped_arguments_are_shown_as_text() {
    let server = MockServer::start().await;
    let call = fixture("1_weather_call.sse").replace("北京", "\\\\u5317\\\\u4eac");
    assert!(call.contains(r"\\u5317"), "the fixture carries the city");
    mount(&server, sse(call), Some(1)).await;
    mount(&server, sse(fixture("2_weather_answer.sse")), None).await;
    let out = output(run_on(&server.uri(), &[])).await;
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr.lines().next(),
        Some(r#"→ get_weather {"city":"北京"}"#)
    );
}

#[test]
fn a_model_name_without_a_server_is_a_usage_error() {
    let out = tinyagent()
        .args(["run", "--model", "gpt-4o", "hi"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr.lines().next(),
        Some(r#"error: --model "gpt-4o" names a model on a server, and no server is given"#)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_hands_over_to_the_fallback_model() {
    let failing = MockServer::start().await;
    let body = format!(
        "{}data: {{\"error\":{{\"message\":\"The server had an error while processing your request. Sorry about that!\",\"type\":\"server_error\",\"param\":null,\"code\":null}}}}\n\n",
        first_events("2_weather_answer.sse", 1)
    );
    mount(&failing, sse(body), None).await;
    let backup = MockServer::start().await;
    mount(&backup, sse(fixture("2_weather_answer.sse")), None).await;
    // The fallback is an OpenAI-compatible server too, found through OPENAI_BASE_URL.
    let mut cmd = run_on(
        &failing.uri(),
        &["--tools", "none", "--fallback", "openai:backup-model"],
    );
    cmd.env("OPENAI_BASE_URL", format!("{}/v1", backup.uri()))
        .env("OPENAI_API_KEY", "sk-backup");
    let out = output(cmd).await;
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.ends_with(&format!("{WEATHER_ANSWER}\n")), "{stdout}");
    // The failing server was tried (with its retries), then the backup answered.
    assert_eq!(failing.received_requests().await.unwrap().len(), 3);
    let asked = backup.received_requests().await.unwrap();
    assert_eq!(asked.len(), 1);
    let body: serde_json::Value = asked[0].body_json().unwrap();
    assert_eq!(body["model"], "backup-model");

    // The same from TINYAGENT_FALLBACK.
    let mut cmd = run_on(&failing.uri(), &["--tools", "none"]);
    cmd.env("TINYAGENT_FALLBACK", "openai:backup-model")
        .env("OPENAI_BASE_URL", format!("{}/v1", backup.uri()))
        .env("OPENAI_API_KEY", "sk-backup");
    let out = output(cmd).await;
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(backup.received_requests().await.unwrap().len(), 2);
}

#[test]
fn a_fallback_that_is_not_a_provider_or_has_no_key_is_a_usage_error() {
    for (spec, expected) in [
        (
            "nope:x",
            r#"error: --fallback "nope:x": "nope" is not a provider"#,
        ),
        (
            "gemini",
            r#"error: --fallback "gemini" needs an API key, and GEMINI_API_KEY is not set"#,
        ),
    ] {
        let out = tinyagent()
            .env_remove("GEMINI_API_KEY")
            .env_remove("GEMINI_BASE_URL")
            .args([
                "run",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--fallback",
                spec,
                "hi",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{spec}");
        assert_eq!(text(&out.stderr).lines().next(), Some(expected), "{spec}");
    }
}
