//! The metrics a run implies: kept for Prometheus (its text read by the official
//! `prometheus_client` parser) and exported over OTLP to a real receiver on loopback.

mod common;

use tinyagent::{AgentExt as _, Session};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

use common::{Receiver, lead, parse_prometheus as parse, sample};

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_runs_metrics_in_prometheus_text_and_over_otlp() {
    let receiver = Receiver::start().await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .prometheus(true)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    let session = Session::new();
    lead(r#"{"city":"Oslo"}"#)
        .ask(&session, "What is the weather in Oslo?")
        .await
        .unwrap();

    let text = telemetry.prometheus().unwrap().render();
    the_prometheus_text_counts_the_run(&text);

    // The same instruments over OTLP.
    telemetry.flush();
    let metrics = receiver.metrics("gen_ai.client.token.usage").await;
    the_otlp_export_has_the_same_instruments(&metrics);
}

/// The Prometheus text of the run: its model calls, tokens, tool calls (the failure with its
/// type) and agent runs, none of them still in flight.
fn the_prometheus_text_counts_the_run(text: &str) {
    let samples = parse(text);
    let model = [("gen_ai_request_model", "scripted")];
    // Four model calls: three of the lead, one of the helper.
    assert_eq!(
        sample(
            &samples,
            "gen_ai_client_operation_duration_seconds_count",
            &model
        ),
        4.0
    );
    let input = [
        ("gen_ai_request_model", "scripted"),
        ("gen_ai_token_type", "input"),
    ];
    let output = [
        ("gen_ai_request_model", "scripted"),
        ("gen_ai_token_type", "output"),
    ];
    assert_eq!(
        sample(&samples, "gen_ai_client_token_usage_sum", &input),
        457.0
    );
    assert_eq!(
        sample(&samples, "gen_ai_client_token_usage_count", &input),
        4.0
    );
    assert_eq!(
        sample(&samples, "gen_ai_client_token_usage_sum", &output),
        41.0
    );
    // Tool calls by tool, the failure with its type.
    let tool = |name| [("gen_ai_tool_name", name)];
    assert_eq!(
        sample(
            &samples,
            "tinyagent_tool_call_duration_seconds_count",
            &tool("get_weather")
        ),
        1.0
    );
    assert_eq!(
        sample(
            &samples,
            "tinyagent_tool_call_duration_seconds_count",
            &[("gen_ai_tool_name", "broken"), ("error_type", "failed")]
        ),
        1.0
    );
    // Both runs ended: none in flight.
    for agent in ["lead", "helper"] {
        let labels = [("gen_ai_agent_name", agent)];
        assert_eq!(
            sample(&samples, "tinyagent_agent_runs_active", &labels),
            0.0
        );
        assert_eq!(
            sample(
                &samples,
                "tinyagent_agent_run_duration_seconds_count",
                &labels
            ),
            1.0
        );
    }
}

/// The OTLP export of the run: the token usage histogram and its input sum, the model call
/// durations and the tool call durations.
fn the_otlp_export_has_the_same_instruments(metrics: &[serde_json::Value]) {
    let usage = metrics
        .iter()
        .find(|m| m["name"] == "gen_ai.client.token.usage")
        .unwrap();
    assert_eq!(usage["kind"], "histogram");
    assert_eq!(usage["unit"], "{token}");
    let input: u64 = usage["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["attributes"]["gen_ai.token.type"] == "input")
        .map(|p| p["sum"].as_f64().unwrap() as u64)
        .sum();
    assert_eq!(input, 457);
    let duration = metrics
        .iter()
        .find(|m| m["name"] == "gen_ai.client.operation.duration")
        .unwrap();
    assert_eq!(duration["unit"], "s");
    assert!(
        metrics
            .iter()
            .any(|m| m["name"] == "tinyagent.tool.call.duration"),
        "{metrics:#?}"
    );
}

#[test]
fn nothing_configured_keeps_and_sends_nothing() {
    let telemetry = Telemetry::builder().env(false).build().unwrap();
    assert!(!telemetry.exports_traces());
    assert!(!telemetry.keeps_metrics());
    assert!(telemetry.prometheus().is_none());
}
