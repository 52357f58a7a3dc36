//! [`Agent`], what answers a user message, and [`AgentExt`], its shortcuts.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;

use super::{AgentError, Event, RunOptions};
use crate::Budget;
use crate::context::{Invocation, Session};
use crate::message::Message;
use crate::util::BoxFuture;

/// Something that answers a user message, reporting its progress as [`Event`]s: it has a
/// name, a description and a way to run.
///
/// Object safe. [`LlmAgent`](crate::LlmAgent) is the model-driven implementation;
/// [`AgentExt::ask`] is the shortcut that runs an agent and returns its answer.
///
/// An agent of your own (a router, a fixed workflow, a remote service) implements three
/// methods and works wherever an agent does: with [`AgentExt::ask`], as another agent's tool
/// through [`tools::new_agent_tool`](crate::tools::new_agent_tool), behind the CLI or a server.
///
/// ```
/// use futures::stream::{self, BoxStream};
/// use tinyagent::{Agent, AgentError, AgentExt, Event, Invocation, Session, Usage};
///
/// /// Answers with the message in capitals, without a model.
/// struct Shout;
///
/// impl Agent for Shout {
///     fn name(&self) -> &str { "shout" }
///     fn description(&self) -> &str { "Repeats the message in capitals" }
///     fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
///         let answer = inv.message().text().to_uppercase();
///         inv.session().append([inv.message().clone(), tinyagent::Message::assistant(answer.clone())]);
///         Box::pin(stream::iter([Ok(Event::Finished { answer, usage: Usage::default(), steps: 0 })]))
///     }
/// }
///
/// # tokio_test::block_on(async {
/// let session = Session::new();
/// assert_eq!(Shout.ask(&session, "hello").await.unwrap(), "HELLO");
/// assert_eq!(session.len(), 2);
/// // The same agent as a tool another agent can call.
/// let tool = tinyagent::tools::new_agent_tool(Shout);
/// assert_eq!(tool.name(), "shout");
/// # });
/// ```
pub trait Agent: Send + Sync {
    /// The agent's name (also its tool name when it becomes a tool).
    fn name(&self) -> &str;

    /// What the agent does (its tool description when it becomes a tool).
    fn description(&self) -> &str;

    /// Runs one invocation. The stream ends after [`Event::Finished`] or an error; dropping it
    /// cancels the run, including tools still running.
    ///
    /// The stream is `'static`: it owns what it needs (an agent is a cheap handle to shared
    /// configuration), so it can be returned from a web handler, stored, or moved into a task
    /// without keeping the agent borrowed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use futures::StreamExt;
    /// use tinyagent::{Agent, Event, Invocation, LlmAgent, Session};
    /// use tinyagent::testing::{ScriptedModel, reply};
    ///
    /// fn events(question: &str) -> futures::stream::BoxStream<'static, Result<Event, tinyagent::AgentError>> {
    ///     let model = ScriptedModel::new([
    ///         reply::tool_call("call_1", "add", r#"{"a": 7, "b": 8}"#),
    ///         reply::text("7 + 8 = 15"),
    ///     ]);
    ///     let add = tinyagent::tools::new_tool(
    ///         "add",
    ///         "Adds two numbers",
    ///         serde_json::json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
    ///         |_ctx, input: String| async move {
    ///             let v: serde_json::Value = serde_json::from_str(&input)?;
    ///             Ok::<_, tinyagent::ToolError>((v["a"].as_f64().unwrap_or(0.0) + v["b"].as_f64().unwrap_or(0.0)).to_string())
    ///         },
    ///     );
    ///     let agent = LlmAgent::builder("calc").model(model).tool(add).build().unwrap();
    ///     // The agent goes out of scope here; its stream lives on.
    ///     agent.run(Invocation::new(Session::new(), question))
    /// }
    ///
    /// # tokio_test::block_on(async {
    /// let mut lines = Vec::new();
    /// let mut stream = events("7 + 8?");
    /// while let Some(event) = stream.next().await {
    ///     match event.unwrap() {
    ///         Event::ToolCallStarted { call } => lines.push(format!("→ {} {}", call.name, call.arguments)),
    ///         Event::ToolCallFinished { result, .. } => lines.push(format!("← {}", result.content)),
    ///         Event::Finished { answer, .. } => lines.push(answer),
    ///         _ => {}
    ///     }
    /// }
    /// assert_eq!(lines, [r#"→ add {"a": 7, "b": 8}"#, "← 15", "7 + 8 = 15"]);
    /// # });
    /// ```
    fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>>;

    /// Checks before a run that `options` ([`Invocation::with_options`]) can apply: an agent
    /// that would have to drop one refuses it here with [`AgentError::Options`], so a caller
    /// (a server about to stream) can refuse the request before it starts. The run checks
    /// again. The default accepts everything: an agent of your own reads the options from its
    /// invocation.
    fn check_options(&self, options: &RunOptions) -> Result<(), AgentError> {
        let _ = options;
        Ok(())
    }

    /// The budget a run of this agent draws from when its invocation brings none
    /// ([`Invocation::with_budget`]), so that a caller giving the run a budget of its own (a
    /// server capping what a key may spend) can start from the agent's limits rather than
    /// drop them. The default: [`Budget::default`].
    ///
    /// ```
    /// use tinyagent::model::Cost;
    /// use tinyagent::testing::ScriptedModel;
    /// use tinyagent::{Agent, Budget, LlmAgent};
    ///
    /// let budget = Budget::default().max_cost(Cost::from_usd(0.5));
    /// let agent = LlmAgent::builder("a").model(ScriptedModel::default()).budget(budget).build().unwrap();
    /// assert_eq!(agent.budget(), budget);
    /// ```
    fn budget(&self) -> Budget {
        Budget::default()
    }
}

impl<A: Agent + ?Sized> Agent for Arc<A> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn budget(&self) -> Budget {
        (**self).budget()
    }

    fn check_options(&self, options: &RunOptions) -> Result<(), AgentError> {
        (**self).check_options(options)
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
        (**self).run(inv)
    }
}

impl<A: Agent + ?Sized> Agent for Box<A> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn budget(&self) -> Budget {
        (**self).budget()
    }

    fn check_options(&self, options: &RunOptions) -> Result<(), AgentError> {
        (**self).check_options(options)
    }

    fn description(&self) -> &str {
        (**self).description()
    }

    fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
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
    /// let model = Arc::new(ScriptedModel::new([reply::text("Sunny in Beijing today, 22.5°C.")]));
    /// let agent = LlmAgent::builder("smart-assistant").model(model).build().unwrap();
    /// # tokio_test::block_on(async {
    /// let answer = agent.ask(&Session::new(), "What's the weather in Beijing?").await.unwrap();
    /// assert_eq!(answer, "Sunny in Beijing today, 22.5°C.");
    /// # });
    /// ```
    fn ask<'a>(
        &'a self,
        session: &Session,
        message: impl Into<Message>,
    ) -> BoxFuture<'a, Result<String, AgentError>> {
        let inv = Invocation::new(session.clone(), message);
        Box::pin(answer(self.name(), self.run(inv)))
    }
}

/// The answer at the end of a run's `events`: [`AgentError::Paused`] when the run paused,
/// [`AgentError::NoAnswer`] when it ended without one.
pub(crate) async fn answer(
    agent: &str,
    mut events: BoxStream<'static, Result<Event, AgentError>>,
) -> Result<String, AgentError> {
    while let Some(event) = events.next().await {
        match event? {
            Event::Finished { answer, .. } => return Ok(answer),
            Event::Paused { pending, .. } => {
                return Err(AgentError::Paused {
                    agent: agent.to_owned(),
                    pending,
                });
            }
            _ => {}
        }
    }
    Err(AgentError::NoAnswer {
        agent: agent.to_owned(),
    })
}

impl<A: Agent + ?Sized> AgentExt for A {}
