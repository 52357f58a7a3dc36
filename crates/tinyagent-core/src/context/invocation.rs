//! [`Invocation`]: one run of an agent.

use std::sync::Arc;

use super::Session;
use super::decision::Decisions;
use super::resume::{Checkpoint, JournalWriter, Resume};
use super::store::StoreError;
use crate::budget::SharedBudget;
use crate::message::{Message, new_id};
use crate::model::RunOptions;

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
    resume: Option<Arc<Resume>>,
    /// The run's options (see [`Invocation::with_options`]).
    options: Option<Arc<RunOptions>>,
    /// Where the run keeps its journal, when a store keeps its session (not inherited by
    /// [`child`](Self::child) invocations).
    journal: Option<Journaling>,
}

/// A [`JournalWriter`], shown by its presence only.
#[derive(Clone)]
struct Journaling(JournalWriter);

impl std::fmt::Debug for Journaling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Journaling")
    }
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
            journal: None,
        }
    }

    /// Returns the invocation with `options` taking the place of its agent's settings for it.
    ///
    /// ```
    /// use tinyagent::agent::RunOptions;
    /// use tinyagent::model::ToolChoice;
    /// use tinyagent::{Invocation, Session};
    ///
    /// let inv = Invocation::new(Session::new(), "hi")
    ///     .with_options(RunOptions::new().max_tokens(64).tool_choice(ToolChoice::None));
    /// assert_eq!(inv.options().unwrap().max_tokens, Some(64));
    /// ```
    #[must_use]
    pub fn with_options(mut self, options: RunOptions) -> Self {
        self.options = Some(Arc::new(options));
        self
    }

    /// The options the invocation was given, if any.
    pub fn options(&self) -> Option<&RunOptions> {
        self.options.as_deref()
    }

    /// Returns the invocation resuming a paused run as `resume` says (see
    /// [`Invocation::resume`]).
    #[doc(hidden)]
    pub fn with_resume(mut self, resume: Resume) -> Self {
        self.resume = Some(Arc::new(resume));
        self
    }

    /// The decisions this invocation resumes a paused run with, if it resumes one.
    pub fn decisions(&self) -> Option<&Decisions> {
        self.resume.as_deref().map(|r| &r.decisions)
    }

    /// Makes a resume record its progress through `checkpoint`; nothing when the invocation
    /// resumes no run.
    #[doc(hidden)]
    pub fn set_checkpoint(&mut self, checkpoint: Checkpoint) {
        if let Some(resume) = &mut self.resume {
            Arc::make_mut(resume).checkpoint = Some(checkpoint);
        }
    }

    /// Records the session where it is kept, when a [`SessionRunner`](crate::agent::SessionRunner)
    /// resumes the run; nothing otherwise.
    #[doc(hidden)]
    pub async fn checkpoint(&self) -> Result<(), StoreError> {
        match self.resume.as_ref().and_then(|r| r.checkpoint.clone()) {
            Some(checkpoint) => checkpoint(self.session().clone()).await,
            None => Ok(()),
        }
    }

    /// Makes the run keep its journal through `journal` (a `SessionRunner` does, see
    /// `SessionRunner::journal`).
    #[doc(hidden)]
    pub fn set_journal(&mut self, journal: JournalWriter) {
        self.journal = Some(Journaling(journal));
    }

    /// Where the run keeps its journal, if anywhere.
    #[doc(hidden)]
    pub fn journal_writer(&self) -> Option<&JournalWriter> {
        self.journal.as_ref().map(|j| &j.0)
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn options_and_resume_state_are_typed_fields() {
        let inv = Invocation::new(Session::new(), "hi");
        assert!(inv.options().is_none());
        assert!(inv.decisions().is_none());
        let inv = inv.with_options(RunOptions::new().max_tokens(7));
        assert_eq!(inv.options().and_then(|o| o.max_tokens), Some(7));
        let inv = inv.with_resume(Resume {
            decisions: Decisions::new().approve("call_1"),
            checkpoint: None,
        });
        assert_eq!(inv.decisions(), Some(&Decisions::new().approve("call_1")));
        assert_eq!(
            inv.options().and_then(|o| o.max_tokens),
            Some(7),
            "resuming keeps the options"
        );
    }

    #[tokio::test]
    async fn a_checkpoint_is_set_on_a_resume_only_and_not_on_its_clones() {
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = calls.clone();
        let checkpoint: Checkpoint = Arc::new(move |_session| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async { Ok(()) })
        });

        let mut fresh = Invocation::new(Session::new(), "hi");
        fresh.set_checkpoint(checkpoint.clone());
        fresh.checkpoint().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 0, "no resume, no checkpoint");
        assert!(fresh.decisions().is_none());

        let before = Invocation::new(Session::new(), "hi").with_resume(Resume {
            decisions: Decisions::new().approve("call_1"),
            checkpoint: None,
        });
        let mut resumed = before.clone();
        resumed.set_checkpoint(checkpoint);
        resumed.checkpoint().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        before.checkpoint().await.unwrap();
        assert_eq!(
            calls.load(Ordering::SeqCst),
            1,
            "the clone kept its own state"
        );
        assert_eq!(resumed.decisions(), before.decisions());
    }
}
