//! The trace goes on at the provider: a model call's request carries `traceparent` naming its
//! `chat` span, and the span carries the provider's answer (a recorded OpenAI stream, replayed
//! on loopback).

mod common;

use tinyagent::{AgentExt as _, LlmAgent, Session};
use tinyagent_openai::{OpenAiConfig, OpenAiModel};
use tinyagent_otel::{Protocol, Telemetry};
use tracing_subscriber::prelude::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{Receiver, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_model_call_carries_its_trace_to_the_provider() {
    let receiver = Receiver::start().await;
    let provider = MockServer::start().await;
    let stream = include_str!("../../tinyagent-openai/tests/fixtures/stream_text.sse");
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(stream, "text/event-stream"))
        .mount(&provider)
        .await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .protocol(Protocol::HttpProtobuf)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    let config = OpenAiConfig::new("gpt-4o-mini").base_url(format!("{}/v1", provider.uri()));
    let agent = LlmAgent::builder("assistant")
        .model(OpenAiModel::new(config).unwrap())
        .build()
        .unwrap();
    let answer = agent.ask(&Session::new(), "Hi").await.unwrap();
    assert!(answer.starts_with("Hello"), "{answer}");
    telemetry.shutdown();

    let spans = receiver.spans(2).await;
    let chat = span(&spans, "chat gpt-4o-mini");
    let attributes = &chat["attributes"];
    assert_eq!(attributes["gen_ai.provider.name"], "openai");
    assert_eq!(attributes["gen_ai.request.model"], "gpt-4o-mini");
    assert_eq!(
        attributes["gen_ai.response.model"],
        "gpt-4o-mini-2024-07-18"
    );
    assert_eq!(attributes["gen_ai.response.finish_reasons"], r#"["stop"]"#);

    let requests = provider.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let traceparent = requests[0].headers["traceparent"].to_str().unwrap();
    let expected = format!(
        "00-{}-{}-01",
        chat["trace_id"].as_str().unwrap(),
        chat["span_id"].as_str().unwrap()
    );
    assert_eq!(traceparent, expected);
}
