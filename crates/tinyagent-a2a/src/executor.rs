//! The [`AgentExecutor`] that runs a tinyagent agent for A2A tasks: each A2A context is a
//! session of the runner's store, so a conversation goes on across tasks, in this process or
//! another one sharing the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use a2a::{A2AError, StreamResponse, TaskState};
use a2a_server::{AgentExecutor, ExecutorContext};
use futures::StreamExt;
use futures::stream::{self, BoxStream};
use tinyagent::AgentError;
use tinyagent::agent::SessionRunner;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::text::message_text;
use crate::turn::Turn;

/// Makes the runner of one task (a view of the store for the caller, say).
pub(crate) type RunnerFn = Arc<dyn Fn() -> SessionRunner + Send + Sync>;

/// Says what went wrong in a run, for the remote caller.
pub(crate) type DescribeFn = Arc<dyn Fn(&AgentError) -> String + Send + Sync>;

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

impl AgentExecutor for RunExecutor {
    fn execute(
        &self,
        ctx: ExecutorContext,
    ) -> BoxStream<'static, Result<StreamResponse, A2AError>> {
        let turn = Turn::new(ctx.task_id.clone(), ctx.context_id.clone());
        let text = match ctx.message.as_ref().map(message_text) {
            Some(Ok(text)) => text,
            Some(Err(err)) => {
                return once(turn.status(TaskState::Rejected, Some(err.to_string())));
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
        let runner = (self.runner)();
        let describe = self.describe.clone();
        let deadline = self
            .run_timeout
            .map(|d| (d, tokio::time::Instant::now() + d));
        let events = runner.run(ctx.context_id.clone(), text);
        let working = turn.status(TaskState::Working, None);
        let run = stream::unfold(
            (events, turn, false, Some((permit, running))),
            move |(mut events, mut turn, done, held)| {
                let token = token.clone();
                let describe = describe.clone();
                async move {
                    if done {
                        return None;
                    }
                    let sleep = async {
                        match deadline {
                            Some((_, at)) => tokio::time::sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    };
                    let next = tokio::select! {
                        () = token.cancelled() => return None,
                        () = sleep => {
                            let (limit, _) = deadline.expect("a deadline passed");
                            let text = format!(
                                "the run took longer than this server allows ({} s) and was stopped",
                                limit.as_secs()
                            );
                            return Some((vec![turn.status(TaskState::Failed, Some(text))], (events, turn, true, None)));
                        }
                        next = events.next() => next,
                    };
                    let out = match next {
                        Some(Ok(event)) => {
                            let out = turn.event(event);
                            let over = out.iter().any(is_final);
                            return Some((out, (events, turn, over, held)));
                        }
                        Some(Err(err)) => vec![turn.status(TaskState::Failed, Some(describe(&err)))],
                        None => vec![turn.status(
                            TaskState::Failed,
                            Some("the run ended without an answer".into()),
                        )],
                    };
                    Some((out, (events, turn, true, None)))
                }
            },
        )
        .flat_map(stream::iter);
        stream::once(async move { working })
            .chain(run)
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
