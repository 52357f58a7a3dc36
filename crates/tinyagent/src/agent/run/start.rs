//! The start of a run: its budget, its tools, the history it continues (after a stored
//! summary), and either the user's message or the paused step it resumes.

use std::sync::Arc;

use super::state::Run;
use crate::agent::compaction::{self, RunCompaction};
use crate::agent::config::{Config, ToolEntry};
use crate::agent::journal::{Journal, Recorder};
use crate::agent::options;
use crate::agent::pause::{self, PausedRun};
use crate::agent::queue::Queue;
use crate::agent::{AgentError, ToolSource};
use crate::budget::SharedBudget;
use crate::context::{Decisions, Invocation, Session, ToolContext};
use crate::message::Message;
use crate::model::{ModelRequest, ResponseFormat, ToolChoice, ToolDefinition, Usage};

/// A run ready for its first step.
pub(super) struct Started<'a> {
    pub(super) run: Run<'a>,
    /// The paused run it resumes, with the decisions for its waiting calls.
    pub(super) resumed: Option<(PausedRun, Decisions)>,
    /// The number of the first step it takes (after the steps of a paused run).
    pub(super) first_step: usize,
}

/// The tools of one invocation, fixed before the first model call.
struct ToolSet {
    entries: Arc<[Arc<ToolEntry>]>,
    definitions: Arc<[ToolDefinition]>,
}

/// Where the run's turn stands: new, or resumed after the steps of a paused run.
struct Turn {
    resumed: Option<(PausedRun, Decisions)>,
    first_step: usize,
    /// What the turn has used before this run.
    total: Usage,
}

/// The history a run continues, and where its turn starts.
struct History<'a> {
    messages: Vec<Message>,
    compaction: Option<RunCompaction<'a>>,
}

impl<'a> Run<'a> {
    /// Starts a run of `inv`: draws from the invocation's budget (or a fresh one from the
    /// agent's), resolves its tools, restores the history (after the stored summary, when the
    /// agent compacts), and opens the paused run it resumes or adds the user's message; then
    /// applies the run's options to the first request.
    pub(super) async fn start(
        config: &'a Config,
        mut inv: Invocation,
        response_format: Option<ResponseFormat>,
        out: Queue,
    ) -> Result<Started<'a>, AgentError> {
        inv.set_agent(config.name.clone());
        let budget = match inv.budget() {
            Some(budget) => budget.clone(),
            None => {
                let budget = SharedBudget::new(config.budget);
                inv = inv.with_budget(budget.clone());
                budget
            }
        };
        let tools = resolve(config, &inv).await?;
        let session = inv.session().clone();
        let History {
            mut messages,
            compaction,
        } = History::restore(config, &session);
        let first_new = messages.len();
        let Turn {
            resumed,
            first_step,
            total,
        } = Turn::open(config, &inv, &budget, &mut messages)?;
        let mut req = first_request(config, messages, tools.definitions, response_format);
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
        if let Some(write) = inv.journal_writer() {
            // The journal starts with the question (or the paused turn it resumes).
            let journal = match &resumed {
                Some((paused, _)) => Journal::resuming(paused.clone()),
                None => Journal::new(&config.name, inv.message().clone()),
            };
            let recorder = Recorder::new(write.clone(), journal);
            recorder.write().await?;
            out.keep_journal(recorder);
        }
        let run = Run {
            config,
            budget,
            tools: tools.entries,
            session,
            ctx: context(inv),
            req,
            first_new,
            compaction,
            parallel,
            forced_choice,
            total,
            out,
        };
        Ok(Started {
            run,
            resumed,
            first_step,
        })
    }
}

impl<'a> History<'a> {
    /// The session's history as the run starts it: without the messages a stored summary
    /// stands for, when the agent compacts.
    fn restore(config: &'a Config, session: &Session) -> Self {
        let messages = session.messages();
        let Some(policy) = &config.context_policy else {
            return Self {
                messages,
                compaction: None,
            };
        };
        let stored = compaction::Stored::from_state(session.get(compaction::COMPACTION_KEY));
        let (messages, base, summary) = compaction::restore(messages, stored);
        Self {
            messages,
            compaction: Some(RunCompaction {
                policy,
                tokens: compaction::Tokens(Some(config.model.as_ref())),
                base,
                summary,
            }),
        }
    }
}

impl Turn {
    /// Opens the turn: a resumed run's turn so far (what it spent counted again, the decisions
    /// checked against its waiting calls), else the user's message, unless the session has a
    /// paused run, which only a resume may continue.
    fn open(
        config: &Config,
        inv: &Invocation,
        budget: &SharedBudget,
        messages: &mut Vec<Message>,
    ) -> Result<Self, AgentError> {
        let session = inv.session();
        let Some(decisions) = inv.decisions() else {
            if let Some(paused) = PausedRun::from_session(session).and_then(Result::ok) {
                return Err(AgentError::Paused {
                    agent: config.name.to_string(),
                    pending: paused.pending(),
                });
            }
            messages.push(inv.message().clone());
            return Ok(Self {
                resumed: None,
                first_step: 1,
                total: Usage::default(),
            });
        };
        let paused = pause::open(session, decisions, &config.name)
            .map_err(|problem| AgentError::resume(&config.name, problem))?;
        messages.extend(paused.turn[..paused.turn.len() - 1].iter().cloned());
        budget.restore(paused.steps, paused.usage);
        Ok(Self {
            first_step: paused.steps + 1,
            total: paused.usage,
            resumed: Some((paused, decisions.clone())),
        })
    }
}

/// The first request of a run, as the agent's settings make it.
fn first_request(
    config: &Config,
    messages: Vec<Message>,
    tools: Arc<[ToolDefinition]>,
    response_format: Option<ResponseFormat>,
) -> ModelRequest {
    let mut request = ModelRequest::new(messages);
    request.instruction.clone_from(&config.instruction);
    request.tools = tools;
    request.sampling.temperature = config.temperature;
    request.max_tokens = config.max_tokens;
    request.tool_choice.clone_from(&config.tool_choice);
    request.response_format = response_format;
    request
}

/// The context every tool call of the run starts from: the invocation, and the host it runs
/// under.
fn context(inv: Invocation) -> ToolContext {
    let host = inv.host().cloned();
    let ctx = ToolContext::new().with_invocation(inv);
    match host {
        Some(host) => ctx.with_host(host),
        None => ctx,
    }
}

/// The invocation's tools: the agent's own, then each resolver's (wrapped in the agent's
/// middleware); a name offered twice is an error naming both sources.
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
            definitions.push(tool.definition());
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
