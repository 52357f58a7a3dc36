//! The loop of an [`LlmAgent`](super::LlmAgent): resolve tools, ask the model, run the calls,
//! feed the results back, until the model answers.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::stream::{self, BoxStream, Stream};
use futures::{FutureExt, StreamExt};
use tracing::Instrument;

use super::compaction;
use super::config::{Config, ToolEntry};
use super::{AgentError, Event, ToolSource, tool_host};
use crate::budget::{BudgetExceeded, SharedBudget};
use crate::context::Invocation;
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::message::{Message, Part, Role, ToolCall, ToolResult, new_id};
use crate::model::{
    FinishReason, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, ResponseFormat,
    ToolChoice, ToolDefinition, Usage,
};
use crate::redact;
use crate::tools::output_limit::truncate_middle;
use crate::tools::{ToolInput, ToolOutput, call_catching_panics};
use crate::util::BoxFuture;

/// Events produced by the driver and not yet taken by the consumer.
///
/// The driver only runs while the consumer polls the stream, and the stream looks at the queue
/// right after polling the driver, so no waker is needed and the queue never grows beyond what
/// one poll of the driver produces.
#[derive(Clone, Default)]
struct Queue(Arc<Mutex<VecDeque<Event>>>);

impl Queue {
    fn push(&self, event: Event) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(event);
    }

    fn pop(&self) -> Option<Event> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

/// The event stream of a run: drains the queue, polling the driver when it is empty.
struct RunStream {
    queue: Queue,
    driver: Option<BoxFuture<'static, Result<(), AgentError>>>,
    error: Option<AgentError>,
}

impl Stream for RunStream {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(event) = self.queue.pop() {
            return Poll::Ready(Some(Ok(event)));
        }
        if let Some(driver) = self.driver.as_mut() {
            let done = driver.as_mut().poll(cx);
            if let Poll::Ready(result) = done {
                self.driver = None;
                self.error = result.err();
            }
            if let Some(event) = self.queue.pop() {
                return Poll::Ready(Some(Ok(event)));
            }
            if self.driver.is_some() {
                return Poll::Pending;
            }
        }
        Poll::Ready(self.error.take().map(Err))
    }
}

pub(super) fn run(
    config: Arc<Config>,
    inv: Invocation,
) -> BoxStream<'static, Result<Event, AgentError>> {
    let format = config.response_format.clone();
    run_with_format(config, inv, format)
}

/// [`run`], the final answer asked in `format` (which replaces the agent's own, if any).
pub(super) fn run_with_format(
    config: Arc<Config>,
    inv: Invocation,
    format: Option<ResponseFormat>,
) -> BoxStream<'static, Result<Event, AgentError>> {
    let queue = Queue::default();
    let span = tracing::info_span!(
        "invoke_agent",
        gen_ai.operation.name = "invoke_agent",
        gen_ai.agent.name = %config.name,
        gen_ai.conversation.id = %inv.session().id(),
        invocation.id = %inv.id(),
    );
    let out = queue.clone();
    let driver = Box::pin(drive(config, inv, format, out).instrument(span));
    Box::pin(RunStream {
        queue,
        driver: Some(driver),
        error: None,
    })
}

/// The tools of one invocation, fixed before the first model call.
struct ToolSet {
    entries: Arc<[Arc<ToolEntry>]>,
    definitions: Arc<[ToolDefinition]>,
}

async fn resolve(config: &Config, inv: &Invocation) -> Result<ToolSet, AgentError> {
    if config.resolvers.is_empty() {
        return Ok(ToolSet {
            entries: config.static_tools.clone(),
            definitions: config.static_definitions.clone(),
        });
    }
    let resolved =
        futures::future::join_all(config.resolvers.iter().map(|r| r.resolve_tools(inv))).await;
    let mut entries: Vec<Arc<ToolEntry>> = config.static_tools.to_vec();
    let mut sources: Vec<ToolSource> = vec![ToolSource::Agent; entries.len()];
    let mut definitions = config.static_definitions.to_vec();
    for (i, tools) in resolved.into_iter().enumerate() {
        let tools = tools.map_err(|err| AgentError::Resolver {
            resolver: i + 1,
            source: err,
        })?;
        for tool in tools {
            if let Some(k) = entries.iter().position(|e| e.tool.name() == tool.name()) {
                return Err(AgentError::ToolConflict {
                    name: tool.name().to_owned(),
                    first: sources[k],
                    second: ToolSource::Resolver(i + 1),
                });
            }
            definitions.push(ToolDefinition::from_tool(tool.as_ref()));
            entries.push(config.resolved.get_or_wrap(
                tool,
                &config.middleware,
                config.tool_timeout,
            ));
            sources.push(ToolSource::Resolver(i + 1));
        }
    }
    Ok(ToolSet {
        entries: entries.into(),
        definitions: definitions.into(),
    })
}

async fn drive(
    config: Arc<Config>,
    mut inv: Invocation,
    response_format: Option<ResponseFormat>,
    out: Queue,
) -> Result<(), AgentError> {
    let config = &*config;
    inv.set_agent(config.name.clone());
    let budget = match inv.budget() {
        Some(budget) => budget.clone(),
        None => {
            let budget = SharedBudget::new(config.budget);
            inv = inv.with_budget(budget.clone());
            budget
        }
    };
    let over = |exceeded| AgentError::budget(&config.name, exceeded);
    let tools = resolve(config, &inv).await?;
    let session = inv.session().clone();

    let mut messages = session.messages();
    let mut compaction = None;
    if let Some(policy) = &config.context_policy {
        let stored = compaction::Stored::from_state(session.get(compaction::COMPACTION_KEY));
        let (restored, base, summary) = compaction::restore(messages, stored);
        messages = restored;
        compaction = Some(compaction::RunCompaction {
            policy,
            base,
            summary,
        });
    }
    let mut first_new = messages.len();
    messages.push(inv.message().clone());
    let mut req = ModelRequest {
        instruction: config.instruction.clone(),
        messages,
        tools: tools.definitions,
        temperature: config.temperature,
        max_tokens: config.max_tokens,
        tool_choice: config.tool_choice.clone(),
        response_format,
    };
    let host = inv.host().cloned();
    let ctx = ToolContext::new().with_invocation(inv);
    let ctx = match host {
        Some(host) => ctx.with_host(host),
        None => ctx,
    };
    let mut total = Usage::default();

    for step in 1..=config.max_steps {
        budget.charge_model_call().map_err(over)?;
        if step == config.max_steps && config.answer_at_step_limit {
            // The last call: answer from what the tools gave, call none.
            req.tool_choice = Some(ToolChoice::None);
        }
        let compacted = match &mut compaction {
            Some(compaction) => {
                let summarizer = compaction
                    .policy
                    .summarizer_model()
                    .unwrap_or(&config.model)
                    .clone();
                let spent = Mutex::new(Usage::default());
                let summarize = |r: ModelRequest| summarize(summarizer, r, &budget, config, &spent);
                // Boxed, as is the tool step below: a run waits on its model call most of the
                // time, and its future is only as large as its largest inline step.
                let (sent, outcome) =
                    Box::pin(compaction.request(&mut req, &mut first_new, &session, summarize))
                        .await;
                // What the summary cost is part of the run's total.
                total += *spent.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(o) = outcome {
                    out.push(Event::ContextCompacted {
                        tokens_before: o.before,
                        tokens_after: o.after,
                        trimmed_tool_outputs: o.trimmed,
                        summarized_messages: o.summarized,
                    });
                }
                Some(sent)
            }
            None => None,
        };
        let sent = compacted.as_ref().unwrap_or(&req);
        let ModelResponse {
            mut message,
            mut usage,
            finish_reason,
            model,
            ..
        } = within(&budget, call_model(config.model.as_ref(), sent, &out))
            .await
            .map_err(over)??;
        budget.add_tokens(usage.total_tokens().unwrap_or(0));
        if usage.cost.is_none() {
            let model = model.as_deref().unwrap_or_else(|| config.model.name());
            usage.cost = config.prices.cost(model, &usage);
        }
        if let Some(cost) = usage.cost {
            budget.add_cost(cost);
        }
        total += usage;
        let cut = finish_reason == FinishReason::Length;
        out.push(Event::Usage {
            step,
            usage,
            finish_reason,
        });
        message.role = Role::Assistant;
        // Every call needs an id of its own: its result is matched to it.
        for i in 0..message.parts.len() {
            let (before, rest) = message.parts.split_at_mut(i);
            if let Part::ToolCall(call) = &mut rest[0] {
                let taken = before
                    .iter()
                    .any(|p| matches!(p, Part::ToolCall(c) if c.id == call.id));
                if call.id.is_empty() || taken {
                    call.id = new_id("call");
                }
            }
        }
        if cut && message.has_tool_calls() {
            // The calls' arguments may be cut anywhere: running them would act on half a
            // request.
            return Err(AgentError::ReplyTruncated {
                agent: config.name.to_string(),
                max_tokens: req.max_tokens,
                tools: message.tool_calls().map(|c| c.name.clone()).collect(),
            });
        }
        out.push(Event::Message(message.clone()));

        if !message.has_tool_calls() {
            let answer = message.text();
            req.messages.push(message);
            session.append(req.messages.drain(first_new..));
            out.push(Event::Finished {
                answer,
                usage: total,
                steps: step,
            });
            return Ok(());
        }

        if step == config.max_steps {
            // No model call would read these calls' results: do not run them.
            break;
        }
        let calls: Vec<&ToolCall> = message.tool_calls().collect();
        let results = within(
            &budget,
            Box::pin(execute(config, &tools.entries, &ctx, &budget, &calls, &out)),
        )
        .await
        .map_err(over)?;
        // A budget spent during the step (here or in an agent called as a tool) ends the run:
        // the next model call could not be paid for.
        budget.check().map_err(over)?;
        req.messages.push(message);
        req.messages.push(Message::from_tool_results(results));
    }
    Err(AgentError::StepLimit {
        agent: config.name.to_string(),
        max_steps: config.max_steps,
    })
}

/// Writes a summary for compaction with `model`, charged to the budget like any model call.
async fn summarize(
    model: Arc<dyn Model>,
    req: ModelRequest,
    budget: &SharedBudget,
    config: &Config,
    spent: &Mutex<Usage>,
) -> Result<String, ModelError> {
    budget
        .charge_model_call()
        .map_err(|e| ModelError::other(e.to_string()))?;
    let response = model.generate(&req).await?;
    budget.add_tokens(response.usage.total_tokens().unwrap_or(0));
    let name = response.model.as_deref().unwrap_or_else(|| model.name());
    let mut usage = response.usage;
    usage.cost = usage.cost.or_else(|| config.prices.cost(name, &usage));
    if let Some(cost) = usage.cost {
        budget.add_cost(cost);
    }
    *spent.lock().unwrap_or_else(PoisonError::into_inner) += usage;
    Ok(response.message.text())
}

/// Runs `fut` until the budget's wall time ends (when there is a runtime to keep time).
async fn within<F: Future>(budget: &SharedBudget, fut: F) -> Result<F::Output, BudgetExceeded> {
    match budget.deadline() {
        Some(deadline) if tokio::runtime::Handle::try_current().is_ok() => {
            tokio::time::timeout_at(deadline, fut)
                .await
                .map_err(|_elapsed| budget.wall_time_exceeded())
        }
        _ => Ok(fut.await),
    }
}

/// Streams one model step, forwarding text deltas, and returns the final response.
async fn call_model(
    model: &dyn Model,
    req: &ModelRequest,
    out: &Queue,
) -> Result<ModelResponse, AgentError> {
    let mut events = model.stream(req);
    while let Some(event) = events.next().await {
        match event? {
            ModelEvent::TextDelta(text) => out.push(Event::TextDelta(text)),
            ModelEvent::Restart { reason } => out.push(Event::ReplyRestarted { reason }),
            ModelEvent::Done(response) => return Ok(response),
            _ => {}
        }
    }
    Err(ModelError::invalid_response("the model's stream ended without a final response").into())
}

/// Runs the calls of one step and returns their results in the order of the calls.
async fn execute(
    config: &Config,
    entries: &[Arc<ToolEntry>],
    ctx: &ToolContext,
    budget: &SharedBudget,
    calls: &[&ToolCall],
    out: &Queue,
) -> Vec<ToolResult> {
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
    let exclusive = |k: usize| {
        runs(k) && (!config.parallel_tool_calls || lookup[k].is_some_and(|e| e.exclusive))
    };
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

    let mut results: Vec<Option<ToolResult>> = vec![None; n];
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
            r.unwrap_or_else(|| ToolResult::error(&call.id, &call.name, "tool call not run"))
        })
        .collect()
}

fn unknown_tool(name: &str, entries: &[Arc<ToolEntry>]) -> ToolError {
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

async fn run_call(
    entry: Option<&ToolEntry>,
    refusal: Option<ToolError>,
    ctx: &ToolContext,
    budget: &SharedBudget,
    max_output: Option<usize>,
    call: &ToolCall,
    out: &Queue,
) -> ToolResult {
    out.push(Event::ToolCallStarted { call: call.clone() });
    let started = tokio::time::Instant::now();
    let refusal = refusal.or_else(|| {
        budget.charge_tool_call().err().map(|exceeded| {
            ToolError::rate_limited(format!("tool call not run: {exceeded}")).retryable(false)
        })
    });
    let outcome = match (refusal, entry) {
        (Some(err), _) => Err(err),
        (None, Some(entry)) => {
            // The call's one span: logging middleware records into it rather than nesting
            // another, so it declares the fields that middleware fills in.
            let span = tracing::info_span!(
                "execute_tool",
                otel.name = format!("execute_tool {}", call.name),
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = %call.name,
                gen_ai.tool.call.id = %call.id,
                gen_ai.tool.call.arguments = tracing::field::Empty,
                gen_ai.tool.call.result = tracing::field::Empty,
                duration_ms = tracing::field::Empty,
                output_len = tracing::field::Empty,
                error.type = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
            );
            invoke(entry, ctx, call, out).instrument(span).await
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
        Ok(output) => (
            ToolResult::from_output(&call.id, &call.name, bounded(output)),
            None,
        ),
        Err(err) => {
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
    out.push(Event::ToolCallFinished {
        result: result.clone(),
        duration,
        error_kind,
    });
    result
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
