//! One step of a run: the history compacted, the model called (within the budget), its reply
//! checked and reported, the tool calls it asks for run, their results added to the history.

use std::future::Future;
use std::sync::Mutex;

use super::state::{Run, StepEnd};
use crate::agent::model_call::{call_model, summarize};
use crate::agent::pause::PausedRun;
use crate::agent::tool_calls::execute;
use crate::agent::{AgentError, Event};
use crate::budget::{BudgetExceeded, SharedBudget};
use crate::error::ToolErrorKind;
use crate::message::{Message, Part, Role, ToolCall, new_id};
use crate::model::{FinishReason, ModelRequest, ModelResponse, ToolChoice, Usage};
use crate::telemetry;
use crate::util::lock;

impl Run<'_> {
    /// Takes step `step`: asks the model, then runs the calls it asks for.
    pub(super) async fn step(&mut self, step: usize) -> Result<StepEnd, AgentError> {
        self.budget.charge_model_call().map_err(self.over())?;
        if step == self.config.max_steps && self.config.answer_at_step_limit {
            // The last call: answer from what the tools gave, call none.
            self.req.tool_choice = Some(ToolChoice::None);
        }
        let message = self.ask_model(step).await?;
        if !message.has_tool_calls() {
            return Ok(StepEnd::Answered(message));
        }
        if step == self.config.max_steps {
            return Ok(StepEnd::CallsAtStepLimit);
        }
        self.call_tools(step, message).await
    }

    /// The error of a budget that ran out.
    fn over(&self) -> impl Fn(BudgetExceeded) -> AgentError + use<'_> {
        |exceeded| AgentError::budget(&self.config.name, exceeded)
    }

    /// Sends the (compacted) history to the model and gives its message: usage counted and
    /// reported, every call with an id of its own, refused when the reply was cut inside its
    /// calls.
    async fn ask_model(&mut self, step: usize) -> Result<Message, AgentError> {
        let compacted = self.compacted().await;
        let sent = compacted.as_ref().unwrap_or(&self.req);
        let ModelResponse {
            mut message,
            usage,
            finish_reason,
            ..
        } = within(&self.budget, call_model(self.config, sent, &self.out))
            .await
            .map_err(self.over())??;
        let cut = finish_reason == FinishReason::Length;
        self.count(step, usage, finish_reason).await?;
        message.role = Role::Assistant;
        own_call_ids(&mut message);
        if cut && message.has_tool_calls() {
            // The calls' arguments may be cut anywhere: running them would act on half a
            // request.
            return Err(AgentError::ReplyTruncated {
                agent: self.config.name.to_string(),
                max_tokens: self.req.max_tokens,
                tools: message.tool_calls().map(|c| c.name.clone()).collect(),
            });
        }
        self.out.record(Event::Message(message.clone())).await?;
        Ok(message)
    }

    /// The request to send when the agent compacts its history (what the summary cost
    /// counted in the run's total); `None` when it does not.
    async fn compacted(&mut self) -> Option<ModelRequest> {
        let compaction = self.compaction.as_mut()?;
        let summarizer = compaction
            .policy
            .summarizer_model()
            .unwrap_or(&self.config.model)
            .clone();
        let spent = Mutex::new(Usage::default());
        let (budget, config) = (&self.budget, self.config);
        let summarize = |r: ModelRequest| summarize(summarizer, r, budget, config, &spent);
        // Boxed, as is the tool step below: a run waits on its model call most of the
        // time, and its future is only as large as its largest inline step.
        let (sent, outcome) = Box::pin(compaction.request(
            &mut self.req,
            &mut self.first_new,
            &self.session,
            summarize,
        ))
        .await;
        // What the summary cost is part of the run's total.
        self.total += *lock(&spent);
        if let Some(o) = outcome {
            self.out.push(Event::ContextCompacted {
                tokens_before: o.before,
                tokens_after: o.after,
                trimmed_tool_outputs: o.trimmed,
                summarized_messages: o.summarized,
            });
        }
        Some(sent)
    }

    /// Counts a model call's usage against the budget and in the run's total, and reports it
    /// (the journal counts it too).
    async fn count(
        &mut self,
        step: usize,
        usage: Usage,
        finish_reason: FinishReason,
    ) -> Result<(), AgentError> {
        self.budget.add_tokens(usage.total_tokens().unwrap_or(0));
        if let Some(cost) = usage.cost {
            self.budget.add_cost(cost);
        }
        self.total += usage;
        telemetry::record_agent_usage(&tracing::Span::current(), &self.total);
        self.out
            .record(Event::Usage {
                step,
                usage,
                finish_reason,
            })
            .await?;
        Ok(())
    }

    /// Runs the calls of `message` and adds it and their results to the history; the run
    /// pauses instead when a call waits for a decision.
    async fn call_tools(&mut self, step: usize, message: Message) -> Result<StepEnd, AgentError> {
        let calls: Vec<&ToolCall> = message.tool_calls().collect();
        let results = within(
            &self.budget,
            Box::pin(execute(
                self.config,
                self.parallel,
                &self.tools,
                &self.ctx,
                &self.budget,
                &calls,
                &self.out,
            )),
        )
        .await
        .map_err(self.over())?;
        // A call the journal could not record ends the run (the call was not run).
        if let Some(failed) = self.out.journal().and_then(|j| j.take_failure()) {
            return Err(failed.into());
        }
        // A budget spent during the step (here or in an agent called as a tool) ends the run:
        // the next model call could not be paid for (nor a paused run resumed).
        self.budget.check().map_err(self.over())?;
        if results
            .iter()
            .any(|(_, kind)| *kind == Some(ToolErrorKind::Deferred))
        {
            // Calls wait for a decision: the run pauses with its turn kept in the session.
            let turn = self
                .req
                .messages
                .drain(self.first_new..)
                .chain([message])
                .collect();
            let paused = PausedRun::new(&self.config.name, turn, results, step, self.total);
            return Ok(StepEnd::Paused(paused));
        }
        if self.forced_choice {
            // A client's forced choice holds for the first step; then the agent's own applies.
            self.req.tool_choice = self.config.tool_choice.clone();
            self.forced_choice = false;
        }
        self.req.messages.push(message);
        self.req.messages.push(Message::from_tool_results(
            results.into_iter().map(|(result, _)| result),
        ));
        Ok(StepEnd::ToolsRan)
    }
}

/// Gives every call of `message` an id of its own (its result is matched to it): an empty id,
/// or one an earlier call of the message has, is replaced by a fresh one.
fn own_call_ids(message: &mut Message) {
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
