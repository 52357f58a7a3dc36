//! [`Invocation`]: one run of an agent.

use std::sync::Arc;

use super::Session;
use crate::budget::SharedBudget;
use crate::message::{Message, new_id};

/// One run of an agent on one user message: an id, the message, the session it belongs to,
/// and the chain of agents above it when it runs as another agent's tool.
///
/// Tools reach the invocation they run in through
/// [`ToolContext::invocation`](crate::ToolContext::invocation); resolvers get it as an
/// argument.
///
/// ```
/// use tinyagent::{Invocation, Session};
///
/// let session = Session::new();
/// session.set("role", "admin");
/// let inv = Invocation::new(session, "What's the weather in Beijing?");
/// assert_eq!(inv.message().text(), "What's the weather in Beijing?");
/// assert_eq!(inv.session().get_str("role").as_deref(), Some("admin"));
/// assert_eq!(inv.depth(), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Invocation {
    id: String,
    message: Message,
    session: Session,
    chain: Arc<[Arc<str>]>,
    agent: Option<Arc<str>>,
    budget: Option<SharedBudget>,
    host: Option<super::host::Host>,
    /// What resuming a paused run needs, when the invocation resumes one (see
    /// [`Invocation::resume`]).
    resume: Option<Arc<dyn std::any::Any + Send + Sync>>,
    /// The run's options (see `Invocation::with_options`).
    options: Option<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Invocation {
    /// An invocation of a user message (text, or a whole [`Message`]) in a session, with a
    /// fresh id and no agents above it.
    pub fn new(session: Session, message: impl Into<Message>) -> Self {
        Self {
            id: new_id("inv"),
            message: message.into(),
            session,
            chain: Arc::from([]),
            agent: None,
            budget: None,
            host: None,
            resume: None,
            options: None,
        }
    }

    /// Makes the invocation resume a paused run (the agent module keeps what that needs).
    pub(crate) fn set_resume(&mut self, resume: Arc<dyn std::any::Any + Send + Sync>) {
        self.resume = Some(resume);
    }

    /// Sets the run's options (the agent module keeps their type).
    pub(crate) fn set_options(&mut self, options: Arc<dyn std::any::Any + Send + Sync>) {
        self.options = Some(options);
    }

    /// What [`set_options`](Self::set_options) set.
    pub(crate) fn options_state(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        self.options.as_deref()
    }

    /// What [`set_resume`](Self::set_resume) set.
    pub(crate) fn resume_state(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        self.resume.as_deref()
    }

    /// Returns the invocation with a [`ToolHost`](crate::host::ToolHost) for its tool calls: what
    /// the agent runs under (an MCP server serving it, a parent agent), which answers the
    /// tools' sampling and elicitation requests and hears their progress and logs too.
    #[must_use]
    pub fn with_host(mut self, host: Arc<dyn super::ToolHost>) -> Self {
        self.host = Some(super::host::Host(host));
        self
    }

    /// The host the invocation's tool calls run under, if any.
    pub fn host(&self) -> Option<&Arc<dyn super::ToolHost>> {
        self.host.as_ref().map(|h| &h.0)
    }

    /// Returns the invocation with the id replaced.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// Returns the invocation with the chain of agents above it replaced (outermost first).
    #[must_use]
    pub fn with_chain<S: Into<Arc<str>>>(mut self, chain: impl IntoIterator<Item = S>) -> Self {
        self.chain = chain.into_iter().map(Into::into).collect();
        self
    }

    /// A fresh invocation for a sub-agent called from this one: a new id, a new session,
    /// this invocation's chain extended by the agent running it, and this invocation's budget,
    /// which the sub-agent draws from.
    pub fn child(&self, message: impl Into<Message>) -> Self {
        let mut chain: Vec<Arc<str>> = self.chain.to_vec();
        if let Some(agent) = &self.agent {
            chain.push(agent.clone());
        }
        Self {
            chain: chain.into(),
            budget: self.budget.clone(),
            ..Self::new(Session::new(), message)
        }
    }

    /// Returns the invocation drawing from `budget` (shared with whoever holds a clone of it)
    /// instead of a fresh one from its agent's [`Budget`](crate::Budget).
    #[must_use]
    pub fn with_budget(mut self, budget: SharedBudget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The budget this invocation draws from: set when an agent starts running it (from the
    /// agent's [`Budget`](crate::Budget)), or inherited from the invocation that called it.
    pub fn budget(&self) -> Option<&SharedBudget> {
        self.budget.as_ref()
    }

    /// The invocation's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The user message being answered.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// The session the invocation belongs to.
    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The names of the agents above this invocation, outermost first; empty at the top.
    pub fn chain(&self) -> &[Arc<str>] {
        &self.chain
    }

    /// How deeply this invocation is nested inside other agents: the chain's length.
    pub fn depth(&self) -> usize {
        self.chain.len()
    }

    /// The name of the agent running this invocation, once one has started it.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// Records the agent running this invocation; agents call it when a run starts.
    pub fn set_agent(&mut self, name: impl Into<Arc<str>>) {
        self.agent = Some(name.into());
    }
}
