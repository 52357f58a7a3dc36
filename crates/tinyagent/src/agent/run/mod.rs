//! The loop of an [`LlmAgent`](super::LlmAgent), as its states: a run [starts](Run::start)
//! (budget, tools, the history with its stored summary, a resumed step or the user's message),
//! takes [steps](Run::step) (compaction, a model call, the tool calls, their events) until the
//! model answers, and then [finishes](Run::finish), or [pauses](Run::pause) while calls wait
//! for a decision. [`drive`] reads as that sequence; [`RunStream`] hands its events out as it
//! goes.

mod end;
mod resume;
mod start;
mod state;
mod step;

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::{BoxStream, Stream};
use tracing::Instrument;

use super::config::Config;
use super::queue::Queue;
use super::{AgentError, Event};
use crate::context::Invocation;
use crate::model::ResponseFormat;
use crate::telemetry;
use crate::util::BoxFuture;
use resume::Resumed;
use start::Started;
use state::{Run, StepEnd};

/// The event stream of a run: drains the queue, polling the driver when it is empty.
struct RunStream {
    queue: Queue,
    driver: Option<BoxFuture<'static, Result<(), AgentError>>>,
    error: Option<AgentError>,
}

impl Stream for RunStream {
    type Item = Result<Event, AgentError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(event) = self.queue.pop() {
            return Poll::Ready(Some(Ok(event)));
        }
        if let Some(driver) = self.driver.as_mut() {
            let done = driver.as_mut().poll(cx);
            if let Poll::Ready(result) = done {
                self.driver = None;
                self.error = result.err();
            }
            if let Some(event) = self.queue.pop() {
                return Poll::Ready(Some(Ok(event)));
            }
            if self.driver.is_some() {
                return Poll::Pending;
            }
        }
        Poll::Ready(self.error.take().map(Err))
    }
}

pub(super) fn run(
    config: Arc<Config>,
    inv: Invocation,
) -> BoxStream<'static, Result<Event, AgentError>> {
    let format = config.response_format.clone();
    run_with_format(config, inv, format)
}

/// [`run`], the final answer asked in `format` (which replaces the agent's own, if any).
pub(super) fn run_with_format(
    config: Arc<Config>,
    inv: Invocation,
    format: Option<ResponseFormat>,
) -> BoxStream<'static, Result<Event, AgentError>> {
    let queue = Queue::default();
    let span = telemetry::agent_span(&config.name, inv.session().id(), inv.id());
    let out = queue.clone();
    let run = span.clone();
    let driver = Box::pin(
        async move {
            let unfinished = telemetry::Unfinished::new(&run);
            let result = drive(&config, inv, format, out).await;
            unfinished.done();
            if let Err(err) = &result {
                telemetry::fail(&run, err.error_type());
            }
            result
        }
        .instrument(span),
    );
    Box::pin(RunStream {
        queue,
        driver: Some(driver),
        error: None,
    })
}

/// One run, from start to end: its events go to `out`; it ends answered, paused, or with an
/// error (the step limit among them).
async fn drive(
    config: &Config,
    inv: Invocation,
    response_format: Option<ResponseFormat>,
    out: Queue,
) -> Result<(), AgentError> {
    let Started {
        mut run,
        resumed,
        first_step,
    } = Run::start(config, inv, response_format, out).await?;
    if let Some((paused, decisions)) = resumed {
        // Boxed: only a resumed run needs it, and a run's future is as large as its largest step.
        match Box::pin(run.resume(paused, &decisions)).await? {
            Resumed::Ran => {}
            Resumed::Waiting(pending) => {
                run.still_paused(pending, first_step - 1);
                return Ok(());
            }
        }
    }
    for step in first_step..=config.max_steps {
        match run.step(step).await? {
            StepEnd::ToolsRan => {}
            StepEnd::Answered(message) => {
                run.finish(step, message);
                return Ok(());
            }
            StepEnd::Paused(paused) => {
                run.pause(&paused);
                return Ok(());
            }
            // No model call would read these calls' results: they are not run.
            StepEnd::CallsAtStepLimit => break,
        }
    }
    Err(AgentError::StepLimit {
        agent: config.name.to_string(),
        max_steps: config.max_steps,
    })
}
