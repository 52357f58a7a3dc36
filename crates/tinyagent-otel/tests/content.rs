//! Content on spans when asked for (its own process: the switch is process-wide), redacted as
//! logs are.

mod common;

use tinyagent::{AgentExt as _, Session};
use tinyagent_otel::Telemetry;
use tracing_subscriber::prelude::*;

use common::{Receiver, lead, span};

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn asked_for_content_is_recorded_redacted() {
    let receiver = Receiver::start().await;
    let telemetry = Telemetry::builder()
        .env(false)
        .endpoint(&receiver.http)
        .capture_content(true)
        .build()
        .unwrap();
    assert!(tinyagent::telemetry::captures_content());
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _guard = tracing::subscriber::set_default(subscriber);
    lead(r#"{"city":"Oslo","api_key":"sk-live-secret-123"}"#)
        .ask(&Session::new(), "What is the weather in Oslo?")
        .await
        .unwrap();
    telemetry.shutdown();
    let spans = receiver.spans(9).await;

    let weather = &span(&spans, "execute_tool get_weather")["attributes"];
    let arguments = weather["gen_ai.tool.call.arguments"].as_str().unwrap();
    assert!(arguments.contains("Oslo"), "{arguments}");
    assert!(arguments.contains("[REDACTED]"), "{arguments}");
    assert!(!arguments.contains("sk-live-secret-123"), "{arguments}");
    assert_eq!(weather["gen_ai.tool.call.result"], "Oslo: sunny, 21 °C");

    let answers: Vec<&str> = spans
        .iter()
        .filter_map(|s| s["attributes"]["gen_ai.output.messages"].as_str())
        .collect();
    assert!(
        answers.iter().any(|a| a.contains("It is sunny in Oslo.")),
        "{answers:#?}"
    );
    // The log lines inside a call go along too, now that content is asked for.
    let failed = span(&spans, "execute_tool broken");
    let events = failed["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["name"] == "tool call failed"),
        "{failed:#}"
    );
    let all = serde_json::to_string(&spans).unwrap();
    assert!(!all.contains("sk-live-secret-123"), "{all}");
}
