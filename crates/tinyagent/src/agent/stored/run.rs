//! A run in flight under a [`SessionRunner`](super::SessionRunner): its events, what it
//! stores when it ends, what it keeps when cancelled, and its journal's and checkpoints' writes.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures::StreamExt;
use futures::stream::{self, BoxStream};

use super::super::pause::JOURNAL_KEY;
use super::super::{AgentError, Event};
use crate::context::{
    Changes, Checkpoint, JournalWriter, Session, SessionLock, SessionStore, State, StoreError,
    StoredSession,
};
use crate::message::{Message, ToolResult, new_id};

/// The prefix of the id of the message that closes an interrupted turn (see
/// [`SessionRunner::keep_interrupted`](super::SessionRunner::keep_interrupted)).
pub const INTERRUPTED_PREFIX: &str = "interrupted";

/// Writes a run's journal into its session's state in `store` (a state write: the version
/// `loaded` has stays).
pub(super) fn journal_writer(
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
pub(super) struct Base {
    pub(super) version: u64,
    pub(super) state: State,
}

/// Commits a resumed run's session state as it is now (its record of the calls it runs), so
/// that it outlives the process.
pub(super) fn checkpoint(
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
pub(super) struct Run {
    pub(super) owner: Option<Arc<str>>,
    pub(super) store: Arc<dyn SessionStore>,
    pub(super) lock: Option<SessionLock>,
    pub(super) loaded: StoredSession,
    /// For a resumed run: the version and state its checkpoints stored since `loaded`.
    pub(super) base: Option<Arc<Mutex<Base>>>,
    pub(super) session: Session,
    pub(super) events: BoxStream<'static, Result<Event, AgentError>>,
    /// What the run did so far, kept when it is cancelled (see
    /// [`SessionRunner::keep_interrupted`]).
    pub(super) partial: Option<Partial>,
    /// Whether the run keeps a journal in the store (see [`SessionRunner::journal`]).
    pub(super) journaled: bool,
    /// Whether the run ended (answered or failed): then nothing is kept on drop.
    pub(super) done: bool,
}

/// The messages of a run so far, from its events.
pub(super) struct Partial {
    user: Message,
    /// The model's messages that made tool calls, in order.
    steps: Vec<Message>,
    /// The results of the calls that finished.
    results: Vec<ToolResult>,
    /// Whether a tool started (so something may have been done).
    acted: bool,
}

impl Partial {
    pub(super) fn new(user: Message) -> Self {
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

pub(super) type Item = Result<Event, AgentError>;

pub(super) async fn next(run: Option<Run>) -> Option<(Item, Option<Run>)> {
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
