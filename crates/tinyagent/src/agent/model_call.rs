//! One model call of a run: [`call_model`] streams it (text deltas to the run's events) in its
//! `chat` span and prices the answer; [`summarize`] is the call that writes a compaction
//! summary, spanned and priced the same way.

use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use tracing::Instrument;

use super::config::Config;
use super::queue::Queue;
use super::{AgentError, Event};
use crate::budget::SharedBudget;
use crate::model::{Model, ModelError, ModelEvent, ModelRequest, ModelResponse, Usage};
use crate::telemetry;

/// Writes a summary for compaction with `model`, charged to the budget like any model call.
pub(super) async fn summarize(
    model: Arc<dyn Model>,
    req: ModelRequest,
    budget: &SharedBudget,
    config: &Config,
    spent: &Mutex<Usage>,
) -> Result<String, ModelError> {
    budget
        .charge_model_call()
        .map_err(|e| ModelError::other(e.to_string()))?;
    // A model call like any other: its own `chat` span, priced the same way.
    let span = telemetry::chat_span(model.name(), model.provider(), &req);
    let mut response = match model.generate(&req).instrument(span.clone()).await {
        Ok(response) => response,
        Err(err) => {
            telemetry::fail_chat_span(&span, &err);
            return Err(err);
        }
    };
    price(config, model.as_ref(), &mut response);
    telemetry::end_chat_span(&span, &response);
    budget.add_tokens(response.usage.total_tokens().unwrap_or(0));
    let usage = response.usage;
    if let Some(cost) = usage.cost {
        budget.add_cost(cost);
    }
    *spent.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    Ok(response.message.text())
}

/// Streams one model step, forwarding text deltas, and returns the final response.
/// Its span (`chat {model}`) covers the whole call, retries included.
/// The answer's cost is worked out from the agent's prices when the model gives none.
pub(super) async fn call_model(
    config: &Config,
    req: &ModelRequest,
    out: &Queue,
) -> Result<ModelResponse, AgentError> {
    let model = config.model.as_ref();
    let span = telemetry::chat_span(model.name(), model.provider(), req);
    let unfinished = telemetry::Unfinished::new(&span);
    let mut result = stream_reply(model, req, out).instrument(span.clone()).await;
    unfinished.done();
    if let Ok(response) = &mut result {
        price(config, model, response);
    }
    match &result {
        Ok(response) => telemetry::end_chat_span(&span, response),
        Err(err) => telemetry::fail_chat_span(&span, err),
    }
    result.map_err(AgentError::from)
}

/// Gives an answer without a cost its cost: priced as the model that answered (a dated
/// snapshot costs what its model costs), else as `model`.
fn price(config: &Config, model: &dyn Model, response: &mut ModelResponse) {
    if response.usage.cost.is_some() {
        return;
    }
    let usage = &response.usage;
    response.usage.cost = response
        .model
        .as_deref()
        .and_then(|answered| config.prices.cost(answered, usage))
        .or_else(|| config.prices.cost(model.name(), usage));
}

async fn stream_reply(
    model: &dyn Model,
    req: &ModelRequest,
    out: &Queue,
) -> Result<ModelResponse, ModelError> {
    let mut events = model.stream(req);
    while let Some(event) = events.next().await {
        match event? {
            ModelEvent::TextDelta(text) => out.push(Event::TextDelta(text)),
            ModelEvent::Restart { reason } => out.push(Event::ReplyRestarted { reason }),
            ModelEvent::Done(response) => return Ok(response),
            _ => {}
        }
    }
    Err(ModelError::invalid_response(
        "the model's stream ended without a final response",
    ))
}
