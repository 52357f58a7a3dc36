//! Telemetry of a server: a span per request that continues the caller's trace (W3C
//! `traceparent`) with the run inside it, exported over OTLP to a real receiver on loopback;
//! and `/metrics` in the Prometheus text format (read by the official parser), for the
//! operator only.

#[path = "../../tinyagent-otel/tests/common/mod.rs"]
mod otel;

mod common;

use tinyagent_otel::Telemetry;
use tinyagent_server::Server;
use tracing_subscriber::prelude::*;

use common::{Running, chat, client};
use otel::{parse_prometheus as parse, sample as value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_continues_its_callers_trace_and_the_operator_reads_the_metrics() {
    let receiver = otel::Receiver::start().await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .prometheus(true)
        .build()
        .unwrap();
    // The only test of this binary: the server's tasks run on every worker thread.
    tracing_subscriber::registry()
        .with(telemetry.layer())
        .init();
    let prometheus = telemetry.prometheus().unwrap().clone();
    let greeter = tinyagent::LlmAgent::builder("greeter")
        .model(tinyagent::testing::ScriptedModel::new([
            tinyagent::testing::reply::text("hello"),
        ]))
        .build()
        .unwrap();
    let server = Server::new()
        .agent(otel::lead(r#"{"city":"Oslo"}"#))
        .agent(greeter)
        .named_api_key("alice", "sk-alice")
        .admin_key("sk-admin")
        .metrics(prometheus.clone());
    let running = Running::start(server).await;
    let http = client();

    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let answer = http
        .post(running.url("/v1/chat/completions"))
        .bearer_auth("sk-alice")
        .header("traceparent", format!("00-{trace_id}-{caller_span}-01"))
        .json(&chat("lead", "What is the weather in Oslo?", true))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let body = answer.text().await.unwrap();
    assert!(body.contains("sunny in Oslo"), "{body}");

    // A stored conversation: the session store's work is timed too.
    let stored = http
        .post(running.url("/v1/sessions/ses_otel/messages"))
        .bearer_auth("sk-alice")
        .json(&serde_json::json!({"agent": "greeter", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stored.status(), 200);
    let events = stored.text().await.unwrap();
    assert!(events.contains("hello"), "{events}");

    // The metrics are the operator's.
    the_operator_reads_the_metrics(&http, &running).await;

    // The request's span continues the caller's trace; the run is inside it.
    telemetry.flush();
    let spans = receiver.spans(12).await;
    the_request_span_continues_the_callers_trace(&spans, trace_id, caller_span);
}

/// `/metrics` is the operator's (403 for another key, 401 without one); its text is in the
/// Prometheus format and counts the requests, the streams, the tokens, the session store's
/// operations and the refused requests.
async fn the_operator_reads_the_metrics(http: &reqwest::Client, running: &Running) {
    let denied = http
        .get(running.url("/metrics"))
        .bearer_auth("sk-alice")
        .send()
        .await
        .unwrap();
    assert_eq!(denied.status(), 403);
    let anonymous = http.get(running.url("/metrics")).send().await.unwrap();
    assert_eq!(anonymous.status(), 401);
    let metrics = http
        .get(running.url("/metrics"))
        .bearer_auth("sk-admin")
        .send()
        .await
        .unwrap();
    assert_eq!(metrics.status(), 200);
    assert!(
        metrics.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let samples = parse(&metrics.text().await.unwrap());
    let route = [
        ("http_route", "/v1/chat/completions"),
        ("http_request_method", "POST"),
        ("http_response_status_code", "200"),
    ];
    assert_eq!(
        value(
            &samples,
            "http_server_request_duration_seconds_count",
            &route
        ),
        1.0
    );
    let streams = [("http_route", "/v1/chat/completions")];
    assert_eq!(
        value(&samples, "tinyagent_server_active_streams", &streams),
        0.0,
        "the stream has ended"
    );
    let input = [
        ("gen_ai_request_model", "scripted"),
        ("gen_ai_token_type", "input"),
    ];
    assert_eq!(
        value(&samples, "gen_ai_client_token_usage_sum", &input),
        457.0
    );
    // The session store's operations, timed.
    for operation in ["lock", "commit"] {
        let labels = [("db_operation_name", operation)];
        let count = value(
            &samples,
            "db_client_operation_duration_seconds_count",
            &labels,
        );
        assert!(count >= 1.0, "{operation}: {count}");
    }
    // The denied and refused requests count too, by their status.
    let refused = [
        ("http_route", "/metrics"),
        ("http_response_status_code", "403"),
    ];
    assert_eq!(
        value(
            &samples,
            "http_server_request_duration_seconds_count",
            &refused
        ),
        1.0
    );
}

/// The chat completion's span continues the caller's trace (`trace_id`, its parent
/// `caller_span`) with the run inside it; the store's spans are in the trace of the request
/// that needed them; the request's span ends after every model call of its run.
fn the_request_span_continues_the_callers_trace(
    spans: &[serde_json::Value],
    trace_id: &str,
    caller_span: &str,
) {
    let request = otel::span(spans, "POST /v1/chat/completions");
    assert_eq!(request["kind"], "SPAN_KIND_SERVER");
    assert_eq!(request["trace_id"], trace_id);
    assert_eq!(request["parent_span_id"], caller_span);
    let attributes = &request["attributes"];
    assert_eq!(attributes["http.route"], "/v1/chat/completions");
    assert_eq!(attributes["http.request.method"], "POST");
    assert_eq!(attributes["http.response.status_code"], 200);
    assert_eq!(attributes["tinyagent.stream"], true);
    let run = otel::span(spans, "invoke_agent lead");
    assert_eq!(run["trace_id"], trace_id);
    assert_eq!(run["parent_span_id"], request["span_id"]);
    // The store's spans are in the trace of the request that needed them.
    let commit = otel::span(spans, "session_store commit");
    assert_eq!(commit["kind"], "SPAN_KIND_CLIENT");
    let posted = otel::span(spans, "POST /v1/sessions/{id}/messages");
    assert_eq!(commit["trace_id"], posted["trace_id"]);
    // The request's span lasts as long as its stream: past every model call of the run.
    let chats = spans
        .iter()
        .filter(|s| s["name"] == "chat scripted" && s["trace_id"] == trace_id);
    for chat in chats {
        assert!(
            chat["end"].as_u64() <= request["end"].as_u64(),
            "{chat:#}\n{request:#}"
        );
    }
}

#[tokio::test]
async fn a_server_without_metrics_says_so_and_a_keyless_one_shows_them() {
    let agent = otel::lead("{}");
    let running = Running::start(Server::new().agent(agent)).await;
    let missing = client().get(running.url("/metrics")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let body = missing.text().await.unwrap();
    assert!(body.contains("keeps no metrics"), "{body}");

    let telemetry = Telemetry::builder()
        .env(false)
        .prometheus(true)
        .build()
        .unwrap();
    let keyless = Server::new()
        .agent(otel::lead("{}"))
        .metrics(telemetry.prometheus().unwrap().clone());
    let running = Running::start(keyless).await;
    let shown = client().get(running.url("/metrics")).send().await.unwrap();
    assert_eq!(shown.status(), 200);
    parse(&shown.text().await.unwrap());
}
