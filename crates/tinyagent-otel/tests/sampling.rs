//! Head sampling: a trace is kept or dropped at its first span, whole.

mod common;

use std::collections::HashMap;

use serde_json::Value;
use tinyagent::{AgentExt as _, Session};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

use common::{Receiver, lead};

/// Runs the lead agent (two runs, nine spans) `runs` times with traces kept at `ratio`, spans
/// only, exported over HTTP to `endpoint`; every span is sent when this returns.
async fn run_sampled(endpoint: &str, ratio: f64, runs: usize) {
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(endpoint)
        .metrics(false)
        .sampling(ratio)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    for _ in 0..runs {
        let answer = lead(r#"{"city":"Oslo"}"#)
            .ask(&Session::new(), "What is the weather in Oslo?")
            .await
            .unwrap();
        assert_eq!(answer, "It is sunny in Oslo.");
    }
    telemetry.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_trace_not_kept_exports_nothing() {
    let receiver = Receiver::start().await;
    run_sampled(&receiver.http, 0.0, 3).await;
    let spans = receiver.spans_now().await;
    assert!(spans.is_empty(), "{spans:#?}");
    // The same runs kept: the receiver gets them (so the silence above was the sampler's).
    run_sampled(&receiver.http, 1.0, 1).await;
    assert_eq!(receiver.spans_now().await.len(), 9);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn kept_traces_are_whole() {
    let receiver = Receiver::start().await;
    // The coin is thrown on this thread, where each run's first span starts: a fixed seed
    // makes the draw the same every time.
    fastrand::seed(7);
    let runs = 16;
    run_sampled(&receiver.http, 0.5, runs).await;
    let spans = receiver.spans_now().await;
    let mut traces: HashMap<&str, Vec<&Value>> = HashMap::new();
    for span in &spans {
        traces
            .entry(span["trace_id"].as_str().unwrap())
            .or_default()
            .push(span);
    }
    assert!(
        !traces.is_empty() && traces.len() < runs,
        "{} of {runs} traces kept at one half",
        traces.len()
    );
    for spans in traces.values() {
        // A kept trace is the whole run: both agents, four model calls, three tool calls,
        // with the lead's run as its one root.
        assert_eq!(spans.len(), 9, "{spans:#?}");
        let roots: Vec<_> = spans
            .iter()
            .filter(|s| s["parent_span_id"] == "")
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(roots, ["invoke_agent lead"]);
        assert_eq!(
            spans
                .iter()
                .filter(|s| s["name"] == "invoke_agent helper")
                .count(),
            1
        );
    }
}
