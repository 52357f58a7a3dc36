//! What a built [`LlmAgent`](crate::LlmAgent) holds and its loop reads: its [`Config`]
//! (settings, model, tools) and each tool as a [`ToolEntry`], wrapped in its middleware.

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::Tool;
use crate::budget::Budget;
use crate::model::{Model, PriceTable, ResponseFormat, ToolChoice, ToolDefinition};
use crate::tools::middleware::{SpawnBlockingLayer, ToolMiddleware, ValidationLayer};
use crate::tools::{ToolResolver, with_timeout, wrap_tool};

/// Default of [`LlmAgentBuilder::max_steps`](crate::agent::LlmAgentBuilder::max_steps).
pub const DEFAULT_MAX_STEPS: usize = 16;
/// Default of [`LlmAgentBuilder::max_tool_calls_per_step`](crate::agent::LlmAgentBuilder::max_tool_calls_per_step).
pub const DEFAULT_MAX_TOOL_CALLS_PER_STEP: usize = 32;
/// Default of [`LlmAgentBuilder::max_concurrent_tool_calls`](crate::agent::LlmAgentBuilder::max_concurrent_tool_calls).
pub const DEFAULT_MAX_CONCURRENT_TOOL_CALLS: usize = 8;
/// Default of [`LlmAgentBuilder::max_tool_output`](crate::agent::LlmAgentBuilder::max_tool_output): characters of one tool result (or error)
/// that reach the model.
pub const DEFAULT_MAX_TOOL_OUTPUT: usize = 20_000;

/// A tool as the loop holds it: wrapped in the agent's middleware, then (innermost) the
/// agent's own tool timeout and argument validation, so that every layer the user added sees
/// every call, refused ones included, and rewritten arguments are checked too. A tool whose
/// hints say it blocks runs on Tokio's blocking pool, inside the timeout.
pub(crate) struct ToolEntry {
    /// The tool as given, before wrapping.
    source: Arc<dyn Tool>,
    pub(crate) tool: Arc<dyn Tool>,
    /// Calls of this tool must run alone, in the model's order (it is not read-only).
    pub(crate) exclusive: bool,
}

impl ToolEntry {
    pub(crate) fn new(
        tool: Arc<dyn Tool>,
        middleware: &[ToolMiddleware],
        tool_timeout: Option<Duration>,
    ) -> Self {
        let hints = tool.hints();
        let exclusive = !hints.read_only;
        let innermost = tool_timeout
            .map(with_timeout)
            .into_iter()
            .chain(hints.blocking.then(|| SpawnBlockingLayer::new().into()))
            .chain([ValidationLayer::new().into()]);
        let wrapped = wrap_tool(tool.clone(), middleware.iter().cloned().chain(innermost));
        Self {
            source: tool,
            tool: wrapped,
            exclusive,
        }
    }
}

/// Wrapped entries of tools that resolvers returned, so that a resolver returning the same
/// `Arc` again gets the same middleware state (limits, caches) and no recompiled validator.
///
/// Each entry holds its tool, so a tool's address cannot be reused while it is here; the
/// oldest entries go once there are [`RESOLVED_ENTRIES`] of them (a resolver that makes new
/// tools on every invocation must not make this grow without bound).
#[derive(Default)]
pub(crate) struct ResolvedEntries(Mutex<VecDeque<Arc<ToolEntry>>>);

/// How many wrapped resolved tools an agent keeps.
const RESOLVED_ENTRIES: usize = 1024;

impl ResolvedEntries {
    pub(crate) fn get_or_wrap(
        &self,
        tool: Arc<dyn Tool>,
        middleware: &[ToolMiddleware],
        tool_timeout: Option<Duration>,
    ) -> Arc<ToolEntry> {
        let mut entries = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entries.iter().find(|e| Arc::ptr_eq(&e.source, &tool)) {
            return entry.clone();
        }
        if entries.len() >= RESOLVED_ENTRIES {
            entries.pop_front();
        }
        let entry = Arc::new(ToolEntry::new(tool, middleware, tool_timeout));
        entries.push_back(entry.clone());
        entry
    }
}

/// Everything the builder's setters set besides the name, the model and the static tools,
/// kept as is in the built agent (which reads it through `Deref`).
pub(crate) struct Settings {
    pub(crate) description: String,
    pub(crate) instruction: String,
    pub(crate) resolvers: Vec<Arc<dyn ToolResolver>>,
    pub(crate) middleware: Vec<ToolMiddleware>,
    pub(crate) max_steps: usize,
    pub(crate) answer_at_step_limit: bool,
    pub(crate) max_tool_calls_per_step: usize,
    pub(crate) max_concurrent_tool_calls: usize,
    pub(crate) parallel_tool_calls: bool,
    pub(crate) tool_timeout: Option<Duration>,
    pub(crate) temperature: Option<f32>,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) tool_choice: Option<ToolChoice>,
    pub(crate) response_format: Option<ResponseFormat>,
    pub(crate) budget: Budget,
    pub(crate) max_tool_output: Option<usize>,
    pub(crate) prices: PriceTable,
    pub(crate) context_policy: Option<super::ContextPolicy>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            description: String::new(),
            instruction: String::new(),
            resolvers: Vec::new(),
            middleware: Vec::new(),
            max_steps: DEFAULT_MAX_STEPS,
            answer_at_step_limit: false,
            max_tool_calls_per_step: DEFAULT_MAX_TOOL_CALLS_PER_STEP,
            max_concurrent_tool_calls: DEFAULT_MAX_CONCURRENT_TOOL_CALLS,
            parallel_tool_calls: true,
            tool_timeout: None,
            temperature: None,
            max_tokens: None,
            tool_choice: None,
            response_format: None,
            budget: Budget::default(),
            max_tool_output: Some(DEFAULT_MAX_TOOL_OUTPUT),
            prices: PriceTable::default(),
            context_policy: None,
        }
    }
}

pub(crate) struct Config {
    pub(crate) name: Arc<str>,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) static_tools: Arc<[Arc<ToolEntry>]>,
    pub(crate) static_definitions: Arc<[ToolDefinition]>,
    pub(crate) resolved: ResolvedEntries,
    pub(crate) settings: Settings,
}

impl Deref for Config {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.settings
    }
}
