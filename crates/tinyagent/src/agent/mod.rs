//! Agents: the [`Agent`] trait, the model-driven [`LlmAgent`] and its loop, [`Invocation`]s
//! and the [`Event`]s a run reports.

mod agent_tool;
mod builder;
mod error;
mod events;
mod run;

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

pub use crate::context::Invocation;
pub use agent_tool::{
    AgentTool, AgentToolInput, DEFAULT_MAX_AGENT_DEPTH, MessageHandler, agent_tool_schema,
    new_agent_tool, new_agent_tool_fn, parse_agent_message,
};
pub use builder::{
    DEFAULT_MAX_CONCURRENT_TOOL_CALLS, DEFAULT_MAX_STEPS, DEFAULT_MAX_TOOL_CALLS_PER_STEP,
    LlmAgent, LlmAgentBuilder,
};
pub use error::{AgentError, ConfigProblem, ToolSource};
pub use events::Event;

use crate::context::Session;
use crate::message::Message;
use crate::util::BoxFuture;

/// Something that answers a user message, reporting its progress as [`Event`]s: the seed's
/// `Agent` interface (`Name`, `Description`, `Run`).
///
/// Object safe. [`LlmAgent`] is the model-driven implementation; [`AgentExt::ask`] is the
/// shortcut that runs an agent and returns its answer.
pub trait Agent: Send + Sync {
    /// The agent's name (also its tool name when it becomes a tool).
    fn name(&self) -> &str;

    /// What the agent does (its tool description when it becomes a tool).
    fn description(&self) -> &str;

    /// Runs one invocation. The stream ends after [`Event::Finished`] or an error; dropping it
    /// cancels the run, including tools still running.
    fn run(&self, inv: Invocation) -> BoxStream<'_, Result<Event, AgentError>>;
}

impl<A: Agent + ?Sized> Agent for Arc<A> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn run(&self, inv: Invocation) -> BoxStream<'_, Result<Event, AgentError>> {
        (**self).run(inv)
    }
}

impl<A: Agent + ?Sized> Agent for Box<A> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn run(&self, inv: Invocation) -> BoxStream<'_, Result<Event, AgentError>> {
        (**self).run(inv)
    }
}

/// Shortcuts on every [`Agent`].
pub trait AgentExt: Agent {
    /// Runs the agent on a user message in `session` and returns its final answer.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{AgentExt, LlmAgent, Session};
    /// use tinyagent::testing::{ScriptedModel, reply};
    ///
    /// let model = Arc::new(ScriptedModel::new([reply::text("北京今天晴，22.5°C。")]));
    /// let agent = LlmAgent::builder("smart-assistant").model(model).build().unwrap();
    /// # tokio_test::block_on(async {
    /// let answer = agent.ask(&Session::new(), "北京天气怎么样？").await.unwrap();
    /// assert_eq!(answer, "北京今天晴，22.5°C。");
    /// # });
    /// ```
    fn ask<'a>(
        &'a self,
        session: &Session,
        message: impl Into<Message>,
    ) -> BoxFuture<'a, Result<String, AgentError>> {
        let inv = Invocation::new(session.clone(), message);
        Box::pin(async move {
            let mut events = self.run(inv);
            while let Some(event) = events.next().await {
                if let Event::Finished { answer, .. } = event? {
                    return Ok(answer);
                }
            }
            Err(AgentError::NoAnswer {
                agent: self.name().to_owned(),
            })
        })
    }
}

impl<A: Agent + ?Sized> AgentExt for A {}
