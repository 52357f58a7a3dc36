//! [`SessionRunner`]: runs an agent on a session kept in a [`SessionStore`].

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{self, BoxStream};

mod run;

use super::journal::{Journal, Left};
use super::pause::{JOURNAL_KEY, PausedRun};
use super::{Agent, AgentError, Event};
use crate::context::Decisions;
use crate::context::Invocation;
use crate::context::{Changes, Session, SessionLock, SessionStore, StoredSession};
use crate::message::Message;
pub use run::INTERRUPTED_PREFIX;
use run::{Base, Partial, Run, checkpoint, journal_writer, next};

/// How long a run waits for its session by default when another run holds it.
pub const DEFAULT_SESSION_WAIT: Duration = Duration::from_secs(60);

/// What a run does when another run on the same session is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnBusy {
    /// Wait up to this long for the other run to end, then fail with
    /// [`StoreError::Busy`](crate::store::StoreError::Busy). The second run then starts from
    /// the history the first one left.
    Wait(Duration),
    /// Fail at once with [`StoreError::Busy`](crate::store::StoreError::Busy).
    Fail,
}

impl Default for OnBusy {
    fn default() -> Self {
        Self::Wait(DEFAULT_SESSION_WAIT)
    }
}

/// Runs an agent on sessions kept in a [`SessionStore`]: "answer this message on session X".
///
/// A run takes the session's [lock](SessionStore::lock) (waiting or failing, by
/// [`OnBusy`]), loads its history and state, runs the agent on a copy in memory and, when the
/// agent has answered, commits the run's messages (the user's, the assistant's and the
/// tools') and the state keys it changed in one version-checked write, *before* the
/// [`Event::Finished`] is reported. So:
///
/// - two runs on one session never interleave or lose messages: the second waits for the
///   first (or fails), and a write that slipped past the lock fails with
///   [`StoreError::Conflict`](crate::store::StoreError::Conflict) instead of overwriting;
/// - a run that fails or is cancelled (its stream dropped) writes nothing but its
///   [journal](Self::journal), which it removes: the session keeps the history of the runs
///   that finished;
/// - a run whose process is killed leaves its journal, and the next run on the session, in
///   any process, finishes its turn first (see [`recover`](Self::recover));
/// - a client that saw `Finished` knows the answer is stored.
///
/// Cheap to clone; the stream of [`run`](Self::run) is `'static`, for web handlers.
///
/// ```
/// use tinyagent::LlmAgent;
/// use tinyagent::agent::SessionRunner;
/// use tinyagent::store::{MemoryStore, SessionStore};
/// use tinyagent::testing::{ScriptedModel, reply};
///
/// let model = ScriptedModel::new([reply::text("Hello!"), reply::text("You said hi.")]);
/// let agent = LlmAgent::builder("greeter").model(model).build().unwrap();
/// let store = MemoryStore::new();
/// let runner = SessionRunner::new(agent, store.clone());
/// # tokio_test::block_on(async {
/// assert_eq!(runner.ask("ses_1", "hi").await.unwrap(), "Hello!");
/// assert_eq!(runner.ask("ses_1", "what did I say?").await.unwrap(), "You said hi.");
/// let stored = store.load("ses_1").await.unwrap().unwrap();
/// assert_eq!(stored.messages.len(), 4);
/// assert_eq!(stored.version, 2);
/// # });
/// ```
#[derive(Clone)]
pub struct SessionRunner {
    agent: Arc<dyn Agent>,
    store: Arc<dyn SessionStore>,
    on_busy: OnBusy,
    keep_interrupted: bool,
    /// Whether runs keep a journal in the store.
    journal: bool,
    /// The tenant its commits are for ([`Changes::owner`]).
    owner: Option<Arc<str>>,
}

impl fmt::Debug for SessionRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRunner")
            .field("agent", &self.agent.name())
            .field("on_busy", &self.on_busy)
            .field("keep_interrupted", &self.keep_interrupted)
            .field("journal", &self.journal)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

impl SessionRunner {
    /// Runs `agent` on the sessions of `store`; a run waits up to [`DEFAULT_SESSION_WAIT`]
    /// for a session another run holds.
    pub fn new(agent: impl Agent + 'static, store: impl SessionStore + 'static) -> Self {
        Self {
            agent: Arc::new(agent),
            store: Arc::new(store),
            on_busy: OnBusy::default(),
            keep_interrupted: false,
            journal: true,
            owner: None,
        }
    }

    /// Whether each run keeps a journal in the store as it goes (on by default, in a store
    /// whose sessions outlive the process: not in a `MemoryStore`): the turn's
    /// question when it starts, each model message with tool calls, each call when it starts
    /// and when it finishes, and the answer, under the session's [`JOURNAL_KEY`], removed when
    /// the turn is stored. A run whose process died (killed, out of memory, its machine gone)
    /// is then finished by the next run on the session, in this process or any other (see
    /// [`recover`](Self::recover)): model messages already recorded are not asked for again,
    /// calls already finished are not run again, and a call started without a recorded
    /// result runs again only when its tool is read-only or idempotent (the model otherwise
    /// reads that it may have run). A run that fails or is cancelled removes its journal, as it
    /// writes nothing else. Each entry is one write to the store.
    #[must_use]
    pub fn journal(mut self, keep: bool) -> Self {
        self.journal = keep;
        self
    }

    /// Whether a run cancelled (its stream dropped) after its tools started keeps what they
    /// did (off by default: a cancelled run writes nothing). When on, such a run commits, in
    /// the background and still holding the session, the user's message, the model's
    /// messages with their tool calls, the results of the calls that finished, an error
    /// result (`"interrupted"`) for each call cut short, and a closing assistant message
    /// whose id starts with [`INTERRUPTED_PREFIX`] saying the turn was interrupted. The next
    /// run on the session then sees what the tools did. A run cancelled before any tool
    /// started still writes nothing.
    #[must_use]
    pub fn keep_interrupted(mut self, keep: bool) -> Self {
        self.keep_interrupted = keep;
        self
    }

    /// Makes every commit for `owner` (see [`Changes::owner`]): a session of another owner is
    /// not found and nothing is written; a session a run creates belongs to `owner`. `None`
    /// (the default) neither checks nor sets an owner.
    #[must_use]
    pub fn owner(mut self, owner: impl Into<Option<Arc<str>>>) -> Self {
        self.owner = owner.into();
        self
    }

    /// Sets what a run does when another run holds its session.
    #[must_use]
    pub fn on_busy(mut self, on_busy: OnBusy) -> Self {
        self.on_busy = on_busy;
        self
    }

    /// A runner of the same agent, with the same settings, on another store (a view of the
    /// same sessions scoped to one tenant, say).
    #[must_use]
    pub fn with_store(&self, store: Arc<dyn SessionStore>) -> Self {
        Self {
            agent: self.agent.clone(),
            store,
            on_busy: self.on_busy,
            keep_interrupted: self.keep_interrupted,
            journal: self.journal,
            owner: self.owner.clone(),
        }
    }

    /// The agent.
    pub fn agent(&self) -> &Arc<dyn Agent> {
        &self.agent
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Runs the agent on a user message in session `session_id` (created if it does not
    /// exist), reporting the run's events. Store failures end the stream with
    /// [`AgentError::Store`]. A session whose run is [paused](super::PausedRun) takes no new
    /// message: the stream ends with [`AgentError::Paused`] until it is
    /// [resumed](Self::resume).
    pub fn run(
        &self,
        session_id: impl Into<String>,
        message: impl Into<Message>,
    ) -> BoxStream<'static, Result<Event, AgentError>> {
        self.start(session_id.into(), Start::Message(message.into()))
    }

    /// Resumes the run paused in session `session_id` with a decision for each waiting call
    /// (by call id), in this process or any other, reporting the run's events from there.
    ///
    /// Each decided call is recorded in the store before it runs and again with its result,
    /// so a resume that fails or is retried never runs a call twice: a call a failed attempt
    /// started without recording its result is not run again, and the model reads that it
    /// may have run. The run then goes on where it stopped; the whole turn (the user's message,
    /// every step, every result) is stored when it finishes, as for any run. Fails with
    /// [`AgentError::Resume`] (nothing runs) when the session has no paused run or the
    /// decisions do not name exactly its waiting calls.
    ///
    /// ```
    /// use tinyagent::LlmAgent;
    /// use tinyagent::agent::{Decisions, SessionRunner};
    /// use tinyagent::store::MemoryStore;
    /// use tinyagent::testing::{ScriptedModel, reply};
    /// use tinyagent::tools::middleware::{Approval, ApprovalLayer, approval_fn};
    ///
    /// let model = ScriptedModel::new([
    ///     reply::tool_call("call_1", "get_weather", r#"{"city":"Beijing"}"#),
    ///     reply::text("Sunny, 22.5°C."),
    /// ]);
    /// let agent = LlmAgent::builder("assistant")
    ///     .model(model)
    ///     .tool(tinyagent_demo::weather_tool())
    ///     .middleware([ApprovalLayer::new(approval_fn(|_| async { Approval::defer("a person approves lookups") })).into()])
    ///     .build()
    ///     .unwrap();
    /// let runner = SessionRunner::new(agent, MemoryStore::new());
    /// # tokio_test::block_on(async {
    /// // The run pauses; the call waits in the store.
    /// let err = runner.ask("ses_1", "Weather in Beijing?").await.unwrap_err();
    /// assert!(err.to_string().contains("wait for a decision"), "{err}");
    /// let paused = runner.paused("ses_1").await.unwrap().unwrap();
    /// assert_eq!(paused.pending()[0].call.id, "call_1");
    /// // Later, anywhere: approve it, and the run goes on.
    /// let answer = runner
    ///     .resume_answer("ses_1", Decisions::new().approve("call_1"))
    ///     .await
    ///     .unwrap();
    /// assert_eq!(answer, "Sunny, 22.5°C.");
    /// # });
    /// ```
    pub fn resume(
        &self,
        session_id: impl Into<String>,
        decisions: Decisions,
    ) -> BoxStream<'static, Result<Event, AgentError>> {
        self.start(session_id.into(), Start::Resume(decisions))
    }

    /// [`resume`](Self::resume), returning the answer once stored ([`AgentError::Paused`]
    /// when the run paused again).
    pub async fn resume_answer(
        &self,
        session_id: impl Into<String>,
        decisions: Decisions,
    ) -> Result<String, AgentError> {
        super::traits::answer(self.agent.name(), self.resume(session_id, decisions)).await
    }

    /// The run paused in session `session_id`, if one is: its waiting calls
    /// ([`PausedRun::pending`]) are what a person decides about.
    pub async fn paused(&self, session_id: &str) -> Result<Option<PausedRun>, AgentError> {
        let Some(loaded) = self.store.load(session_id).await? else {
            return Ok(None);
        };
        match PausedRun::from_session(&loaded.to_session()) {
            None => Ok(None),
            Some(Ok(paused)) => Ok(Some(paused)),
            Some(Err(problem)) => Err(AgentError::resume(self.agent.name(), problem)),
        }
    }

    /// Finishes the turn whose run died in session `session_id` (see
    /// [`journal`](Self::journal)), reporting its events from where its journal stopped; no
    /// events when the session has no such turn. [`run`](Self::run) does this by itself, before
    /// a new message, so a caller needs it only to finish a turn no new message follows (a
    /// server taking over the runs of a replica that died).
    pub fn recover(
        &self,
        session_id: impl Into<String>,
    ) -> BoxStream<'static, Result<Event, AgentError>> {
        self.start(session_id.into(), Start::Recover)
    }

    /// [`recover`](Self::recover), returning the finished turn's answer once stored; `None`
    /// when the session has no turn to finish ([`AgentError::Paused`] when it paused).
    pub async fn recover_answer(
        &self,
        session_id: impl Into<String>,
    ) -> Result<Option<String>, AgentError> {
        let mut events = self.recover(session_id);
        while let Some(event) = events.next().await {
            match event? {
                Event::Finished { answer, .. } => return Ok(Some(answer)),
                Event::Paused { pending, .. } => {
                    return Err(AgentError::Paused {
                        agent: self.agent.name().to_owned(),
                        pending,
                    });
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// Takes session `id`'s lock and loads it.
    async fn open(&self, id: &str) -> Result<(SessionLock, StoredSession), AgentError> {
        let wait = match self.on_busy {
            OnBusy::Wait(d) => Some(d),
            OnBusy::Fail => None,
        };
        let lock = self.store.lock(id, wait).await?;
        let loaded = match self.store.load(id).await? {
            Some(loaded) => loaded,
            None => StoredSession::empty(id),
        };
        Ok((lock, loaded))
    }

    fn start(&self, id: String, start: Start) -> BoxStream<'static, Result<Event, AgentError>> {
        let this = self.clone();
        let started = async move {
            let (mut lock, mut loaded) = this.open(&id).await?;
            if matches!(start, Start::Message(_)) && loaded.state.contains_key(JOURNAL_KEY) {
                // A turn whose run died: finished first, so the new message comes after it.
                drop(lock);
                match this.recover_answer(id.as_str()).await {
                    Ok(_) | Err(AgentError::Paused { .. }) => {}
                    Err(err) => return Err(err),
                }
                (lock, loaded) = this.open(&id).await?;
            }
            let session = loaded.to_session();
            // The in-memory copy has no journal: the final commit removes the stored one.
            session.remove(JOURNAL_KEY);
            let mut base = None;
            let (mut inv, partial) = match start {
                Start::Message(message) => {
                    let partial = this.keep_interrupted.then(|| Partial::new(message.clone()));
                    (Invocation::new(session.clone(), message), partial)
                }
                Start::Resume(decisions) => {
                    let inv = Invocation::resume(session.clone(), decisions);
                    (this.checkpointed(inv, &loaded, &mut base), None)
                }
                Start::Recover => match this.left_to_do(&loaded, &session).await? {
                    None => return Ok(None),
                    Some(Left::Ask(message)) => (Invocation::new(session.clone(), message), None),
                    Some(Left::Calls(paused)) => {
                        // Resumed as a paused run with no decisions: its calls run as their
                        // state says.
                        paused.store_in(&session);
                        let inv = Invocation::resume(session.clone(), Decisions::new());
                        (this.checkpointed(inv, &loaded, &mut base), None)
                    }
                    Some(Left::Store(turn)) => {
                        return Ok(Some(this.answered(lock, loaded, session, turn)));
                    }
                },
            };
            let journaled = this.journal && this.store.is_durable();
            if journaled {
                // The run writes its journal, each entry before it goes on.
                inv.set_journal(journal_writer(
                    this.store.clone(),
                    &loaded,
                    this.owner.clone(),
                ));
            }
            let events = this.agent.run(inv);
            Ok::<_, AgentError>(Some(Run {
                owner: this.owner,
                store: this.store,
                lock: Some(lock),
                loaded,
                base,
                session,
                events,
                partial,
                journaled,
                done: false,
            }))
        };
        stream::once(started)
            .flat_map(|started| match started {
                Err(err) => stream::once(async move { Err(err) }).boxed(),
                Ok(None) => stream::empty().boxed(),
                Ok(Some(run)) => stream::unfold(Some(run), next).boxed(),
            })
            .boxed()
    }

    /// What the journal in `loaded` leaves to do, if anything. Calls that waited for a person
    /// when the run died are a paused run again (stored so, waiting for a decision): nothing to
    /// do now.
    async fn left_to_do(
        &self,
        loaded: &StoredSession,
        session: &Session,
    ) -> Result<Option<Left>, AgentError> {
        let journal = match Journal::from_session(&loaded.to_session()) {
            None => return Ok(None),
            Some(Err(problem)) => return Err(AgentError::resume(self.agent.name(), problem)),
            Some(Ok(journal)) => journal,
        };
        if journal.agent() != self.agent.name() {
            return Err(AgentError::resume(
                self.agent.name(),
                format!(
                    "the session's interrupted turn was run by agent {:?}; finish it with that \
                     agent",
                    journal.agent()
                ),
            ));
        }
        match journal.left() {
            Left::Calls(paused) if paused.waits() => {
                paused.store_in(session);
                let mut changes = Changes::state_diff(&loaded.state, &session.state());
                changes.owner = self.owner.as_deref().map(str::to_owned);
                self.store
                    .commit(&loaded.id, Some(loaded.version), &changes)
                    .await?;
                Ok(None)
            }
            left => Ok(Some(left)),
        }
    }

    /// A run that only stores `turn`, which the model had answered before its run died.
    fn answered(
        &self,
        lock: SessionLock,
        loaded: StoredSession,
        session: Session,
        turn: Vec<Message>,
    ) -> Run {
        let answer = turn.last().map(Message::text).unwrap_or_default();
        session.append(turn);
        let finished = Event::Finished {
            answer,
            usage: Default::default(),
            steps: 0,
        };
        Run {
            owner: self.owner.clone(),
            store: self.store.clone(),
            lock: Some(lock),
            loaded,
            base: None,
            session,
            events: stream::once(async move { Ok(finished) }).boxed(),
            partial: None,
            journaled: false,
            done: false,
        }
    }

    /// `inv` with a checkpoint that stores its session state as it resumes calls, building on
    /// `loaded` (`base` set to what the checkpoints stored).
    fn checkpointed(
        &self,
        mut inv: Invocation,
        loaded: &StoredSession,
        base: &mut Option<Arc<Mutex<Base>>>,
    ) -> Invocation {
        // Without the journal, which the checkpoints leave to the run's own writes.
        let mut state = loaded.state.clone();
        state.remove(JOURNAL_KEY);
        let shared = Arc::new(Mutex::new(Base {
            version: loaded.version,
            state,
        }));
        inv.set_checkpoint(checkpoint(
            self.store.clone(),
            loaded.id.clone(),
            shared.clone(),
            self.owner.clone(),
        ));
        *base = Some(shared);
        inv
    }

    /// Runs the agent on a user message in session `session_id` and returns its answer, once
    /// stored.
    pub async fn ask(
        &self,
        session_id: impl Into<String>,
        message: impl Into<Message>,
    ) -> Result<String, AgentError> {
        super::traits::answer(self.agent.name(), self.run(session_id, message)).await
    }
}

/// How a run starts: with a new message, by resuming a paused run, or by finishing a turn
/// whose run died.
enum Start {
    Message(Message),
    Resume(Decisions),
    Recover,
}
