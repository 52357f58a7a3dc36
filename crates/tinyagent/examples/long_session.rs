//! A long session that fits: 50 turns, each fetching a long page, under a history budget of
//! 4,000 tokens. Older tool outputs are trimmed, then the oldest turns summarised; the session
//! keeps every message. Runs offline, on a scripted model that also writes the summaries.
//!
//! Run with `cargo run -p tinyagent --example long_session`.

use std::sync::Arc;

use futures::StreamExt;
use tinyagent::agent::{COMPACTION_KEY, ContextPolicy};
use tinyagent::model::FinishReason;
use tinyagent::{
    Agent, BoxFuture, Event, Invocation, LlmAgent, Message, Model, ModelError, ModelRequest,
    ModelResponse, Part, Role, Session, ToolCall, Usage, tools,
};

/// Fetches a page for every question, then answers; summarises when asked to.
struct Scripted;

impl Model for Scripted {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let (reply, finish) = if req.instruction.starts_with("Summarise") {
                let text = "The user asked about pages 0 to N; each was fetched and summarised.";
                (Message::assistant(text), FinishReason::Stop)
            } else if req.messages.last().is_some_and(|m| m.role == Role::Tool) {
                (
                    Message::assistant("Here is the page's gist."),
                    FinishReason::Stop,
                )
            } else {
                let call = ToolCall::new("", "fetch", r#"{"url": "https://example.com"}"#);
                (
                    Message::new(Role::Assistant, vec![Part::ToolCall(call)]),
                    FinishReason::ToolCalls,
                )
            };
            Ok(ModelResponse::new(reply, Usage::new(0, 0), finish))
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let fetch = tools::new_tool(
        "fetch",
        "Fetches a web page",
        serde_json::json!({"type": "object", "properties": {"url": {"type": "string"}}}),
        |_ctx, _input: String| async move {
            Ok::<_, tinyagent::ToolError>("A long page of text. ".repeat(200))
        },
    );
    let agent = LlmAgent::builder("researcher")
        .model(Arc::new(Scripted))
        .tool(fetch)
        .context_policy(ContextPolicy::new(4_000).keep_tool_outputs(2))
        .build()?;
    let session = Session::new();
    let (mut largest_before, mut largest_after, mut trims, mut summaries) = (0, 0, 0, 0);
    for turn in 0..50 {
        let mut events = agent.run(Invocation::new(session.clone(), format!("Page {turn}?")));
        while let Some(event) = events.next().await {
            if let Event::ContextCompacted {
                tokens_before,
                tokens_after,
                trimmed_tool_outputs,
                summarized_messages,
            } = event?
            {
                largest_before = largest_before.max(tokens_before);
                largest_after = largest_after.max(tokens_after);
                trims += trimmed_tool_outputs;
                summaries += usize::from(summarized_messages > 0);
            }
        }
    }
    println!(
        "50 turns, {} messages kept in the session",
        session.messages().len()
    );
    println!(
        "history sent to the model: at most {largest_after} tokens after compaction \
         (up to {largest_before} before)"
    );
    println!("{trims} tool outputs trimmed, {summaries} summaries written");
    if let Some(stored) = session.get(COMPACTION_KEY) {
        println!(
            "summary in the session's state, covering its first {} messages",
            stored["upto"]
        );
    }
    Ok(())
}
