//! Agents as tools: [`new_agent_tool`] (an [`Agent`] becomes a tool). It takes the input of
//! every agent-style tool, the agent-tool schema `{"message": string}`
//! ([`agent_tool_schema`](crate::tools::agent_tool_schema)).

use std::fmt;
use std::sync::Arc;

use futures::StreamExt;

use super::{Agent, AgentError, Event};
use crate::context::{Invocation, Session, ToolContext};
use crate::error::{ToolError, ToolErrorKind};
use crate::message::Role;
use crate::model::ModelErrorKind;
use crate::tools::{
    ToolInput, ToolOutput, agent_tool_schema, agent_tool_schema_described, validate_tool_name,
};
use crate::util::BoxFuture;
use crate::{Tool, ToolHints};
use serde_json::Value;
use tinyagent_tools::message_tool::message_of;

/// How deeply agents may call agents as tools unless said otherwise: see
/// [`AgentTool::max_depth`].
pub const DEFAULT_MAX_AGENT_DEPTH: usize = 4;

/// An [`Agent`] used as a tool; made by [`new_agent_tool`].
///
/// Its name and description are the agent's; its schema is [`agent_tool_schema`]
/// (`{"message": string}`, required, its description English unless set with
/// [`message_description`](Self::message_description)); input that is not JSON is taken as the message. Each call
/// runs the agent in a fresh invocation (a new session, the chain of calling agents extended)
/// and returns the text of all its assistant messages, concatenated. An agent's failure is the
/// tool's failure, which the calling agent's model reads.
///
/// Nesting is bounded: a call that would run an agent more than
/// [`max_depth`](Self::max_depth) agents deep (default [`DEFAULT_MAX_AGENT_DEPTH`]) is
/// refused with a [`ToolErrorKind::Denied`](crate::ToolErrorKind::Denied) error, so agents that
/// call each other cannot recurse without end.
pub struct AgentTool<A> {
    agent: A,
    schema: Value,
    max_depth: usize,
}

impl<A: Agent> fmt::Debug for AgentTool<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("agent", &self.agent.name())
            .field("max_depth", &self.max_depth)
            .finish_non_exhaustive()
    }
}

impl<A: Agent> AgentTool<A> {
    /// The agent as a tool; fails when the agent's name is not a valid tool name.
    pub fn try_new(agent: A) -> Result<Self, ToolError> {
        validate_tool_name(agent.name())?;
        Ok(Self {
            agent,
            schema: agent_tool_schema(),
            max_depth: DEFAULT_MAX_AGENT_DEPTH,
        })
    }

    /// Sets the description of the tool's `message` parameter, which the calling model reads
    /// (default [`DEFAULT_AGENT_MESSAGE_DESCRIPTION`](crate::tools::DEFAULT_AGENT_MESSAGE_DESCRIPTION)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{LlmAgent, Tool, tools::AgentTool};
    /// use tinyagent::testing::ScriptedModel;
    ///
    /// let translator = LlmAgent::builder("translator")
    ///     .model(Arc::new(ScriptedModel::new([])))
    ///     .build()
    ///     .unwrap();
    /// let tool = AgentTool::try_new(translator)
    ///     .unwrap()
    ///     .message_description("The text to translate, and into which language");
    /// assert_eq!(
    ///     tool.input_schema()["properties"]["message"]["description"],
    ///     "The text to translate, and into which language"
    /// );
    /// ```
    #[must_use]
    pub fn message_description(mut self, description: impl AsRef<str>) -> Self {
        self.schema = agent_tool_schema_described(description.as_ref());
        self
    }

    /// Sets how many agents deep a call of this tool may run the agent, counting the agents
    /// above it: 1 allows it directly under a top-level agent, 0 only outside any agent.
    #[must_use]
    pub fn max_depth(mut self, max_depth: usize) -> Self {
        self.max_depth = max_depth;
        self
    }

    /// The agent inside.
    pub fn agent(&self) -> &A {
        &self.agent
    }
}

impl<A: Agent> Tool for AgentTool<A> {
    fn name(&self) -> &str {
        self.agent.name()
    }

    fn description(&self) -> &str {
        self.agent.description()
    }

    fn input_schema(&self) -> &Value {
        &self.schema
    }

    /// An agent takes plain text as its message too; what running it may do is unknown.
    fn hints(&self) -> ToolHints {
        ToolHints::default().plain_text(true)
    }

    fn call<'a>(
        &'a self,
        ctx: &'a ToolContext,
        input: ToolInput,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let name = self.agent.name();
            let message = message_of(&input)?;
            let parent = ctx.invocation();
            let mut chain: Vec<&str> = parent
                .map(|p| p.chain().iter().map(|a| &**a).chain(p.agent()).collect())
                .unwrap_or_default();
            // The sub-agent's invocation sits below every agent of the chain.
            let depth = chain.len();
            if depth > self.max_depth {
                chain.push(name);
                return Err(ToolError::denied(format!(
                    "agent {name:?} was not run: the call chain {} would nest agents {depth} deep, \
                     and at most {} are allowed; answer with what you have",
                    chain.join(" → "),
                    self.max_depth
                )));
            }
            let inv = match parent {
                Some(parent) => parent.child(message),
                None => Invocation::new(Session::new(), message),
            };
            // The sub-agent's tools report to this call (progress of the agent tool) and
            // reach the client this call runs under.
            let inv = match ctx.host() {
                Some(host) => inv.with_host(Arc::clone(host)),
                None => inv,
            };
            let mut events = self.agent.run(inv);
            let mut text = String::new();
            let mut answer = None;
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Message(m)) if m.role == Role::Assistant => text.push_str(&m.text()),
                    Ok(Event::Finished { answer: a, .. }) => answer = Some(a),
                    Ok(Event::Paused { pending, .. }) => {
                        let err = AgentError::Paused {
                            agent: self.agent.name().to_owned(),
                            pending,
                        };
                        return Err(ToolError::failed(format!(
                            "{err} (a run inside an agent called as a tool cannot pause: give \
                             the tools that wait for approval to the outer agent)"
                        ))
                        .retryable(false));
                    }
                    Ok(_) => {}
                    Err(err) => return Err(sub_agent_error(name, err)),
                }
            }
            if text.is_empty() {
                text = answer.unwrap_or_default();
            }
            Ok(ToolOutput::text(text))
        })
    }
}

/// The tool error for a sub-agent's failure, keeping what a retry needs to know: a model
/// that was unavailable, rate limited or timed out is worth another try.
fn sub_agent_error(name: &str, err: AgentError) -> ToolError {
    let message = format!("agent {name:?} failed: {err}");
    let error = match &err {
        AgentError::Model(model) => {
            let kind = match model.kind() {
                ModelErrorKind::RateLimited => ToolErrorKind::RateLimited,
                ModelErrorKind::TimedOut => ToolErrorKind::TimedOut,
                ModelErrorKind::Unavailable => ToolErrorKind::Unavailable,
                ModelErrorKind::Cancelled => ToolErrorKind::Cancelled,
                _ => ToolErrorKind::Failed,
            };
            ToolError::new(kind, message).retryable(model.is_retryable())
        }
        _ => ToolError::failed(message),
    };
    error.with_source(err)
}

/// Makes an agent a tool; see [`AgentTool`].
///
/// # Panics
///
/// If the agent's name is not a valid tool name; see [`validate_tool_name`] and
/// [`AgentTool::try_new`].
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{AgentExt, LlmAgent, Session, tools};
/// use tinyagent::testing::{ScriptedModel, reply};
///
/// // One scripted model serves both agents, in the order they ask.
/// let model = Arc::new(ScriptedModel::new([
///     reply::tool_call("c1", "translator", r#"{"message": "Bonjour le monde"}"#), // supervisor
///     reply::text("Hello, World!"),                                              // translator
///     reply::text("The translation: Hello, World!"),                             // supervisor
/// ]));
/// let translator = LlmAgent::builder("translator")
///     .description("A translation expert that translates between French and English")
///     .model(model.clone())
///     .build()
///     .unwrap();
/// let supervisor = LlmAgent::builder("supervisor")
///     .model(model.clone())
///     .tool(tools::new_agent_tool(translator))
///     .build()
///     .unwrap();
/// # tokio_test::block_on(async {
/// let question = "Translate \"Bonjour le monde\" into English";
/// let answer = supervisor.ask(&Session::new(), question).await.unwrap();
/// assert_eq!(answer, "The translation: Hello, World!");
/// # });
/// ```
#[track_caller]
pub fn new_agent_tool<A: Agent + 'static>(agent: A) -> Arc<dyn Tool> {
    match AgentTool::try_new(agent) {
        Ok(tool) => Arc::new(tool),
        Err(err) => panic!("tools::new_agent_tool: {err}"),
    }
}
