//! The loop of an [`LlmAgent`](super::LlmAgent): resolve tools, ask the model, run the calls,
//! feed the results back, until the model answers.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures::stream::{BoxStream, Stream};
use tracing::Instrument;

use super::compaction;
use super::config::{Config, ToolEntry};
use super::model_call::{call_model, summarize};
use super::options;
use super::pause::{self, CallState, Decisions, PAUSED_KEY, PausedRun, PendingCall};
use super::queue::Queue;
use super::step::{self, execute, run_call};
use super::{AgentError, Event, ToolSource};
use crate::budget::{BudgetExceeded, SharedBudget};
use crate::context::Invocation;
use crate::context::ToolContext;
use crate::error::{ToolError, ToolErrorKind};
use crate::message::{Message, Part, Role, ToolCall, ToolResult, new_id};
use crate::model::{
    FinishReason, ModelRequest, ModelResponse, ResponseFormat, Sampling, ToolChoice,
    ToolDefinition, Usage,
};
use crate::telemetry;
use crate::tools::middleware::{Approval, Decided};
use crate::util::BoxFuture;

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
    let span = telemetry::agent_span(&config.name, inv.session().id(), inv.id());
    let out = queue.clone();
    let run = span.clone();
    let driver = Box::pin(
        async move {
            let unfinished = telemetry::Unfinished::new(&run);
            let result = drive(config, inv, format, out).await;
            unfinished.done();
            if let Err(err) = &result {
                telemetry::fail_agent_span(&run, err);
            }
            result
        }
        .instrument(span),
    );
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
            tokens: compaction::Tokens(Some(config.model.as_ref())),
            base,
            summary,
        });
    }
    let mut first_new = messages.len();
    let mut first_step = 1;
    let mut total = Usage::default();
    // A resumed run: its turn so far, what it spent, and the decisions for its waiting calls.
    let resumed = match inv.decisions() {
        Some(decisions) => {
            let paused = pause::open(&session, decisions, &config.name)
                .map_err(|problem| AgentError::resume(&config.name, problem))?;
            messages.extend(paused.turn[..paused.turn.len() - 1].iter().cloned());
            first_step = paused.steps + 1;
            total = paused.usage;
            budget.restore(paused.steps, paused.usage);
            Some((paused, decisions.clone()))
        }
        None => {
            if let Some(paused) = PausedRun::from_session(&session).and_then(Result::ok) {
                return Err(AgentError::Paused {
                    agent: config.name.to_string(),
                    pending: paused.pending(),
                });
            }
            messages.push(inv.message().clone());
            None
        }
    };
    let mut req = ModelRequest {
        instruction: config.instruction.clone(),
        messages,
        tools: tools.definitions,
        sampling: Sampling {
            temperature: config.temperature,
            ..Sampling::default()
        },
        max_tokens: config.max_tokens,
        tool_choice: config.tool_choice.clone(),
        response_format,
    };
    let mut parallel = config.parallel_tool_calls;
    let forced_choice = inv.options().is_some_and(|o| {
        matches!(
            o.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool(_))
        )
    });
    if let Some(options) = inv.options() {
        options::apply(options, &*config.model, &mut req, &mut parallel)
            .map_err(|(option, problem)| AgentError::options(&config.name, option, problem))?;
    }
    let host = inv.host().cloned();
    let ctx = ToolContext::new().with_invocation(inv);
    let ctx = match host {
        Some(host) => ctx.with_host(host),
        None => ctx,
    };
    if let Some((paused, decisions)) = resumed {
        let resume = Resume {
            config,
            tools: &tools.entries,
            ctx: &ctx,
            budget: &budget,
            out: &out,
        };
        // Boxed: only a resumed run needs it, and a run's future is as large as its largest step.
        match Box::pin(resume.finish_step(paused, &decisions)).await? {
            Ok((message, results)) => {
                req.messages.push(message);
                req.messages.push(Message::from_tool_results(results));
            }
            Err(pending) => {
                out.push(Event::Paused {
                    pending,
                    usage: total,
                    steps: first_step - 1,
                });
                return Ok(());
            }
        }
    }

    for step in first_step..=config.max_steps {
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
            usage,
            finish_reason,
            ..
        } = within(&budget, call_model(config, sent, &out))
            .await
            .map_err(over)??;
        budget.add_tokens(usage.total_tokens().unwrap_or(0));
        if let Some(cost) = usage.cost {
            budget.add_cost(cost);
        }
        total += usage;
        telemetry::record_agent_usage(&tracing::Span::current(), &total);
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
            Box::pin(execute(
                config,
                parallel,
                &tools.entries,
                &ctx,
                &budget,
                &calls,
                &out,
            )),
        )
        .await
        .map_err(over)?;
        // A budget spent during the step (here or in an agent called as a tool) ends the run:
        // the next model call could not be paid for (nor a paused run resumed).
        budget.check().map_err(over)?;
        if results
            .iter()
            .any(|(_, kind)| *kind == Some(ToolErrorKind::Deferred))
        {
            // Calls wait for a decision: the run pauses with its turn kept in the session.
            let turn = req.messages.drain(first_new..).chain([message]).collect();
            let paused = PausedRun::new(&config.name, turn, results, step, total);
            paused.store_in(&session);
            out.push(Event::Paused {
                pending: paused.pending(),
                usage: total,
                steps: step,
            });
            return Ok(());
        }
        if step == first_step && forced_choice {
            // A client's forced choice holds for the first step; then the agent's own applies.
            req.tool_choice = config.tool_choice.clone();
        }
        req.messages.push(message);
        req.messages.push(Message::from_tool_results(
            results.into_iter().map(|(result, _)| result),
        ));
    }
    Err(AgentError::StepLimit {
        agent: config.name.to_string(),
        max_steps: config.max_steps,
    })
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

/// What resuming a paused step needs from the run.
struct Resume<'a> {
    config: &'a Config,
    tools: &'a [Arc<ToolEntry>],
    ctx: &'a ToolContext,
    budget: &'a SharedBudget,
    out: &'a Queue,
}

impl Resume<'_> {
    /// Runs the paused step's waiting calls as decided, one at a time, recording each in the
    /// session (and, under a [`SessionRunner`](super::SessionRunner), in its store) before and
    /// after it runs. Gives the step's message and results, or the calls that still wait.
    async fn finish_step(
        &self,
        mut paused: PausedRun,
        decisions: &Decisions,
    ) -> Result<Result<(Message, Vec<ToolResult>), Vec<PendingCall>>, AgentError> {
        let session = self
            .ctx
            .session()
            .expect("the run's context has its invocation");
        let inv = self
            .ctx
            .invocation()
            .expect("the run's context has its invocation");
        let message = paused
            .message()
            .cloned()
            .unwrap_or_else(|| Message::assistant(""));
        for k in 0..paused.calls.len() {
            let (id, state) = &paused.calls[k];
            match state {
                CallState::Done { .. } => continue,
                CallState::Running => {
                    // Started by a resume that never recorded its result: never again.
                    let name = message
                        .tool_calls()
                        .find(|c| &c.id == id)
                        .map(|c| c.name.clone());
                    let result = pause::interrupted(id, name.as_deref().unwrap_or_default());
                    paused.calls[k].1 = CallState::Done { result };
                    continue;
                }
                CallState::Waiting { .. } => {}
            }
            let Some(mut call) = message.tool_calls().find(|c| &c.id == id).cloned() else {
                continue;
            };
            let decision = decisions.get(id).cloned().unwrap_or(Approval::Approve);
            let refusal = match &decision {
                Approval::Defer(reason) => {
                    paused.calls[k].1 = CallState::Waiting {
                        reason: reason.clone(),
                    };
                    continue;
                }
                Approval::Deny(reason) => Some(ToolError::denied(denial(&call.name, reason))),
                Approval::Rewrite(arguments) => {
                    call.arguments = arguments.clone();
                    None
                }
                Approval::Approve => None,
            };
            paused.calls[k].1 = CallState::Running;
            paused.store_in(session);
            inv.checkpoint().await?;
            let entry = self.tools.iter().find(|e| e.tool.name() == call.name);
            let refusal = refusal.or_else(|| {
                entry
                    .is_none()
                    .then(|| step::unknown_tool(&call.name, self.tools))
            });
            // The tool's approval layer applies this decision instead of asking again.
            let ctx = self.ctx.clone().with_extension(Decided(Approval::Approve));
            let (result, kind) = run_call(
                entry.map(|e| &**e),
                refusal,
                &ctx,
                self.budget,
                self.config.max_tool_output,
                &call,
                self.out,
            )
            .await;
            paused.calls[k].1 = match kind {
                Some(ToolErrorKind::Deferred) => CallState::Waiting {
                    reason: result.content,
                },
                _ => CallState::Done { result },
            };
            paused.store_in(session);
            inv.checkpoint().await?;
        }
        if paused.waits() {
            paused.store_in(session);
            return Ok(Err(paused.pending()));
        }
        let results = paused.results();
        session.remove(PAUSED_KEY);
        Ok(Ok((message, results)))
    }
}

/// What the model reads when a person denied a call.
fn denial(tool: &str, reason: &str) -> String {
    match reason.trim() {
        "" => format!("the call to {tool} was denied"),
        reason => format!("the call to {tool} was denied: {reason}"),
    }
}
