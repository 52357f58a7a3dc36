//! [`SessionRunner`]: runs an agent on a session kept in a [`SessionStore`].

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{self, BoxStream};

use super::journal::{Journal, Left};
use super::pause::{JOURNAL_KEY, PausedRun};
use super::{Agent, AgentError, Event};
use crate::context::Invocation;
use crate::context::JournalWriter;
use crate::context::{
    Changes, Session, SessionLock, SessionStore, State, StoreError, StoredSession,
};
use crate::context::{Checkpoint, Decisions};
use crate::message::{Message, ToolResult, new_id};

/// The prefix of the id of the message that closes an interrupted turn (see
/// [`SessionRunner::keep_interrupted`]).
pub const INTERRUPTED_PREFIX: &str = "interrupted";

/// How long a run waits for its session by default when another run holds it.
pub const DEFAULT_SESSION_WAIT: Duration = Duration::from_secs(60);

/// What a run does when another run on the same session is in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnBusy {
    /// Wait up to this long for the other run to end, then fail with
    /// [`StoreError::Busy`]. The second run then starts from the history the first one left.
    Wait(Duration),
    /// Fail at once with [`StoreError::Busy`].
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
///   [`StoreError::Conflict`] instead of overwriting;
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

/// Writes a run's journal into its session's state in `store` (a state write: the version
/// `loaded` has stays).
fn journal_writer(
    store: Arc<dyn SessionStore>,
    loaded: &StoredSession,
    owner: Option<Arc<str>>,
) -> JournalWriter {
    let (id, version) = (loaded.id.clone(), loaded.version);
    Arc::new(move |journal| {
        let (store, id, owner) = (store.clone(), id.clone(), owner.clone());
        Box::pin(async move {
            let mut changes = Changes::new().set(JOURNAL_KEY, journal);
            changes.owner = owner.as_deref().map(str::to_owned);
            store.commit(&id, Some(version), &changes).await.map(drop)
        })
    })
}

/// The version and state a resumed run's checkpoints have stored: what its final commit
/// builds on.
struct Base {
    version: u64,
    state: State,
}

/// Commits a resumed run's session state as it is now (its record of the calls it runs), so
/// that it outlives the process.
fn checkpoint(
    store: Arc<dyn SessionStore>,
    id: String,
    base: Arc<Mutex<Base>>,
    owner: Option<Arc<str>>,
) -> Checkpoint {
    Arc::new(move |session: Session| {
        let (store, id, base, owner) = (store.clone(), id.clone(), base.clone(), owner.clone());
        Box::pin(async move {
            let state = session.state().clone();
            let (version, mut changes) = {
                let base = base.lock().unwrap_or_else(PoisonError::into_inner);
                (base.version, Changes::state_diff(&base.state, &state))
            };
            if changes.is_empty() {
                return Ok(());
            }
            changes.owner = owner.as_deref().map(str::to_owned);
            let version = store.commit(&id, Some(version), &changes).await?;
            *base.lock().unwrap_or_else(PoisonError::into_inner) = Base { version, state };
            Ok(())
        })
    })
}

/// A run in flight.
struct Run {
    owner: Option<Arc<str>>,
    store: Arc<dyn SessionStore>,
    lock: Option<SessionLock>,
    loaded: StoredSession,
    /// For a resumed run: the version and state its checkpoints stored since `loaded`.
    base: Option<Arc<Mutex<Base>>>,
    session: Session,
    events: BoxStream<'static, Result<Event, AgentError>>,
    /// What the run did so far, kept when it is cancelled (see
    /// [`SessionRunner::keep_interrupted`]).
    partial: Option<Partial>,
    /// Whether the run keeps a journal in the store (see [`SessionRunner::journal`]).
    journaled: bool,
    /// Whether the run ended (answered or failed): then nothing is kept on drop.
    done: bool,
}

/// The messages of a run so far, from its events.
struct Partial {
    user: Message,
    /// The model's messages that made tool calls, in order.
    steps: Vec<Message>,
    /// The results of the calls that finished.
    results: Vec<ToolResult>,
    /// Whether a tool started (so something may have been done).
    acted: bool,
}

impl Partial {
    fn new(user: Message) -> Self {
        Self {
            user,
            steps: Vec::new(),
            results: Vec::new(),
            acted: false,
        }
    }

    fn see(&mut self, event: &Event) {
        match event {
            Event::Message(message) if message.has_tool_calls() => {
                self.steps.push(message.clone());
            }
            Event::ToolCallStarted { .. } => self.acted = true,
            Event::ToolCallFinished { result, .. } => self.results.push(result.clone()),
            _ => {}
        }
    }

    /// The messages to keep: each step's message and its calls' results (an error result for
    /// a call that did not finish), then the closing message.
    fn messages(mut self) -> Vec<Message> {
        let mut out = vec![self.user];
        for step in self.steps {
            let results: Vec<ToolResult> = step
                .tool_calls()
                .map(
                    |call| match self.results.iter().position(|r| r.call_id == call.id) {
                        Some(at) => self.results.remove(at),
                        None => ToolResult::error(
                            call.id.clone(),
                            call.name.clone(),
                            "interrupted: the run was cancelled before this call finished; \
                                 it may have been done in part",
                        ),
                    },
                )
                .collect();
            out.push(step);
            out.push(Message::from_tool_results(results));
        }
        out.push(
            Message::assistant(
                "(interrupted: this turn was cancelled before it was answered; the tool calls \
                 above ran and their results are kept)",
            )
            .id(new_id(INTERRUPTED_PREFIX)),
        );
        out
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let partial = self.partial.take().filter(|p| p.acted);
        if partial.is_none() && !self.journaled {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.store.clone();
        let lock = self.lock.take();
        let id = self.loaded.id.clone();
        let version = self.loaded.version;
        // A cancelled run's journal goes: cancelling is not dying, and the turn is not to be
        // finished later.
        let mut changes = match partial {
            Some(partial) => Changes::new().append(partial.messages()),
            None => Changes::new().must_exist(true),
        };
        if self.journaled {
            changes = changes.remove(JOURNAL_KEY);
        }
        changes.owner = self.owner.as_deref().map(str::to_owned);
        runtime.spawn(async move {
            if let Err(error) = store.commit(&id, Some(version), &changes).await {
                tracing::warn!(session = %id, %error, "the interrupted turn could not be kept");
            }
            // The session stays held until the turn is kept.
            drop(lock);
        });
    }
}

type Item = Result<Event, AgentError>;

async fn next(run: Option<Run>) -> Option<(Item, Option<Run>)> {
    let mut run = run?;
    match run.events.next().await? {
        Ok(finished @ (Event::Finished { .. } | Event::Paused { .. })) => {
            run.done = true;
            drop(std::mem::replace(&mut run.events, stream::empty().boxed()));
            if let Some(base) = run.base.take() {
                // A resumed run: build on what its checkpoints stored.
                let base = Arc::try_unwrap(base)
                    .map(|m| m.into_inner().unwrap_or_else(PoisonError::into_inner))
                    .unwrap_or_else(|shared| {
                        let base = shared.lock().unwrap_or_else(PoisonError::into_inner);
                        Base {
                            version: base.version,
                            state: base.state.clone(),
                        }
                    });
                run.loaded.version = base.version;
                run.loaded.state = base.state;
            }
            let stored = save(
                run.store.as_ref(),
                &run.loaded,
                &run.session,
                run.owner.as_deref(),
                run.journaled,
            )
            .await;
            // Let the next run in before the caller reads the answer.
            drop(run.lock.take());
            Some((stored.map(|()| finished), None))
        }
        Ok(event) => {
            if let Some(partial) = &mut run.partial {
                partial.see(&event);
            }
            Some((Ok(event), Some(run)))
        }
        Err(err) => {
            run.done = true;
            forget_journal(&run).await;
            Some((Err(err), None))
        }
    }
}

/// A failed run's journal removed from the store (the run writes nothing); a failure to do so
/// is logged, and the next run finishes the turn instead.
fn forget_journal(run: &Run) -> impl Future<Output = ()> + Send + 'static {
    let journaled = run.journaled;
    let mut changes = Changes::new().remove(JOURNAL_KEY).must_exist(true);
    changes.owner = run.owner.as_deref().map(str::to_owned);
    let (store, id) = (run.store.clone(), run.loaded.id.clone());
    async move {
        if !journaled {
            return;
        }
        if let Err(error) = store.commit(&id, None, &changes).await {
            tracing::warn!(session = %id, %error, "a failed run's journal could not be removed");
        }
    }
}

/// Writes what the run added: its messages and the state keys it changed (its journal
/// removed when `journaled`).
async fn save(
    store: &dyn SessionStore,
    loaded: &StoredSession,
    session: &Session,
    owner: Option<&str>,
    journaled: bool,
) -> Result<(), AgentError> {
    let new = match session.appended_since(&loaded.messages) {
        Some(new) => new,
        None => {
            return Err(StoreError::InvalidInput {
                what: "history",
                reason: format!(
                    "the run changed messages of session {:?} that were already stored; a \
                     stored history can only be appended to",
                    loaded.id
                ),
            }
            .into());
        }
    };
    let mut changes = Changes::state_diff(&loaded.state, &session.state()).append(new);
    if journaled && !loaded.state.contains_key(JOURNAL_KEY) {
        changes = changes.remove(JOURNAL_KEY);
    }
    changes.owner = owner.map(str::to_owned);
    if changes.is_empty() {
        return Ok(());
    }
    store
        .commit(&loaded.id, Some(loaded.version), &changes)
        .await?;
    Ok(())
}
