//! Resuming a paused step: its waiting calls run as decided, one at a time, each recorded in
//! the session (and, under a [`SessionRunner`](crate::agent::SessionRunner), in its store)
//! before and after it runs, so that a retried resume never runs a call twice.

use super::state::Run;
use crate::agent::AgentError;
use crate::agent::pause::{self, CallState, PAUSED_KEY, PausedRun, PendingCall};
use crate::agent::tool_calls::{run_call, unknown_tool};
use crate::context::Approval;
use crate::context::Decisions;
use crate::error::{ToolError, ToolErrorKind};
use crate::message::{Message, ToolCall};

/// How resuming a paused step ended.
pub(super) enum Resumed {
    /// Every call ran (or was refused): the step's message and results are in the history.
    Ran,
    /// These calls still wait for a decision.
    Waiting(Vec<PendingCall>),
}

/// What to do with one call of the paused step.
enum Next {
    /// Nothing: it ran already, or it is not in the step's message.
    Skip,
    /// Run it (with these arguments), or refuse it with this error; `decided` when a person's
    /// decision made it run (its approval layer then asks no one again).
    Run {
        call: ToolCall,
        refusal: Option<ToolError>,
        decided: bool,
    },
}

impl Run<'_> {
    /// Runs the paused step's waiting calls as `decisions` say; then the step's message and its
    /// results join the history, unless calls still wait.
    pub(super) async fn resume(
        &mut self,
        mut paused: PausedRun,
        decisions: &Decisions,
    ) -> Result<Resumed, AgentError> {
        let message = paused
            .message()
            .cloned()
            .unwrap_or_else(|| Message::assistant(""));
        for k in 0..paused.calls.len() {
            let repeatable = |name: &str| {
                self.tools
                    .iter()
                    .any(|e| e.tool.name() == name && e.tool.hints().is_repeatable())
            };
            if let Next::Run {
                call,
                refusal,
                decided,
            } = next(&mut paused, k, &message, decisions, repeatable)
            {
                self.resume_call(&mut paused, k, call, refusal, decided)
                    .await?;
            }
        }
        if paused.waits() {
            paused.store_in(&self.session);
            return Ok(Resumed::Waiting(paused.pending()));
        }
        let results = paused.results();
        self.session.remove(PAUSED_KEY);
        self.req.messages.push(message);
        self.req.messages.push(Message::from_tool_results(results));
        Ok(Resumed::Ran)
    }

    /// Runs call `k` of the paused step (or gives it `refusal`), recorded as running before
    /// and with its result after; with the person's approval when `decided`.
    async fn resume_call(
        &self,
        paused: &mut PausedRun,
        k: usize,
        call: ToolCall,
        refusal: Option<ToolError>,
        decided: bool,
    ) -> Result<(), AgentError> {
        let inv = self
            .ctx
            .invocation()
            .expect("the run's context has its invocation");
        paused.calls[k].1 = CallState::Running;
        paused.store_in(&self.session);
        inv.checkpoint().await?;
        let entry = self.tools.iter().find(|e| e.tool.name() == call.name);
        let refusal = refusal.or_else(|| {
            entry
                .is_none()
                .then(|| unknown_tool(&call.name, &self.tools))
        });
        // The tool's approval layer applies this decision instead of asking again.
        let ctx = if decided {
            self.ctx.clone().with_decision(Approval::Approve)
        } else {
            self.ctx.clone()
        };
        let (result, kind) = run_call(
            entry.map(|e| &**e),
            refusal,
            &ctx,
            &self.budget,
            self.config.max_tool_output,
            &call,
            &self.out,
        )
        .await;
        paused.calls[k].1 = match kind {
            Some(ToolErrorKind::Deferred) => CallState::Waiting {
                reason: result.content,
            },
            _ => CallState::Done { result },
        };
        paused.store_in(&self.session);
        inv.checkpoint().await?;
        Ok(())
    }
}

/// What `decisions` make of call `k` of the paused step: a call an earlier attempt started
/// and never recorded runs again when its tool is `repeatable`, else gets an error result (it
/// is never started again); a call never started runs as any call does; a deferred one keeps
/// waiting (its state updated here), the others run, or are refused when denied.
fn next(
    paused: &mut PausedRun,
    k: usize,
    message: &Message,
    decisions: &Decisions,
    repeatable: impl Fn(&str) -> bool,
) -> Next {
    let (id, state) = &paused.calls[k];
    let call = message.tool_calls().find(|c| &c.id == id).cloned();
    match state {
        CallState::Done { .. } => return Next::Skip,
        CallState::Running | CallState::Pending
            if matches!(state, CallState::Pending)
                || call.as_ref().is_some_and(|c| repeatable(&c.name)) =>
        {
            // Never started, or harmless to repeat: it runs as any call does.
            return match call {
                Some(call) => Next::Run {
                    call,
                    refusal: None,
                    decided: false,
                },
                None => Next::Skip,
            };
        }
        CallState::Running => {
            // Started by an attempt that never recorded its result: never again.
            let name = message
                .tool_calls()
                .find(|c| &c.id == id)
                .map(|c| c.name.clone());
            let result = pause::interrupted(id, name.as_deref().unwrap_or_default());
            paused.calls[k].1 = CallState::Done { result };
            return Next::Skip;
        }
        // Waiting (or a state this version does not know): decided now.
        _ => {}
    }
    let Some(mut call) = call else {
        return Next::Skip;
    };
    let refusal = match decisions.get(id).cloned().unwrap_or(Approval::Approve) {
        Approval::Defer(reason) => {
            paused.calls[k].1 = CallState::Waiting { reason };
            return Next::Skip;
        }
        Approval::Deny(reason) => Some(ToolError::denied(denial(&call.name, &reason))),
        Approval::Rewrite(arguments) => {
            call.arguments = arguments;
            None
        }
        Approval::Approve => None,
    };
    Next::Run {
        call,
        refusal,
        decided: true,
    }
}

/// What the model reads when a person denied a call.
fn denial(tool: &str, reason: &str) -> String {
    match reason.trim() {
        "" => format!("the call to {tool} was denied"),
        reason => format!("the call to {tool} was denied: {reason}"),
    }
}
