//! Agents that keep working when their dependencies do not: a model that falls back to another
//! when its provider rate-limits, a breaker that stops calling a dead model and a dead tool,
//! and an answer at the step limit instead of an error. Runs offline, on scripted models.
//!
//! Run with `cargo run -p tinyagent --example fallback`.

use std::sync::Arc;
use std::time::Duration;

use tinyagent::model::{CircuitBreakerModel, FallbackModel, ModelErrorKind};
use tinyagent::testing::{ScriptedModel, reply};
use tinyagent::tools::middleware::CircuitBreakerLayer;
use tinyagent::{AgentExt, LlmAgent, Model, ModelError, Session, ToolContext, ToolError, tools};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The primary provider answers every call with a 429; the backup works.
    let primary = Arc::new(ScriptedModel::default());
    for _ in 0..3 {
        primary.push_error(ModelError::new(
            ModelErrorKind::RateLimited,
            "429 Too Many Requests",
        ));
    }
    let backup = Arc::new(ScriptedModel::new([
        reply::tool_call("c1", "quote", r#"{"symbol": "ACME"}"#),
        reply::text("The quote service is down; I could not get ACME's price."),
    ]));
    let model = FallbackModel::new([
        // Two failures in a row and the primary is skipped for a minute.
        Arc::new(
            CircuitBreakerModel::new(primary.clone())
                .failures(2)
                .cool_down(Duration::from_secs(60)),
        ) as Arc<dyn Model>,
        backup.clone(),
    ]);

    // A tool whose service is down: after two failures it is not called for 30 s.
    let quote = tools::new_tool(
        "quote",
        "The latest price of a stock",
        serde_json::json!({"type": "object", "properties": {"symbol": {"type": "string"}}}),
        |_ctx: ToolContext, _input: String| async move {
            Err::<String, _>(ToolError::unavailable("quote service: 503"))
        },
    );
    let quote = tools::wrap_tool(
        quote,
        [CircuitBreakerLayer::new()
            .failures(2)
            .cool_down(Duration::from_secs(30))
            .into()],
    );

    let agent = LlmAgent::builder("trader")
        .model(model)
        .tool(quote)
        // At the step limit the last call answers from what it has instead of failing.
        .max_steps(2)
        .answer_at_step_limit(true)
        .build()?;
    let answer = agent.ask(&Session::new(), "What is ACME at?").await?;
    println!("answer: {answer}");
    println!(
        "calls: primary {} (rate-limited), backup {}",
        primary.request_count(),
        backup.request_count()
    );
    Ok(())
}
