//! How an agent run fails: [`AgentError`], with the [`ConfigProblem`] of a misconfigured agent
//! and the [`ToolSource`]s of clashing tools.

use std::fmt;

use crate::budget::BudgetResource;
use crate::context::StoreError;
use crate::error::ToolError;
use crate::model::ModelError;

/// Why an agent run ended without an answer.
///
/// Every variant carries its facts as fields, for programs to act on; `Display` writes them
/// as one sentence for people.
///
/// ```
/// use tinyagent::LlmAgent;
/// use tinyagent::{AgentError, agent::ConfigProblem};
///
/// let err = LlmAgent::builder("helper").build().unwrap_err();
/// assert!(matches!(
///     &err,
///     AgentError::Config { agent, problem: ConfigProblem::NoModel } if agent == "helper"
/// ));
/// assert_eq!(
///     err.to_string(),
///     "invalid configuration of agent \"helper\": it has no model; set one with `.model(..)`"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The model failed.
    #[error("the model failed: {0}")]
    Model(#[from] ModelError),
    /// The model asked for tools in every one of the allowed steps.
    #[error(
        "agent {agent:?} reached its limit of {max_steps} model steps without a final answer \
         (the model kept calling tools); raise it with `max_steps`"
    )]
    StepLimit {
        /// The agent's name.
        agent: String,
        /// The limit that was reached.
        max_steps: usize,
    },
    /// The invocation tree's [`Budget`](crate::Budget) ran out: the agent, or an agent it
    /// called or that called it, used up what the whole tree may spend.
    #[error(
        "agent {agent:?} stopped: the invocation's budget of {} is used up ({} needed; the \
         budget is shared by every agent of the invocation); raise it with `budget`",
        amount(*resource, *limit),
        amount(*resource, *used)
    )]
    BudgetExhausted {
        /// The agent whose run ended.
        agent: String,
        /// What ran out.
        resource: BudgetResource,
        /// The limit (milliseconds for wall time, nano-dollars for cost).
        limit: u64,
        /// How much was used or asked for when it ran out.
        used: u64,
    },
    /// The model's reply hit the token limit while it was writing tool calls: their
    /// arguments may be cut, so none of them ran.
    #[error(
        "the model's reply was cut off by the token limit ({}) while it was calling {}; \
         the calls were not run; raise the limit with `max_tokens`",
        match max_tokens { Some(n) => format!("max_tokens {n}"), None => "the provider's default max_tokens".to_owned() },
        tools.join(", ")
    )]
    ReplyTruncated {
        /// The agent's name.
        agent: String,
        /// The token limit the agent asked for; `None` when it left it to the provider.
        max_tokens: Option<u32>,
        /// The names of the tools the cut reply was calling.
        tools: Vec<String>,
    },
    /// Two sources offered tools of the same name.
    #[error("tool name {name:?} is offered twice in this invocation: by {first} and by {second}")]
    ToolConflict {
        /// The clashing name.
        name: String,
        /// The source that offered the name first.
        first: ToolSource,
        /// The source that offered it again.
        second: ToolSource,
    },
    /// A tool resolver failed.
    #[error("{} failed: {source}", ToolSource::Resolver(*resolver))]
    Resolver {
        /// Which resolver, counted from 1 in the order they were added to the agent.
        resolver: usize,
        /// Its error.
        #[source]
        source: ToolError,
    },
    /// The agent is misconfigured.
    #[error("invalid configuration of agent {agent:?}: {problem}")]
    Config {
        /// The agent's name.
        agent: String,
        /// What is wrong.
        problem: ConfigProblem,
    },
    /// The final answer was not JSON of the shape asked for, even after the problem was
    /// shown to the model once; see [`LlmAgent::ask_as`](crate::LlmAgent::ask_as).
    #[error(
        "agent {agent:?} answered twice without the JSON shape asked for ({format}): {problem}"
    )]
    InvalidAnswer {
        /// The agent's name.
        agent: String,
        /// The name of the shape asked for.
        format: String,
        /// What is wrong with the last answer (bounded; the answer is in the session).
        problem: String,
    },
    /// The agent's event stream ended without a [`Event::Finished`](super::Event::Finished).
    #[error("agent {agent:?} stopped without a final answer")]
    NoAnswer {
        /// The agent's name.
        agent: String,
    },
    /// The session store refused or failed to load, lock or write the run's session (see
    /// [`SessionRunner`](super::SessionRunner)).
    #[error("session store: {0}")]
    Store(#[from] StoreError),
    /// The run is paused: tool calls wait for a decision (see
    /// [`PausedRun`](super::PausedRun)). [`AgentExt::ask`](crate::AgentExt::ask) reports a run
    /// that paused this way, and a new message on a session whose run is paused is refused
    /// with it: resume the run first.
    #[error("agent {agent:?} is paused: {}", paused_text(pending))]
    Paused {
        /// The agent's name.
        agent: String,
        /// The calls that wait.
        pending: Vec<super::PendingCall>,
    },
    /// The invocation's [`RunOptions`](super::RunOptions) cannot be applied (a tool choice
    /// naming a tool the invocation does not have, a sampling option its model does not
    /// take). Nothing ran.
    #[error("agent {agent:?} cannot run with these options: {problem}")]
    Options {
        /// The agent's name.
        agent: String,
        /// The option at fault, by its field name (`tool_choice`, `seed`, …).
        option: String,
        /// What is wrong.
        problem: String,
    },
    /// A paused run could not be resumed as asked: the session has no paused run, or the
    /// decisions do not match its waiting calls. Nothing ran.
    #[error("agent {agent:?} cannot resume: {problem}")]
    Resume {
        /// The agent's name.
        agent: String,
        /// What is wrong.
        problem: String,
    },
}

/// What waits in a paused run, and how to go on.
fn paused_text(pending: &[super::PendingCall]) -> String {
    if pending.is_empty() {
        return "its decided calls ran but the run did not finish; resume it with no decisions \
                to go on (SessionRunner::resume, or POST /v1/sessions/{id}/resume)"
            .to_owned();
    }
    format!(
        "{} tool call(s) wait for a decision ({}); resume the run with a decision for each \
         (SessionRunner::resume, or POST /v1/sessions/{{id}}/resume)",
        pending.len(),
        pending
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    )
}

impl AgentError {
    /// [`AgentError::Options`] for `agent`.
    pub(crate) fn options(agent: &str, option: &str, problem: impl Into<String>) -> Self {
        Self::Options {
            agent: agent.to_owned(),
            option: option.to_owned(),
            problem: problem.into(),
        }
    }

    /// [`AgentError::Resume`] for `agent`.
    pub(crate) fn resume(agent: &str, problem: impl Into<String>) -> Self {
        Self::Resume {
            agent: agent.to_owned(),
            problem: problem.into(),
        }
    }
}

/// What is wrong with an agent's configuration; see [`AgentError::Config`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigProblem {
    /// No model was set.
    #[error("it has no model; set one with `.model(..)`")]
    NoModel,
    /// The agent's name is empty.
    #[error("its name is empty")]
    EmptyName,
    /// A limit that must be at least 1 was set to 0.
    #[error("{setting} must be at least 1")]
    ZeroLimit {
        /// The builder setting, e.g. `"max_steps"`.
        setting: &'static str,
    },
    /// Two static tools share a name.
    #[error("it has two tools named {name:?}")]
    DuplicateTool {
        /// The shared name.
        name: String,
    },
}

/// Where a tool offered in an invocation came from; see [`AgentError::ToolConflict`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolSource {
    /// The agent's static tools.
    Agent,
    /// A tool resolver, counted from 1 in the order they were added to the agent.
    Resolver(usize),
}

impl fmt::Display for ToolSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Agent => f.write_str("the agent's static tools"),
            Self::Resolver(n) => write!(f, "tool resolver #{n}"),
        }
    }
}

/// An amount of a budget's resource, with its unit.
fn amount(resource: BudgetResource, n: u64) -> String {
    let unit = match resource {
        BudgetResource::ModelCalls => "model calls",
        BudgetResource::ToolCalls => "tool calls",
        BudgetResource::Tokens => "tokens",
        BudgetResource::Cost => return crate::model::Cost::from_nano_usd(n).to_string(),
        _ => "ms of wall time",
    };
    format!("{n} {unit}")
}

impl AgentError {
    /// The `error.type` of a run's failure: a short snake-case name of what went wrong.
    pub(crate) fn error_type(&self) -> &'static str {
        match self {
            Self::Model(e) => e.kind().as_str(),
            Self::StepLimit { .. } => "step_limit",
            Self::BudgetExhausted { .. } => "budget_exhausted",
            Self::ReplyTruncated { .. } => "reply_truncated",
            Self::ToolConflict { .. } => "tool_conflict",
            Self::Resolver { .. } => "resolver",
            Self::Config { .. } => "config",
            Self::InvalidAnswer { .. } => "invalid_answer",
            Self::NoAnswer { .. } => "no_answer",
            Self::Store(_) => "store",
            Self::Paused { .. } => "paused",
            Self::Options { .. } => "options",
            Self::Resume { .. } => "resume",
        }
    }

    pub(crate) fn budget(agent: &str, exceeded: crate::budget::BudgetExceeded) -> Self {
        Self::BudgetExhausted {
            agent: agent.to_owned(),
            resource: exceeded.resource,
            limit: exceeded.limit,
            used: exceeded.used,
        }
    }
}
