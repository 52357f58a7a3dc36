//! [`Run`]: what a run carries from one step to the next, and [`StepEnd`]: how a step ends.

use std::sync::Arc;

use crate::agent::compaction::RunCompaction;
use crate::agent::config::{Config, ToolEntry};
use crate::agent::pause::PausedRun;
use crate::agent::queue::Queue;
use crate::budget::SharedBudget;
use crate::context::{Session, ToolContext};
use crate::message::Message;
use crate::model::{ModelRequest, Usage};

/// A run between two steps: everything the loop carries from one model call to the next.
pub(super) struct Run<'a> {
    pub(super) config: &'a Config,
    /// What the run's invocation tree may still spend.
    pub(super) budget: SharedBudget,
    /// The invocation's tools, fixed before the first model call.
    pub(super) tools: Arc<[Arc<ToolEntry>]>,
    pub(super) session: Session,
    /// The context every tool call starts from: the invocation and the host it runs under.
    pub(super) ctx: ToolContext,
    /// The next request: the history so far (the turn's new messages from `first_new` on), the
    /// agent's settings with the run's options applied.
    pub(super) req: ModelRequest,
    /// Where this turn's messages start in `req.messages`: the session keeps them once the run
    /// answers.
    pub(super) first_new: usize,
    /// The history's compaction, when the agent has a context policy.
    pub(super) compaction: Option<RunCompaction<'a>>,
    /// Whether one step's calls may run at once.
    pub(super) parallel: bool,
    /// A client forced the tool choice: it holds for the first step only.
    pub(super) forced_choice: bool,
    /// What the run has used so far (summaries included).
    pub(super) total: Usage,
    pub(super) out: Queue,
}

/// How one step ended.
pub(super) enum StepEnd {
    /// The model called tools and their results are in the history: the run takes another step.
    ToolsRan,
    /// The model answered without calling tools: the run finishes with this message.
    Answered(Message),
    /// Calls wait for a decision: the run pauses.
    Paused(PausedRun),
    /// The model called tools at the last step: no model call would read their results.
    CallsAtStepLimit,
}
