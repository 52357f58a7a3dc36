//! What telemetry costs an agent, side by side in one run: no subscriber at all, a
//! [`Telemetry`] with nothing configured (its layer installed), metrics only (Prometheus),
//! spans only, and both exported (spans through the batch processor, over OTLP/HTTP to a
//! receiver on 127.0.0.1 that answers every export). Beside them, `sdk`: no subscriber, and
//! for each run the same four spans (names, kinds, nesting, attributes and their values' types
//! as tinyagent's) made straight with the OpenTelemetry API on the SDK's tracer and batch
//! processor, to the same receiver: what the standard machinery itself costs, with no
//! `tracing` bridge in between. `sampled` is spans only with one trace in a hundred kept
//! (decided at each run's first span). `OVERHEAD_SETTINGS=off,export` picks some of `off`,
//! `idle`, `metrics`, `spans`, `sampled`, `export`, `sdk`.
//!
//! Two figures per setting, each a run of its own process (a process has one global
//! subscriber), alternating settings for three rounds:
//!
//! - **steps**: 20,000 runs one after another of an agent whose model (no delay) asks for one
//!   typed tool call and then answers: µs per run, which is two model calls, one tool call
//!   and four spans;
//! - **batch**: the `many_runs` batch, 100,000 concurrent runs of the same agent with 50 ms
//!   per model call on 2 workers: seconds for the batch.
//!
//! ```text
//! cargo bench -p tinyagent-otel --bench overhead [-- --runs N --steps N --batch N]
//! ```

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use opentelemetry::trace::{
    Span as _, SpanKind, TraceContextExt as _, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use schemars::JsonSchema;
use serde::Deserialize;
use tinyagent::{
    AgentExt, BoxFuture, LlmAgent, Message, Model, ModelError, ModelRequest, ModelResponse, Part,
    Role, Session, ToolCall, ToolError, Usage, model::FinishReason, tools,
};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Asks for `add` on the user's two numbers, then answers with the tool's result.
struct ScriptModel {
    latency: Duration,
}

impl Model for ScriptModel {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            if !self.latency.is_zero() {
                tokio::time::sleep(self.latency).await;
            }
            let last = req.messages.last().expect("a message");
            if let Some(result) = last.tool_results().next() {
                return Ok(ModelResponse::new(
                    Message::assistant(format!("= {}", result.content)),
                    Usage::new(40, 4),
                    FinishReason::Stop,
                ));
            }
            let question = last.text();
            let (a, b) = question.split_once('+').expect("a sum");
            let args = format!(r#"{{"a": {}, "b": {}}}"#, a.trim(), b.trim());
            Ok(ModelResponse::new(
                Message::new(
                    Role::Assistant,
                    vec![Part::ToolCall(ToolCall::new("c1", "add", args))],
                ),
                Usage::new(30, 8),
                FinishReason::ToolCalls,
            ))
        })
    }
}

#[derive(Deserialize, JsonSchema)]
struct AddInput {
    a: i64,
    b: i64,
}

fn agent(latency: Duration) -> Arc<LlmAgent> {
    let add = tools::new_func("add", "Adds two integers", |i: AddInput| async move {
        Ok::<_, ToolError>(i.a + i.b)
    })
    .read_only();
    Arc::new(
        LlmAgent::builder("adder")
            .model(Arc::new(ScriptModel { latency }))
            .tool(add)
            .build()
            .expect("an agent"),
    )
}

/// A receiver that reads every OTLP/HTTP export and answers 200, on 127.0.0.1.
fn sink() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("an address");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("a stream"));
                let mut writer = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let header = line.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = header.split_once(':')
                            && name.eq_ignore_ascii_case("content-length")
                        {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\n\
                                  content-length: 0\r\n\r\n";
                    if writer.write_all(answer.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

/// A tracer provider as `Telemetry` builds one for spans (batch processor, OTLP/HTTP protobuf),
/// exporting to `endpoint`.
fn sdk_provider(endpoint: &str) -> SdkTracerProvider {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(format!("{endpoint}/v1/traces"))
        .build()
        .expect("an exporter");
    SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .build()
}

/// The four spans of one run, as tinyagent makes them, made with the OpenTelemetry API: an
/// `invoke_agent` span holding two `chat` spans and the `execute_tool` span between them,
/// with the attributes each gets by its end.
fn sdk_spans(tracer: &SdkTracer, run: usize) {
    let agent = tracer
        .span_builder("invoke_agent adder")
        .with_kind(SpanKind::Internal)
        .with_attributes([
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", "adder"),
            KeyValue::new("gen_ai.conversation.id", format!("session-{run}")),
            KeyValue::new("invocation.id", format!("invocation-{run}")),
        ])
        .start(tracer);
    let agent_cx = Context::current_with_span(agent);
    for (k, finish) in [(0, "tool_calls"), (1, "stop")] {
        let mut chat = tracer
            .span_builder("chat script")
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.request.model", "script"),
            ])
            .start_with_context(tracer, &agent_cx);
        chat.set_attributes([
            KeyValue::new("gen_ai.usage.input_tokens", 30_i64 + 10 * k),
            KeyValue::new("gen_ai.usage.output_tokens", 8_i64 - 4 * k),
            KeyValue::new("gen_ai.response.finish_reasons", format!("[\"{finish}\"]")),
        ]);
        chat.end();
        if k == 0 {
            let mut tool = tracer
                .span_builder("execute_tool add")
                .with_kind(SpanKind::Internal)
                .with_attributes([
                    KeyValue::new("gen_ai.operation.name", "execute_tool"),
                    KeyValue::new("gen_ai.tool.name", "add"),
                    KeyValue::new("gen_ai.tool.call.id", "c1"),
                    KeyValue::new("gen_ai.tool.type", "function"),
                ])
                .start_with_context(tracer, &agent_cx);
            tool.set_attributes([
                KeyValue::new("duration_ms", 0.01),
                KeyValue::new("output_len", 1_i64),
            ]);
            tool.end();
        }
    }
    let agent = agent_cx.span();
    agent.set_attribute(KeyValue::new("gen_ai.usage.input_tokens", 70_i64));
    agent.set_attribute(KeyValue::new("gen_ai.usage.output_tokens", 12_i64));
    agent.end();
}

/// The `Telemetry` of `setting` (built inside the runtime): none for `off` and `sdk`, nothing
/// configured for `idle`, Prometheus only for `metrics`, spans only for `spans` (one trace in a
/// hundred kept for `sampled`), spans and metrics for `export`; spans go to a fresh [`sink`].
fn telemetry_for(setting: &str) -> Option<Telemetry> {
    match setting {
        "off" | "sdk" => None,
        "idle" => Some(Telemetry::builder().env(false).build().expect("telemetry")),
        "metrics" => Some(
            Telemetry::builder()
                .env(false)
                .prometheus(true)
                .build()
                .expect("telemetry"),
        ),
        "spans" => Some(
            Telemetry::builder()
                .env(false)
                .endpoint(sink())
                .metrics(false)
                .build()
                .expect("telemetry"),
        ),
        "sampled" => Some(
            Telemetry::builder()
                .env(false)
                .endpoint(sink())
                .metrics(false)
                .sampling(0.01)
                .build()
                .expect("telemetry"),
        ),
        _ => Some(
            Telemetry::builder()
                .env(false)
                .endpoint(sink())
                .build()
                .expect("telemetry"),
        ),
    }
}

/// One measurement in this process: `setting` is `off`, `idle` or `export`, `what` is
/// `steps` or `batch`; prints the figure.
fn measure(setting: &str, what: &str, n: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let sdk = (setting == "sdk").then(|| sdk_provider(&sink()));
    let tracer = sdk.as_ref().map(|provider| provider.tracer("tinyagent"));
    let telemetry = {
        let _entered = rt.enter();
        telemetry_for(setting)
    };
    if let Some(telemetry) = &telemetry {
        tracing_subscriber::registry()
            .with(telemetry.layer())
            .init();
    }
    let latency = if what == "steps" {
        Duration::ZERO
    } else {
        Duration::from_millis(50)
    };
    let agent = agent(latency);
    let answer = rt
        .block_on(agent.ask(&Session::new(), "2 + 3"))
        .expect("an answer");
    assert_eq!(answer, "= 5");
    let started = Instant::now();
    rt.block_on(async {
        if what == "steps" {
            for i in 0..n {
                let answer = agent.ask(&Session::new(), format!("{i} + 1")).await;
                assert_eq!(answer.expect("an answer"), format!("= {}", i + 1));
                if let Some(tracer) = &tracer {
                    sdk_spans(tracer, i);
                }
            }
        } else {
            let runs: Vec<_> = (0..n)
                .map(|i| {
                    let agent = agent.clone();
                    let tracer = tracer.clone();
                    tokio::spawn(async move {
                        let answer = agent.ask(&Session::new(), format!("{i} + 1")).await;
                        assert_eq!(answer.expect("an answer"), format!("= {}", i + 1));
                        if let Some(tracer) = &tracer {
                            sdk_spans(tracer, i);
                        }
                    })
                })
                .collect();
            for run in runs {
                run.await.expect("a run");
            }
        }
    });
    let elapsed = started.elapsed();
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    if let Some(sdk) = sdk {
        sdk.shutdown().expect("the spans sent");
    }
    if what == "steps" {
        println!("{:.2}", elapsed.as_secs_f64() * 1e6 / n as f64);
    } else {
        println!("{:.3}", elapsed.as_secs_f64());
    }
}

fn flag(args: &[String], name: &str, default: usize) -> usize {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--measure") {
        let n = args[i + 3].parse().expect("a count");
        measure(&args[i + 1], &args[i + 2], n);
        return;
    }
    let rounds = flag(&args, "--runs", 3);
    let steps = flag(&args, "--steps", 20_000);
    let batch = flag(&args, "--batch", 100_000);
    let me = std::env::current_exe().expect("this program");
    let chosen = std::env::var("OVERHEAD_SETTINGS")
        .unwrap_or_else(|_| "off,idle,metrics,spans,sampled,export,sdk".into());
    let settings: Vec<&str> = chosen.split(',').collect();
    let mut figures = vec![(Vec::new(), Vec::new()); settings.len()];
    for _ in 0..rounds {
        for (k, setting) in settings.iter().enumerate() {
            for (what, n) in [("steps", steps), ("batch", batch)] {
                let out = Command::new(&me)
                    .args(["--measure", setting, what, &n.to_string()])
                    .output()
                    .expect("a measurement");
                assert!(
                    out.status.success(),
                    "{setting} {what}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let figure: f64 = String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse()
                    .expect("a figure");
                let list = if what == "steps" {
                    &mut figures[k].0
                } else {
                    &mut figures[k].1
                };
                list.push(figure);
            }
        }
    }
    let median = |list: &mut Vec<f64>| {
        list.sort_by(f64::total_cmp);
        list[list.len() / 2]
    };
    let (mut base_steps, mut base_batch) = figures[0].clone();
    let (base_steps, base_batch) = (median(&mut base_steps), median(&mut base_batch));
    println!(
        "telemetry overhead ({rounds} rounds, medians; steps: {steps} runs one after another, \
         batch: {batch} concurrent runs with 50 ms per model call, 2 workers)"
    );
    for (k, setting) in settings.iter().enumerate() {
        let (steps, batch) = &mut figures[k];
        let all_steps = format!("{steps:?}");
        let all_batch = format!("{batch:?}");
        let (s, b) = (median(steps), median(batch));
        println!(
            "  {setting:>6}: {s:8.2} µs per run ({:+.1}%) {all_steps}; batch {b:.3} s ({:+.1}%) \
             {all_batch}",
            (s / base_steps - 1.0) * 100.0,
            (b / base_batch - 1.0) * 100.0,
        );
    }
}
