//! A run's spans, exported over OTLP (HTTP/protobuf and gRPC) to a real receiver on loopback:
//! names, kinds, parent links, the GenAI attributes, and no content unless asked for.

mod common;

use std::collections::HashMap;

use serde_json::Value;
use tinyagent::{AgentExt as _, Session};
use tinyagent_otel::{Protocol, Telemetry};
use tracing_subscriber::prelude::*;

use common::{Receiver, lead, span};

/// Runs the lead agent with telemetry sent to `endpoint` by `protocol`; gives the session id.
async fn run_exported(endpoint: &str, protocol: Protocol, metrics: bool) -> String {
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(endpoint)
        .protocol(protocol)
        .metrics(metrics)
        .service_name("otel-test")
        .build()
        .unwrap();
    assert_eq!(telemetry.keeps_metrics(), metrics);
    assert!(telemetry.exports_traces());
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    let session = Session::new();
    let answer = lead(r#"{"city":"Oslo","api_key":"sk-live-secret-123"}"#)
        .ask(&session, "What is the weather in Oslo?")
        .await
        .unwrap();
    assert_eq!(answer, "It is sunny in Oslo.");
    telemetry.shutdown();
    session.id().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_is_one_trace_of_genai_spans_over_http() {
    let receiver = Receiver::start().await;
    let session = run_exported(&receiver.http, Protocol::HttpProtobuf, true).await;
    // Two runs, four model calls, three tool calls.
    let spans = receiver.spans(9).await;
    assert_eq!(spans.len(), 9, "{spans:#?}");
    let count = |name: &str| spans.iter().filter(|s| s["name"] == name).count();
    assert_eq!(count("invoke_agent lead"), 1);
    assert_eq!(count("invoke_agent helper"), 1);
    assert_eq!(count("chat scripted"), 4);
    assert_eq!(count("execute_tool get_weather"), 1);
    assert_eq!(count("execute_tool broken"), 1);
    assert_eq!(count("execute_tool helper"), 1);

    // One trace; the lead's run is its root.
    let by_id: HashMap<&str, &Value> = spans
        .iter()
        .map(|s| (s["span_id"].as_str().unwrap(), s))
        .collect();
    let trace = spans[0]["trace_id"].as_str().unwrap();
    assert!(spans.iter().all(|s| s["trace_id"] == trace), "{spans:#?}");
    let root = span(&spans, "invoke_agent lead");
    assert_eq!(root["parent_span_id"], "");
    let parent = |s: &Value| by_id[s["parent_span_id"].as_str().unwrap()]["name"].clone();
    for s in &spans {
        let name = s["name"].as_str().unwrap();
        let expected = match name {
            "invoke_agent lead" => continue,
            "invoke_agent helper" => "execute_tool helper",
            "execute_tool get_weather" | "execute_tool broken" | "execute_tool helper" => {
                "invoke_agent lead"
            }
            _ => "",
        };
        if !expected.is_empty() {
            assert_eq!(parent(s), expected, "{s:#}");
        }
    }
    // The helper's model call is inside the helper's run; the lead's three inside the lead's.
    let chats: Vec<&Value> = spans
        .iter()
        .filter(|s| s["name"] == "chat scripted")
        .collect();
    let inside = |agent: &str| chats.iter().filter(|c| parent(c) == agent).count();
    assert_eq!(inside("invoke_agent lead"), 3);
    assert_eq!(inside("invoke_agent helper"), 1);

    // Kinds, scope, resource.
    for s in &spans {
        let kind = if s["name"] == "chat scripted" {
            "SPAN_KIND_CLIENT"
        } else {
            "SPAN_KIND_INTERNAL"
        };
        assert_eq!(s["kind"], kind, "{s:#}");
        assert_eq!(s["scope"], "tinyagent");
        assert_eq!(s["resource"]["service.name"], "otel-test");
    }

    // The GenAI attributes.
    let attrs = |name: &str| span(&spans, name)["attributes"].clone();
    let run = attrs("invoke_agent lead");
    assert_eq!(run["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run["gen_ai.agent.name"], "lead");
    assert_eq!(run["gen_ai.conversation.id"], session.as_str());
    assert_eq!(run["gen_ai.usage.input_tokens"], 450);
    assert_eq!(run["gen_ai.usage.output_tokens"], 38);
    assert_eq!(attrs("invoke_agent helper")["gen_ai.agent.name"], "helper");

    let first_chat = chats
        .iter()
        .find(|c| c["attributes"]["gen_ai.usage.input_tokens"] == 100)
        .expect("the first model call's span");
    let chat = &first_chat["attributes"];
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.request.model"], "scripted");
    assert_eq!(chat["gen_ai.usage.output_tokens"], 20);
    assert_eq!(chat["gen_ai.response.finish_reasons"], r#"["tool_calls"]"#);

    let tool = attrs("execute_tool get_weather");
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "get_weather");
    assert_eq!(tool["gen_ai.tool.call.id"], "call_1");
    assert_eq!(tool["gen_ai.tool.type"], "function");
    assert!(tool.get("error.type").is_none(), "{tool:#}");
    assert_eq!(
        span(&spans, "execute_tool get_weather")["status"],
        "STATUS_CODE_UNSET"
    );

    // The failing tool: its error type and an error status.
    let failed = span(&spans, "execute_tool broken");
    assert_eq!(failed["attributes"]["error.type"], "failed");
    assert_eq!(failed["status"], "STATUS_CODE_ERROR");
    // Its logging middleware's failure line (which quotes the error) stays in the logs.
    assert_eq!(failed["events"], serde_json::json!([]), "{failed:#}");

    // No content by default: no argument, result or answer, anywhere.
    let all = serde_json::to_string(&spans).unwrap();
    for leak in [
        "Oslo",
        "sunny",
        "sk-live-secret-123",
        "disk is on fire",
        "helper's answer",
    ] {
        assert!(!all.contains(leak), "{leak:?} leaked into the spans: {all}");
    }
    for key in [
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.output.messages",
    ] {
        assert!(!all.contains(key), "{key} recorded without being asked for");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_same_spans_go_over_grpc_without_metrics() {
    let receiver = Receiver::start().await;
    run_exported(&receiver.grpc, Protocol::Grpc, false).await;
    let spans = receiver.spans(9).await;
    assert_eq!(spans.len(), 9, "{spans:#?}");
    assert_eq!(
        span(&spans, "execute_tool broken")["attributes"]["error.type"],
        "failed"
    );
    assert_eq!(span(&spans, "chat scripted")["kind"], "SPAN_KIND_CLIENT");
}

/// A model that never answers.
struct Silent;

impl tinyagent::Model for Silent {
    fn name(&self) -> &str {
        "silent"
    }

    fn generate<'a>(
        &'a self,
        _req: &'a tinyagent::ModelRequest,
    ) -> tinyagent::BoxFuture<'a, Result<tinyagent::ModelResponse, tinyagent::ModelError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_run_cut_short_is_cancelled_not_a_success() {
    let receiver = Receiver::start().await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    let agent = tinyagent::LlmAgent::builder("waiting")
        .model(Silent)
        .build()
        .unwrap();
    // The caller gives up: the run's future is dropped in the middle of its model call.
    let asked = agent.ask(&Session::new(), "Hello?");
    let gave_up = tokio::time::timeout(std::time::Duration::from_millis(50), asked).await;
    assert!(gave_up.is_err());
    telemetry.shutdown();
    let spans = receiver.spans(2).await;
    for name in ["invoke_agent waiting", "chat silent"] {
        let cut = span(&spans, name);
        assert_eq!(cut["attributes"]["error.type"], "cancelled", "{cut:#}");
        assert_eq!(cut["status"], "STATUS_CODE_ERROR");
    }
}
