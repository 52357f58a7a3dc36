//! [`SessionRunner`]: runs an agent on a session kept in a [`SessionStore`].

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::{self, BoxStream};

use super::pause::PausedRun;
use super::{Agent, AgentError, Event};
use crate::context::Invocation;
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
/// - a run that fails, is cancelled (its stream dropped) or whose process is killed writes
///   nothing: the session keeps the history of the runs that finished, and only the answer in
///   flight is lost;
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
    /// The tenant its commits are for ([`Changes::owner`]).
    owner: Option<Arc<str>>,
}

impl fmt::Debug for SessionRunner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionRunner")
            .field("agent", &self.agent.name())
            .field("on_busy", &self.on_busy)
            .field("keep_interrupted", &self.keep_interrupted)
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
            owner: None,
        }
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

    fn start(&self, id: String, start: Start) -> BoxStream<'static, Result<Event, AgentError>> {
        let this = self.clone();
        let started = async move {
            let wait = match this.on_busy {
                OnBusy::Wait(d) => Some(d),
                OnBusy::Fail => None,
            };
            let lock = this.store.lock(&id, wait).await?;
            let loaded = match this.store.load(&id).await? {
                Some(loaded) => loaded,
                None => StoredSession::empty(id.as_str()),
            };
            let session = loaded.to_session();
            let mut base = None;
            let (inv, partial) = match start {
                Start::Message(message) => {
                    let partial = this.keep_interrupted.then(|| Partial::new(message.clone()));
                    (Invocation::new(session.clone(), message), partial)
                }
                Start::Resume(decisions) => {
                    let mut inv = Invocation::resume(session.clone(), decisions);
                    let shared = Arc::new(Mutex::new(Base {
                        version: loaded.version,
                        state: loaded.state.clone(),
                    }));
                    inv.set_checkpoint(checkpoint(
                        this.store.clone(),
                        loaded.id.clone(),
                        shared.clone(),
                        this.owner.clone(),
                    ));
                    base = Some(shared);
                    (inv, None)
                }
            };
            let events = this.agent.run(inv);
            Ok::<_, AgentError>(Run {
                owner: this.owner,
                store: this.store,
                lock: Some(lock),
                loaded,
                base,
                session,
                events,
                partial,
                done: false,
            })
        };
        stream::once(started)
            .flat_map(|started| match started {
                Err(err) => stream::once(async move { Err(err) }).boxed(),
                Ok(run) => stream::unfold(Some(run), next).boxed(),
            })
            .boxed()
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

/// How a run starts: with a new message, or by resuming a paused run.
enum Start {
    Message(Message),
    Resume(Decisions),
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
        let Some(partial) = self.partial.take().filter(|p| p.acted) else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let store = self.store.clone();
        let lock = self.lock.take();
        let id = self.loaded.id.clone();
        let version = self.loaded.version;
        let mut changes = Changes::new().append(partial.messages());
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
            Some((Err(err), None))
        }
    }
}

/// Writes what the run added: its messages and the state keys it changed.
async fn save(
    store: &dyn SessionStore,
    loaded: &StoredSession,
    session: &Session,
    owner: Option<&str>,
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
    changes.owner = owner.map(str::to_owned);
    if changes.is_empty() {
        return Ok(());
    }
    store
        .commit(&loaded.id, Some(loaded.version), &changes)
        .await?;
    Ok(())
}
