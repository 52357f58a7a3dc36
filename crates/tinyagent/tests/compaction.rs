//! Context compaction over a long session: 200 turns, each with a tool call and a large
//! output, under a small history budget. Every request the model gets stays within the
//! budget, every tool call in it has its result, the session keeps every message, and the
//! summary carries over from turn to turn through the session's state.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::json;
use tinyagent::agent::{COMPACTION_KEY, ContextPolicy};
use tinyagent::model::FinishReason;
use tinyagent::{
    Agent, BoxFuture, Event, Invocation, LlmAgent, Message, Model, ModelError, ModelRequest,
    ModelResponse, Part, Role, Session, ToolCall, Usage, tools,
};

/// Calls `fetch` once per question, then answers; writes summaries when asked for one.
#[derive(Default)]
struct Researcher {
    requests: Mutex<Vec<ModelRequest>>,
    summaries: Mutex<usize>,
}

impl Model for Researcher {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            if req.instruction.starts_with("Summarise") {
                let mut n = self.summaries.lock().unwrap();
                *n += 1;
                let text = format!("Summary #{n}: the user asked numbered questions.");
                return Ok(ModelResponse::new(
                    Message::assistant(text),
                    Usage::new(500, 20),
                    FinishReason::Stop,
                ));
            }
            self.requests.lock().unwrap().push(req.clone());
            let last = req.messages.last().expect("a message");
            let reply = if last.role == Role::Tool {
                Message::assistant("Here is what I found.")
            } else {
                Message::new(
                    Role::Assistant,
                    vec![Part::ToolCall(ToolCall::new("", "fetch", "{}"))],
                )
            };
            let finish = if reply.has_tool_calls() {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            };
            Ok(ModelResponse::new(reply, Usage::new(100, 10), finish))
        })
    }
}

/// What a request's history costs, by the same rule of thumb as the policy's estimate
/// (a token per four ASCII characters, a few per message).
fn rough_tokens(messages: &[Message]) -> usize {
    messages
        .iter()
        .map(|m| serde_json::to_string(&m.parts).unwrap().len() / 4)
        .sum()
}

#[tokio::test]
async fn a_200_turn_session_stays_within_its_budget_and_keeps_every_message() {
    const BUDGET: u64 = 4_000;
    let model = Arc::new(Researcher::default());
    let fetch = tools::new_tool(
        "fetch",
        "fetches a page",
        json!({"type": "object"}),
        |_ctx, _input: String| async move { Ok::<_, tinyagent::ToolError>("page text. ".repeat(300)) },
    );
    let agent = LlmAgent::builder("researcher")
        .model(model.clone())
        .tool(fetch)
        .context_policy(ContextPolicy::new(BUDGET).keep_tool_outputs(2))
        .build()
        .unwrap();
    let session = Session::new();
    let mut compactions = Vec::new();
    let mut input_tokens = 0;
    for turn in 0..200 {
        let events: Vec<Event> = agent
            .run(Invocation::new(
                session.clone(),
                format!("Question {turn}?"),
            ))
            .map(|e| e.unwrap())
            .collect()
            .await;
        for event in &events {
            if let Event::Finished { usage, .. } = event {
                input_tokens += usage.input_tokens.unwrap_or(0);
            }
        }
        compactions.extend(events.into_iter().filter_map(|e| match e {
            Event::ContextCompacted {
                tokens_before,
                tokens_after,
                ..
            } => Some((tokens_before, tokens_after)),
            _ => None,
        }));
    }
    // The session keeps the whole conversation as it was: question, call, result, answer per
    // turn, no summary written into any of them.
    let stored = session.messages();
    assert_eq!(stored.len(), 800);
    for (turn, question) in stored.iter().step_by(4).enumerate() {
        assert_eq!(question.text(), format!("Question {turn}?"));
    }
    assert!(stored.iter().all(|m| !m.text().contains("[Summary")));
    let requests = model.requests.lock().unwrap();
    assert_eq!(requests.len(), 400);
    let first = rough_tokens(&requests[0].messages);
    for (i, req) in requests.iter().enumerate() {
        // Within the budget (with the estimate's slack), never growing with the session.
        let tokens = rough_tokens(&req.messages);
        assert!(
            tokens <= 2 * BUDGET as usize,
            "request {i}: {tokens} tokens"
        );
        let calls: Vec<&str> = req
            .messages
            .iter()
            .flat_map(|m| m.tool_calls())
            .map(|c| c.id.as_str())
            .collect();
        let results: Vec<&str> = req
            .messages
            .iter()
            .flat_map(|m| m.tool_results())
            .map(|r| r.call_id.as_str())
            .collect();
        assert_eq!(calls, results, "request {i}: every call with its result");
    }
    assert!(first > 0);
    // The last request holds the summary first and the current question's turn last.
    let last = requests.last().unwrap();
    assert!(
        last.messages[0]
            .text()
            .starts_with("[Summary of the earlier conversation]")
    );
    assert!(last.messages.iter().any(|m| m.text() == "Question 199?"));
    assert!(!compactions.is_empty());
    assert!(
        compactions
            .iter()
            .all(|&(before, after)| after < before && after <= BUDGET)
    );
    let summaries = *model.summaries.lock().unwrap();
    assert!(summaries > 1 && summaries < 200, "{summaries} summaries");
    // The runs' totals count the summaries' tokens too (100 per answering call, 500 per
    // summary).
    assert_eq!(input_tokens, 100 * 400 + 500 * summaries as u64);
    // The summary and what it covers are in the session's state, for the next process.
    let stored = session.get(COMPACTION_KEY).expect("a stored summary");
    assert!(stored["upto"].as_u64().unwrap() > 0);
    assert!(stored["summary"].as_str().unwrap().starts_with("Summary #"));
}

/// The [`Researcher`], with a tokenizer of its own: a token per byte (four times the estimate).
struct ByteTokens(Researcher);

impl Model for ByteTokens {
    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.0.generate(req)
    }

    fn count_tokens(&self, text: &str) -> Option<u64> {
        Some(text.len() as u64)
    }
}

#[tokio::test]
async fn a_model_with_a_tokenizer_is_counted_by_it() {
    // Five turns of 2,000-byte outputs: about 2,600 estimated tokens, about 10,000 by bytes.
    let runs = |model: Arc<dyn Model>| async move {
        let page = "x".repeat(2_000);
        let fetch = tools::new_tool(
            "fetch",
            "Fetches a page",
            json!({"type": "object"}),
            move |_ctx, _input: String| {
                let page = page.clone();
                async move { Ok::<_, tinyagent::ToolError>(page) }
            },
        );
        let agent = LlmAgent::builder("reader")
            .model(model)
            .tool(fetch)
            .context_policy(ContextPolicy::new(6_000).summarize(false))
            .build()
            .unwrap();
        let session = Session::new();
        let mut compacted = 0;
        for turn in 0..5 {
            let mut events = agent.run(Invocation::new(session.clone(), format!("page {turn}")));
            while let Some(event) = events.next().await {
                if let Event::ContextCompacted { .. } = event.unwrap() {
                    compacted += 1;
                }
            }
        }
        compacted
    };
    assert_eq!(
        runs(Arc::new(Researcher::default())).await,
        0,
        "by the estimate it fits"
    );
    assert!(
        runs(Arc::new(ByteTokens(Researcher::default()))).await > 0,
        "by the model's count it does not"
    );
}
