//! Agents beyond the [`Agent`] trait: the [`LlmAgent`]'s builder and limits, the
//! [`SessionRunner`] that runs an agent on stored sessions, runs that pause for a decision
//! ([`PausedRun`], [`Decisions`]), and what configuration errors name.

pub(crate) mod agent_tool;
pub(crate) mod builder;
mod compaction;
mod config;
pub(crate) mod error;
pub(crate) mod events;
mod journal;
mod model_call;
mod options;
use crate::context::paused as pause;
mod queue;
mod run;
mod stored;
mod tool_calls;
mod tool_host;
pub(crate) mod traits;
mod typed;

pub use crate::context::decision::Decisions;
pub use crate::model::run_options::RunOptions;
pub(crate) use builder::LlmAgent;
pub use builder::LlmAgentBuilder;
pub use compaction::{
    COMPACTION_KEY, ContextPolicy, DEFAULT_KEEP_TOOL_OUTPUTS, DEFAULT_TRIMMED_OUTPUT_CHARS,
};
pub use config::{
    DEFAULT_MAX_CONCURRENT_TOOL_CALLS, DEFAULT_MAX_STEPS, DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    DEFAULT_MAX_TOOL_OUTPUT,
};
pub(crate) use error::AgentError;
pub use error::{ConfigProblem, ToolSource};
pub(crate) use events::Event;
pub use stored::{DEFAULT_SESSION_WAIT, INTERRUPTED_PREFIX, OnBusy, SessionRunner};
pub use tinyagent_core::context::{CallState, JOURNAL_KEY, PAUSED_KEY, PausedRun, PendingCall};
pub(crate) use traits::Agent;
