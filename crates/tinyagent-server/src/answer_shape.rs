//! A chat completion's run when the request asks its answer in a shape (`response_format`):
//! the answer is checked against the schema when the run ends; one that does not match is
//! shown to the model once, with what is wrong, and a second miss is an error. Text deltas
//! are held back, so the client gets the checked answer whole.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::{self, BoxStream};
use tinyagent::agent::RunOptions;
use tinyagent::{Agent, AgentError, Event, Invocation, Message, Session, Usage};

use crate::options::AnswerShape;

type Events = BoxStream<'static, Result<Event, AgentError>>;

/// The run of `message` in `session` with `options`; with a `shape`, its answer is checked.
pub(crate) fn run(
    agent: Arc<dyn Agent>,
    session: Session,
    message: Message,
    options: RunOptions,
    shape: Option<AnswerShape>,
) -> Events {
    let events = agent.run(Invocation::new(session.clone(), message).with_options(options.clone()));
    let Some(shape) = shape else {
        return events;
    };
    let checked = Checked {
        agent,
        session,
        options,
        shape,
        events,
        retried: false,
        usage: Usage::default(),
        steps: 0,
    };
    stream::unfold(Some(checked), |state| async move {
        let mut state = state?;
        let item = state.next().await?;
        let ended = matches!(item, Ok(Event::Finished { .. }) | Err(_));
        Some((item, (!ended).then_some(state)))
    })
    .boxed()
}

/// A run whose answer is checked against a shape.
struct Checked {
    agent: Arc<dyn Agent>,
    session: Session,
    options: RunOptions,
    shape: AnswerShape,
    events: Events,
    /// Whether the answer was already shown to the model once.
    retried: bool,
    /// What the runs before this one used.
    usage: Usage,
    steps: usize,
}

impl Checked {
    async fn next(&mut self) -> Option<Result<Event, AgentError>> {
        loop {
            match self.events.next().await? {
                Ok(Event::TextDelta(_)) => {}
                Ok(Event::Finished {
                    answer,
                    usage,
                    steps,
                }) => {
                    let usage = self.usage + usage;
                    let steps = self.steps + steps;
                    let problem = match self.shape.check(&answer) {
                        Ok(answer) => {
                            return Some(Ok(Event::Finished {
                                answer,
                                usage,
                                steps,
                            }));
                        }
                        Err(problem) => problem,
                    };
                    if self.retried {
                        return Some(Err(AgentError::InvalidAnswer {
                            agent: self.agent.name().to_owned(),
                            format: self.shape.format.name.clone(),
                            problem,
                        }));
                    }
                    self.retried = true;
                    (self.usage, self.steps) = (usage, steps);
                    let feedback = self.shape.format.feedback(&problem);
                    let inv = Invocation::new(self.session.clone(), feedback)
                        .with_options(self.options.clone());
                    self.events = self.agent.run(inv);
                }
                other => return Some(other),
            }
        }
    }
}
