//! One step's tool calls: [`execute`] runs them (in parallel where they allow it), each through
//! [`run_call`], which reports its events and bounds its output.

use std::sync::Arc;

use futures::{FutureExt, StreamExt, stream};
use tracing::Instrument;

use super::config::{Config, ToolEntry};
use super::queue::Queue;
use super::{Event, tool_host};
use crate::budget::SharedBudget;
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::message::{ToolCall, ToolResult};
use crate::redact;
use crate::telemetry;
use crate::tools::{ToolInput, ToolOutput, call_catching_panics};
use tinyagent_core::output_limit::truncate_middle;

/// A call's result, and the kind of its failure when it failed.
pub(super) type Outcome = (ToolResult, Option<ToolErrorKind>);

/// Runs the calls of one step and returns their outcomes in the order of the calls.
pub(super) async fn execute(
    config: &Config,
    parallel: bool,
    entries: &[Arc<ToolEntry>],
    ctx: &ToolContext,
    budget: &SharedBudget,
    calls: &[&ToolCall],
    out: &Queue,
) -> Vec<Outcome> {
    let n = calls.len();
    let lookup: Vec<Option<&ToolEntry>> = calls
        .iter()
        .map(|call| {
            entries
                .iter()
                .find(|e| e.tool.name() == call.name)
                .map(|e| &**e)
        })
        .collect();
    let runs = |k: usize| k < config.max_tool_calls_per_step && lookup[k].is_some();
    let exclusive = |k: usize| runs(k) && (!parallel || lookup[k].is_some_and(|e| e.exclusive));
    let one = |k: usize| {
        let refusal = if k >= config.max_tool_calls_per_step {
            Some(ToolError::rate_limited(format!(
                "tool call not run: the model asked for {n} tool calls in one step and at most {} \
                 run per step; ask again for the rest",
                config.max_tool_calls_per_step
            )))
        } else if lookup[k].is_none() {
            Some(unknown_tool(&calls[k].name, entries))
        } else {
            None
        };
        run_call(
            lookup[k],
            refusal,
            ctx,
            budget,
            config.max_tool_output,
            calls[k],
            out,
        )
    };

    let mut results: Vec<Option<Outcome>> = vec![None; n];
    let mut i = 0;
    while i < n {
        let mut j = i + 1;
        if !exclusive(i) {
            while j < n && !exclusive(j) {
                j += 1;
            }
        }
        if j - i == 1 {
            results[i] = Some(one(i).await);
        } else {
            let mut running = stream::iter(i..j)
                .map(|k| one(k).map(move |r| (k, r)))
                .buffer_unordered(config.max_concurrent_tool_calls);
            while let Some((k, result)) = running.next().await {
                results[k] = Some(result);
            }
        }
        i = j;
    }
    results
        .into_iter()
        .zip(calls)
        .map(|(r, call)| {
            r.unwrap_or_else(|| {
                let result = ToolResult::error(&call.id, &call.name, "tool call not run");
                (result, Some(ToolErrorKind::Cancelled))
            })
        })
        .collect()
}

pub(super) fn unknown_tool(name: &str, entries: &[Arc<ToolEntry>]) -> ToolError {
    if entries.is_empty() {
        return ToolError::not_found(format!(
            "unknown tool {name:?}: no tools are offered here; answer without calling tools"
        ));
    }
    let offered: Vec<&str> = entries.iter().map(|e| e.tool.name()).collect();
    ToolError::not_found(format!(
        "unknown tool {name:?}: it is not offered here; the offered tools are: {}",
        offered.join(", ")
    ))
}

pub(super) async fn run_call(
    entry: Option<&ToolEntry>,
    refusal: Option<ToolError>,
    ctx: &ToolContext,
    budget: &SharedBudget,
    max_output: Option<usize>,
    call: &ToolCall,
    out: &Queue,
) -> Outcome {
    // The journal says the call starts before it does; when it cannot, the call is not run.
    let recorded = out
        .record_call(Event::ToolCallStarted { call: call.clone() })
        .await;
    let started = tokio::time::Instant::now();
    let refusal = refusal.or_else(|| {
        (!recorded).then(|| {
            ToolError::cancelled("tool call not run: the run's journal could not be written")
        })
    });
    let refusal = refusal.or_else(|| {
        budget.charge_tool_call().err().map(|exceeded| {
            ToolError::rate_limited(format!("tool call not run: {exceeded}")).retryable(false)
        })
    });
    // The call's one span: logging middleware records into it rather than nesting another,
    // so it declares the fields that middleware fills in.
    let span = telemetry::tool_span(&call.name, &call.id);
    if telemetry::captures_content() {
        let arguments = telemetry::content(&call.arguments);
        span.record("gen_ai.tool.call.arguments", arguments.as_str());
    }
    let outcome = match (refusal, entry) {
        (Some(err), _) => Err(err),
        (None, Some(entry)) => {
            let unfinished = telemetry::Unfinished::new(&span);
            let outcome = invoke(entry, ctx, call, out).instrument(span.clone()).await;
            unfinished.done();
            outcome
        }
        (None, None) => Err(ToolError::not_found(format!(
            "unknown tool {:?}",
            call.name
        ))),
    };
    let duration = started.elapsed();
    let bounded = |output: ToolOutput| match max_output {
        Some(max) => output.limited(max),
        None => output,
    };
    let outcome = outcome.and_then(|output| {
        if output.is_error() {
            Err(ToolError::failed(output.into_text()).retryable(false))
        } else {
            Ok(output)
        }
    });
    let (result, error_kind) = match outcome {
        Ok(output) => {
            if telemetry::captures_content() {
                let text = telemetry::content(output.as_text());
                span.record("gen_ai.tool.call.result", text.as_str());
            }
            (
                ToolResult::from_output(&call.id, &call.name, bounded(output)),
                None,
            )
        }
        Err(err) => {
            telemetry::fail(&span, err.kind().as_str());
            tracing::debug!(
                gen_ai.tool.name = %call.name,
                error.type = %err.kind(),
                "tool call failed: {}",
                redact::text(&truncate_middle(err.message(), 2048))
            );
            let text = bounded(ToolOutput::text(err.message())).into_text();
            (
                ToolResult::error(&call.id, &call.name, text),
                Some(err.kind()),
            )
        }
    };
    // A failed write is kept by the journal: the step ends the run with it.
    let _ = out
        .record_call(Event::ToolCallFinished {
            result: result.clone(),
            duration,
            error_kind,
        })
        .await;
    (result, error_kind)
}

async fn invoke(
    entry: &ToolEntry,
    ctx: &ToolContext,
    call: &ToolCall,
    out: &Queue,
) -> Result<ToolOutput, ToolError> {
    let host = tool_host::AgentHost {
        call_id: call.id.clone(),
        emit: Arc::new({
            let out = out.clone();
            move |event| out.push(event)
        }),
        outer: ctx.host().cloned(),
    };
    let ctx = ctx
        .clone()
        .with_call_id(call.id.as_str())
        .with_host(Arc::new(host))
        .in_tool_span();
    call_catching_panics(
        entry.tool.as_ref(),
        &ctx,
        ToolInput::from_text(call.arguments.as_str()),
    )
    .await
}
