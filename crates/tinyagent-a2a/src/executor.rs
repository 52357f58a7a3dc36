//! The [`AgentExecutor`] that runs a tinyagent agent for A2A tasks: each A2A context is a
//! session of the runner's store, so a conversation goes on across tasks, in this process or
//! another one sharing the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use a2a::{A2AError, Message, PartContent, StreamResponse, TaskState};
use a2a_server::{AgentExecutor, ExecutorContext};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use tinyagent::agent::{Decisions, SessionRunner};
use tinyagent::{AgentError, Event};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::text::message_text;
use crate::turn::Turn;

/// Makes the runner of one task (a view of the store for the caller, say).
pub(crate) type RunnerFn = Arc<dyn Fn(&TaskCall) -> SessionRunner + Send + Sync>;

/// Says what went wrong in a task's run, for the remote caller.
pub(crate) type DescribeFn = Arc<dyn Fn(&AgentError, &TaskCall) -> String + Send + Sync>;

/// The call that started a task: the task's ids and the HTTP headers the call came with, for a
/// server that ties a task to its request (its request id, its trace).
///
/// ```
/// let call = tinyagent_a2a::TaskCall::new("task-1", "ctx-1").header_value("X-Request-Id", "req_1");
/// assert_eq!(call.header("x-request-id"), Some("req_1"));
/// assert_eq!(call.context_id, "ctx-1");
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TaskCall {
    /// The task's id.
    pub task_id: String,
    /// The task's context id: the session the run is on.
    pub context_id: String,
    /// The headers, by lower-case name.
    headers: HashMap<String, Vec<String>>,
}

impl TaskCall {
    /// A call for task `task_id` in context `context_id`, without headers.
    pub fn new(task_id: impl Into<String>, context_id: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            context_id: context_id.into(),
            headers: HashMap::new(),
        }
    }

    /// The call with one more header value.
    #[must_use]
    pub fn header_value(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers
            .entry(name.to_ascii_lowercase())
            .or_default()
            .push(value.into());
        self
    }

    /// The first value of header `name` (any case), if the call had it.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .and_then(|values| values.first())
            .map(String::as_str)
    }

    fn of(ctx: &ExecutorContext) -> Self {
        Self {
            task_id: ctx.task_id.to_string(),
            context_id: ctx.context_id.clone(),
            headers: ctx.service_params.clone(),
        }
    }
}

pub(crate) struct RunExecutor {
    pub(crate) runner: RunnerFn,
    pub(crate) describe: DescribeFn,
    /// Tasks running at once; more are rejected.
    pub(crate) slots: Arc<Semaphore>,
    pub(crate) max_running: usize,
    pub(crate) run_timeout: Option<Duration>,
    /// The running tasks, to stop on cancel.
    pub(crate) running: Arc<Mutex<HashMap<String, CancellationToken>>>,
}

/// Forgets a running task when its run ends, however it ends.
struct Running {
    running: Arc<Mutex<HashMap<String, CancellationToken>>>,
    task_id: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.task_id);
    }
}

/// What a task's message asks: a new turn, or decisions for a paused run.
enum Start {
    Message(String),
    Resume(Decisions),
}

/// A message with a data part `{"decisions": {"call_1": "approve", ...}}` decides on the calls
/// a paused run waits for; any other message is a new turn.
fn start(message: &Message) -> Result<Start, A2AError> {
    let decisions = message.parts.iter().find_map(|part| match &part.content {
        PartContent::Data(value) => value.get("decisions").cloned(),
        _ => None,
    });
    match decisions {
        Some(value) => serde_json::from_value(value)
            .map(Start::Resume)
            .map_err(|e| {
                A2AError::invalid_params(format!(
                    "`decisions` must map call ids to \"approve\" or {{\"deny\": \"why\"}}: {e}"
                ))
            }),
        None => message_text(message).map(Start::Message),
    }
}

/// How long text is gathered into one artifact chunk.
const TEXT_BATCH: Duration = Duration::from_millis(50);

/// One task's run, as the unfold of [`RunExecutor::execute`] walks it.
struct Run {
    events: BoxStream<'static, Result<Event, AgentError>>,
    turn: Turn,
    /// An event read ahead while gathering text.
    ahead: Option<Option<Result<Event, AgentError>>>,
    over: bool,
    describe: DescribeFn,
    call: TaskCall,
    token: CancellationToken,
    deadline: Option<(Duration, Instant)>,
    /// The task's slot and its place among the running tasks, released with the run.
    _held: (OwnedSemaphorePermit, Running),
}

impl Run {
    /// The next event of the run, text deltas that come within [`TEXT_BATCH`] of each other
    /// merged; `None` when the task is cancelled.
    async fn next(&mut self) -> Option<Option<Result<Event, AgentError>>> {
        let first = match self.ahead.take() {
            Some(next) => next,
            None => tokio::select! {
                () = self.token.cancelled() => return None,
                next = self.events.next() => next,
            },
        };
        let Some(Ok(Event::TextDelta(mut text))) = first else {
            return Some(first);
        };
        let until = Instant::now() + TEXT_BATCH;
        loop {
            match tokio::time::timeout_at(until, self.events.next()).await {
                Ok(Some(Ok(Event::TextDelta(more)))) => text.push_str(&more),
                Ok(other) => {
                    self.ahead = Some(other);
                    break;
                }
                Err(_) => break,
            }
        }
        Some(Some(Ok(Event::TextDelta(text))))
    }

    /// The task's next events; `None` when it is over.
    async fn step(&mut self) -> Option<Vec<StreamResponse>> {
        if self.over {
            return None;
        }
        let deadline = self.deadline;
        let sleep = async {
            match deadline {
                Some((_, at)) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            () = sleep => {
                self.over = true;
                let limit = deadline.map_or(0, |(limit, _)| limit.as_secs());
                let text = format!(
                    "the run took longer than this server allows ({limit} s) and was stopped"
                );
                return Some(vec![self.turn.status(TaskState::Failed, Some(text))]);
            }
            next = self.next() => next?,
        };
        let out = match next {
            Some(Ok(event)) => {
                let out = self.turn.event(event);
                self.over = out.iter().any(is_final);
                return Some(out);
            }
            Some(Err(err)) => vec![
                self.turn
                    .status(TaskState::Failed, Some((self.describe)(&err, &self.call))),
            ],
            None => vec![self.turn.status(
                TaskState::Failed,
                Some("the run ended without an answer".into()),
            )],
        };
        self.over = true;
        Some(out)
    }
}

impl AgentExecutor for RunExecutor {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let turn = Turn::new(ctx.task_id.clone(), ctx.context_id.clone());
        let start = match ctx.message.as_ref().map(start) {
            Some(Ok(start)) => start,
            Some(Err(err)) => {
                return once(turn.status(TaskState::Rejected, Some(err.message)));
            }
            None => {
                return once(turn.status(
                    TaskState::Rejected,
                    Some("the request carries no message".into()),
                ));
            }
        };
        if let Err(err) = tinyagent::store::check_session_id(&ctx.context_id) {
            return once(turn.status(
                TaskState::Rejected,
                Some(format!(
                    "contextId {:?} cannot be used: {err}",
                    ctx.context_id
                )),
            ));
        }
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            return once(turn.status(
                TaskState::Rejected,
                Some(format!(
                    "too many tasks running at once for this caller (at most {}); retry when \
                     one has finished",
                    self.max_running
                )),
            ));
        };
        let token = CancellationToken::new();
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(ctx.task_id.clone(), token.clone());
        let running = Running {
            running: self.running.clone(),
            task_id: ctx.task_id.clone(),
        };
        let call = TaskCall::of(&ctx);
        let runner = (self.runner)(&call);
        let events = match start {
            Start::Message(text) => runner.run(ctx.context_id.clone(), text),
            Start::Resume(decisions) => runner.resume(ctx.context_id.clone(), decisions),
        };
        let working = turn.status(TaskState::Working, None);
        let run = Run {
            events,
            turn,
            ahead: None,
            over: false,
            describe: self.describe.clone(),
            call,
            token,
            deadline: self.run_timeout.map(|d| (d, Instant::now() + d)),
            _held: (permit, running),
        };
        let steps = stream::unfold(run, |mut run| async move {
            let out = run.step().await?;
            Some((out, run))
        })
        .flat_map(stream::iter);
        stream::once(async move { working })
            .chain(steps)
            .map(Ok)
            .boxed()
    }

    fn cancel(&self, ctx: ExecutorContext) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        if let Some(token) = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&ctx.task_id)
        {
            token.cancel();
        }
        let turn = Turn::new(ctx.task_id, ctx.context_id);
        once(turn.status(TaskState::Canceled, None))
    }
}

fn once(event: StreamResponse) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
    stream::once(async move { Ok(event) }).boxed()
}

/// An event after which the task takes no more: a final state, or one that waits for input.
fn is_final(event: &StreamResponse) -> bool {
    matches!(event, StreamResponse::StatusUpdate(u)
        if u.status.state.is_terminal() || u.status.state == TaskState::InputRequired)
}
