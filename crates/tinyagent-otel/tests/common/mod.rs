//! What the export tests share: the OTLP receiver (a Python process on loopback, built on the
//! official `opentelemetry-proto` package) and the agents whose run they export.

#![allow(dead_code)]

use std::io::Write as _;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::{LlmAgent, Tool, ToolContext, ToolError, Usage, tools};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The receiver: its HTTP and gRPC base URLs. Killed when dropped.
pub struct Receiver {
    _child: tokio::process::Child,
    pub http: String,
    pub grpc: String,
}

impl Receiver {
    pub async fn start() -> Self {
        // The server crate's tests include this file too: the path goes through `crates/`.
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tinyagent-otel/tests/fixtures/otlp_receiver.py"
        );
        let mut child = tokio::process::Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("python3 runs (bash scripts/setup.sh --test installs opentelemetry-proto)");
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let ports = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
            .await
            .expect("the receiver starts")
            .unwrap()
            .expect("it prints its ports (is opentelemetry-proto installed?)");
        let mut ports = ports.split_whitespace();
        let (http, grpc) = (ports.next().unwrap(), ports.next().unwrap());
        Self {
            _child: child,
            http: format!("http://127.0.0.1:{http}"),
            grpc: format!("http://127.0.0.1:{grpc}"),
        }
    }

    async fn get(&self, path: &str) -> Vec<Value> {
        let body = reqwest::get(format!("{}{path}", self.http))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        serde_json::from_str(&body).unwrap()
    }

    /// The spans received so far, without waiting (after the exporter has been shut down,
    /// which sends what it holds before it returns, that is every span).
    pub async fn spans_now(&self) -> Vec<Value> {
        self.get("/spans").await
    }

    /// The spans received so far, once at least `n` have arrived (waits for the exporter).
    pub async fn spans(&self, n: usize) -> Vec<Value> {
        for _ in 0..200 {
            let spans = self.get("/spans").await;
            if spans.len() >= n {
                return spans;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let spans = self.get("/spans").await;
        panic!("{} spans arrived, not {n}: {spans:#?}", spans.len());
    }

    /// The metrics received so far, once one named `name` has arrived.
    pub async fn metrics(&self, name: &str) -> Vec<Value> {
        for _ in 0..200 {
            let metrics = self.get("/metrics").await;
            if metrics.iter().any(|m| m["name"] == name) {
                return metrics;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no metric {name} arrived: {:#?}",
            self.get("/metrics").await
        );
    }
}

/// A tool that answers with the weather.
pub fn weather() -> Arc<dyn Tool> {
    tools::new_tool(
        "get_weather",
        "The weather of a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        |_ctx: ToolContext, input: String| async move {
            let city: Value = serde_json::from_str(&input).unwrap_or_default();
            Ok::<_, ToolError>(format!(
                "{}: sunny, 21 °C",
                city["city"].as_str().unwrap_or("?")
            ))
        },
    )
}

/// A tool that always fails, with the logging middleware (whose failure line quotes the
/// error: it must not reach exported spans unless content is captured).
pub fn broken() -> Arc<dyn Tool> {
    let tool = tools::new_tool(
        "broken",
        "Always fails",
        json!({"type": "object"}),
        |_ctx: ToolContext, _input: String| async move {
            Err::<String, _>(ToolError::failed("the disk is on fire"))
        },
    );
    tools::wrap_tool(tool, [tools::with_logging()])
}

/// A lead agent whose run makes two tool calls (one fails), then asks a nested agent
/// (`helper`, as a tool), then answers: three model calls, three tool calls, two runs.
pub fn lead(arguments: &str) -> LlmAgent {
    let helper = LlmAgent::builder("helper")
        .model(ScriptedModel::new([
            reply::text("the helper's answer").usage(Usage::new(7, 3))
        ]))
        .build()
        .unwrap();
    LlmAgent::builder("lead")
        .model(ScriptedModel::new([
            reply::tool_calls([
                ("call_1", "get_weather", arguments),
                ("call_2", "broken", "{}"),
            ])
            .usage(Usage::new(100, 20)),
            reply::tool_call("call_3", "helper", r#"{"message":"help"}"#)
                .usage(Usage::new(150, 10)),
            reply::text("It is sunny in Oslo.").usage(Usage::new(200, 8)),
        ]))
        .tool(weather())
        .tool(broken())
        .tool(tools::new_agent_tool(helper))
        .build()
        .unwrap()
}

/// The span named `name` (the first, in the order received).
pub fn span<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span {name:?} in {spans:#?}"))
}

/// The samples of `text`, as the official Python parser reads them.
pub fn parse_prometheus(text: &str) -> Vec<Value> {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tinyagent-otel/tests/fixtures/parse_prometheus.py"
    );
    let mut child = std::process::Command::new("python3")
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 runs (bash scripts/setup.sh --test installs prometheus-client)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the parser refused the text:\n{text}");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `labels`.
pub fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Value> = samples
        .iter()
        .filter(|s| s["name"] == name)
        .filter(|s| labels.iter().all(|(k, v)| s["labels"][k] == *v))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name} {labels:?}: {found:#?}\nin {samples:#?}"
    );
    found[0]["value"].as_f64().unwrap()
}
