//! [`LlmAgent`] and its builder, [`LlmAgentBuilder`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;

use super::config::{Config, ResolvedEntries, Settings, ToolEntry};
use super::{Agent, AgentError, ConfigProblem, Event};
use crate::Tool;
use crate::budget::Budget;
use crate::context::Invocation;
use crate::model::{Model, ResponseFormat, ToolChoice};
use crate::tools::ToolResolver;
use crate::tools::middleware::ToolMiddleware;

/// An agent driven by a [`Model`]: it asks the model, runs the tool calls it gets back, feeds
/// the results in, and loops until the model answers in text.
///
/// Built with [`LlmAgent::builder`]. Cheap to clone (clones share the configuration).
///
/// # The loop
///
/// 1. The tools of the invocation are fixed: the static tools plus what every
///    [`ToolResolver`] returns (a clash of names is an [`AgentError::ToolConflict`]); each is
///    wrapped in the agent's default middleware.
/// 2. The model gets the instruction, the session's history plus the user message, and the
///    tool definitions.
/// 3. If its reply has no tool calls, its text is the answer ([`Event::Finished`]) and the
///    run's messages are appended to the session.
/// 4. Otherwise the calls run — read-only tools at once (up to
///    [`max_concurrent_tool_calls`](LlmAgentBuilder::max_concurrent_tool_calls)), any other
///    tool alone and in the model's order — and their results are appended in the order the
///    model asked for them. Every failure is a result the model reads (`is_error`): a tool's
///    error, arguments that break the schema (each violation by JSON pointer), a tool not
///    offered in this invocation (never run; the message lists the offered names), a panic,
///    a timeout, a call over the per-step limit. Then back to 2.
/// 5. After [`max_steps`](LlmAgentBuilder::max_steps) model calls without an answer the run
///    fails with [`AgentError::StepLimit`], unless
///    [`answer_at_step_limit`](LlmAgentBuilder::answer_at_step_limit) has the last call answer
///    without tools. A model error ends the run too.
///
/// Every invocation tree (the run and the agents it calls as tools, at any depth) draws from
/// one [`Budget`] of model calls, tool calls, tokens and wall time, set on the agent that
/// starts the tree ([`budget`](LlmAgentBuilder::budget)); when it runs out the run fails with
/// [`AgentError::BudgetExhausted`]. Each tool result (or error) the model reads is cut to
/// [`max_tool_output`](LlmAgentBuilder::max_tool_output) characters.
///
/// Tools run inside the run's own future (no tasks are spawned): dropping the event stream or
/// the [`ask`](crate::AgentExt::ask) future cancels the tools still running.
///
/// ```
/// use std::sync::Arc;
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent::testing::{ScriptedModel, reply};
///
/// let model = Arc::new(ScriptedModel::new([
///     reply::tool_call("call_1", "get_weather", r#"{"city": "北京"}"#), // Beijing
///     reply::text("Sunny in Beijing today, 22.5°C, 45% humidity."),
/// ]));
/// let agent = LlmAgent::builder("smart-assistant")
///     .model(model.clone())
///     .instruction("You are a helpful assistant.")
///     .tools(tinyagent_demo::all_tools())
///     .build()
///     .unwrap();
/// # tokio_test::block_on(async {
/// let answer = agent.ask(&Session::new(), "What's the weather in Beijing?").await.unwrap();
/// assert_eq!(answer, "Sunny in Beijing today, 22.5°C, 45% humidity.");
/// // The second request carried the tool's result.
/// let tool_message = model.requests()[1].messages.last().cloned().unwrap();
/// assert!(tool_message.tool_results().next().unwrap().content.contains("\"temperature\":22.5"));
/// # });
/// ```
#[derive(Clone)]
pub struct LlmAgent {
    pub(crate) config: Arc<Config>,
}

impl fmt::Debug for LlmAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        f.debug_struct("LlmAgent")
            .field("name", &c.name)
            .field("model", &c.model.name())
            .field(
                "tools",
                &c.static_tools
                    .iter()
                    .map(|e| e.tool.name())
                    .collect::<Vec<_>>(),
            )
            .field("resolvers", &c.resolvers.len())
            .field("max_steps", &c.max_steps)
            .field("answer_at_step_limit", &c.answer_at_step_limit)
            .finish_non_exhaustive()
    }
}

impl LlmAgent {
    /// Starts building an agent with this name.
    pub fn builder(name: impl Into<String>) -> LlmAgentBuilder {
        LlmAgentBuilder {
            name: name.into(),
            model: None,
            tools: Vec::new(),
            settings: Settings::default(),
        }
    }

    /// The agent's instruction.
    pub fn instruction(&self) -> &str {
        &self.config.instruction
    }

    /// The agent's model.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.config.model
    }

    /// The agent's static tools, wrapped in its middleware.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.config.static_tools.iter().map(|e| &e.tool)
    }
}

impl Agent for LlmAgent {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn description(&self) -> &str {
        &self.config.description
    }

    fn run(&self, inv: Invocation) -> BoxStream<'static, Result<Event, AgentError>> {
        super::run::run(self.config.clone(), inv)
    }

    fn budget(&self) -> Budget {
        self.config.budget
    }

    /// Refuses a sampling option the agent's model does not take, and a tool choice naming a
    /// tool the agent lacks (when its tools are fixed; resolved tools are checked by the run).
    fn check_options(&self, options: &super::RunOptions) -> Result<(), AgentError> {
        options
            .check(&*self.config.model)
            .map_err(|(option, problem)| {
                AgentError::options(&self.config.name, option.name(), problem)
            })?;
        if let Some(ToolChoice::Tool(name)) = &options.tool_choice {
            let known = self.tools().any(|t| t.name() == name);
            if !known && self.config.resolvers.is_empty() {
                return Err(AgentError::options(
                    &self.config.name,
                    "tool_choice",
                    format!("tool_choice names the tool {name:?}, which this agent does not have"),
                ));
            }
        }
        Ok(())
    }
}

/// Builds an [`LlmAgent`]; made by [`LlmAgent::builder`].
#[must_use]
pub struct LlmAgentBuilder {
    name: String,
    model: Option<Arc<dyn Model>>,
    tools: Vec<Arc<dyn Tool>>,
    settings: Settings,
}

impl fmt::Debug for LlmAgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmAgentBuilder")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl LlmAgentBuilder {
    /// What the agent does; the description of its tool when it becomes one.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.settings.description = description.into();
        self
    }

    /// The model (required). Any [`Model`], including an `Arc<dyn Model>` or an `Arc` of a
    /// concrete model kept for inspection.
    pub fn model(mut self, model: impl Model + 'static) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The instruction sent with every request.
    pub fn instruction(mut self, instruction: impl Into<String>) -> Self {
        self.settings.instruction = instruction.into();
        self
    }

    /// Adds one static tool: any [`Tool`] as it was made (no `Arc::new` needed), or an
    /// `Arc<dyn Tool>`; see [`IntoTool`](crate::tools::IntoTool).
    pub fn tool(mut self, tool: impl crate::tools::IntoTool) -> Self {
        self.tools.push(tool.into_tool());
        self
    }

    /// Adds static tools, offered in every invocation.
    pub fn tools<T: crate::tools::IntoTool>(mut self, tools: impl IntoIterator<Item = T>) -> Self {
        self.tools.extend(tools.into_iter().map(T::into_tool));
        self
    }

    /// Adds a resolver of per-invocation tools; may be called more than once.
    pub fn tool_resolver(mut self, resolver: impl ToolResolver + 'static) -> Self {
        self.settings.resolvers.push(Arc::new(resolver));
        self
    }

    /// Adds default middleware, applied to every tool the agent runs (static or resolved); the
    /// first listed is the outermost, as in [`wrap_tool`].
    ///
    /// [`wrap_tool`]: crate::tools::wrap_tool
    pub fn middleware(mut self, middleware: impl IntoIterator<Item = ToolMiddleware>) -> Self {
        self.settings.middleware.extend(middleware);
        self
    }

    /// The most model calls in one run (default [`DEFAULT_MAX_STEPS`]; at least 1).
    ///
    /// [`DEFAULT_MAX_STEPS`]: crate::agent::DEFAULT_MAX_STEPS
    pub fn max_steps(mut self, max_steps: usize) -> Self {
        self.settings.max_steps = max_steps;
        self
    }

    /// Whether the last allowed model call must answer (default `false`): with `true`, the
    /// call at [`max_steps`](Self::max_steps) is made with [`ToolChoice::None`], so the model
    /// answers from what the tools have given so far instead of the run failing with
    /// [`AgentError::StepLimit`] and losing the work. A model that still calls tools then
    /// gets the error as before.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{AgentExt, LlmAgent, Session, tools};
    /// use tinyagent::testing::{ScriptedModel, reply};
    ///
    /// let model = Arc::new(ScriptedModel::new([
    ///     reply::tool_call("c1", "search", r#"{"q": "rust"}"#),
    ///     reply::text("Rust is a language; that is what I found in one search."),
    /// ]));
    /// let search = tools::new_tool("search", "searches", serde_json::json!({"type": "object"}),
    ///     |_ctx, _input: String| async move { Ok::<_, tinyagent::ToolError>("Rust: a language".to_owned()) });
    /// let agent = LlmAgent::builder("researcher")
    ///     .model(model.clone())
    ///     .tool(search)
    ///     .max_steps(2)
    ///     .answer_at_step_limit(true)
    ///     .build()
    ///     .unwrap();
    /// # tokio_test::block_on(async {
    /// let answer = agent.ask(&Session::new(), "What is Rust?").await.unwrap();
    /// assert!(answer.starts_with("Rust is a language"));
    /// // The second (last) call was told not to call tools.
    /// assert_eq!(model.requests()[1].tool_choice, Some(tinyagent::model::ToolChoice::None));
    /// # });
    /// ```
    ///
    /// [`ToolChoice::None`]: crate::model::ToolChoice::None
    pub fn answer_at_step_limit(mut self, answer: bool) -> Self {
        self.settings.answer_at_step_limit = answer;
        self
    }

    /// The prices each model call is costed at (default [`PriceTable::default`]: list prices
    /// of common OpenAI, Anthropic and Google models). A call's cost is in its
    /// [`Event::Usage`](crate::Event::Usage), the run's total in
    /// [`Event::Finished`](crate::Event::Finished), and the tree's in the shared budget, which
    /// [`Budget::max_cost`](crate::Budget::max_cost) can cap. A cost the provider reports
    /// itself is kept.
    ///
    /// [`PriceTable::default`]: crate::model::PriceTable::default
    pub fn prices(mut self, prices: crate::model::PriceTable) -> Self {
        self.settings.prices = prices;
        self
    }

    /// Keeps the history the model is sent within a token budget: older tool outputs trimmed
    /// first, then the oldest turns summarised (see [`ContextPolicy`]). Off by default: the
    /// whole history is sent. The session keeps every message either way.
    ///
    /// [`ContextPolicy`]: crate::agent::ContextPolicy
    pub fn context_policy(mut self, policy: crate::agent::ContextPolicy) -> Self {
        self.settings.context_policy = Some(policy);
        self
    }

    /// The most tool calls run per model step (default [`DEFAULT_MAX_TOOL_CALLS_PER_STEP`]);
    /// calls beyond it are answered with an error result and not run.
    ///
    /// [`DEFAULT_MAX_TOOL_CALLS_PER_STEP`]: crate::agent::DEFAULT_MAX_TOOL_CALLS_PER_STEP
    pub fn max_tool_calls_per_step(mut self, max: usize) -> Self {
        self.settings.max_tool_calls_per_step = max;
        self
    }

    /// The most tool calls running at once (default [`DEFAULT_MAX_CONCURRENT_TOOL_CALLS`];
    /// at least 1).
    ///
    /// [`DEFAULT_MAX_CONCURRENT_TOOL_CALLS`]: crate::agent::DEFAULT_MAX_CONCURRENT_TOOL_CALLS
    pub fn max_concurrent_tool_calls(mut self, max: usize) -> Self {
        self.settings.max_concurrent_tool_calls = max;
        self
    }

    /// Whether read-only tools of one step may run at once (default `true`). With `false`,
    /// every call runs alone, in the model's order.
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.settings.parallel_tool_calls = parallel;
        self
    }

    /// A deadline for each tool call; a call that misses it is answered with a timeout error
    /// and the model goes on. Needs a Tokio runtime with its timer.
    ///
    /// What is stopped: the tool's future is dropped, so an async tool stops at its next
    /// `.await` and whatever it awaited (an HTTP request, a sleep, a sub-agent) is cancelled.
    ///
    /// What is not: code that blocks the thread without awaiting (`std::thread::sleep`,
    /// synchronous I/O, a long computation) cannot be interrupted. In an ordinary async tool it
    /// also holds up the timeout itself and the other calls of the step until it returns. A
    /// tool that declares it blocks ([`ToolHints::blocking`](crate::ToolHints::blocking)) runs
    /// on Tokio's blocking thread pool instead (see
    /// [`SpawnBlockingLayer`](crate::tools::middleware::SpawnBlockingLayer)): the timeout then
    /// returns on time and the other calls go on, while the thread finishes the work in the
    /// background and its result is dropped. Work a tool hands to other threads or processes
    /// is never stopped by a timeout.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.settings.tool_timeout = Some(timeout);
        self
    }

    /// The sampling temperature sent to the model.
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.settings.temperature = Some(temperature);
        self
    }

    /// The token limit of one model step.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.settings.max_tokens = Some(max_tokens);
        self
    }

    /// Whether and which tool the model must call.
    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.settings.tool_choice = Some(tool_choice);
        self
    }

    /// Asks every final answer as JSON of `T`'s shape (the provider's structured output);
    /// [`LlmAgent::ask_as`] also checks and decodes it. The answer's text is the JSON.
    pub fn output_type<T: schemars::JsonSchema + 'static>(self) -> Self {
        self.response_format(ResponseFormat::of::<T>())
    }

    /// Asks every final answer in this JSON shape; see [`output_type`](Self::output_type).
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.settings.response_format = Some(format);
        self
    }

    /// What an invocation tree started by this agent may spend: model calls, tool calls,
    /// tokens and wall time, shared with every agent it calls as a tool (default
    /// [`Budget::default`]: 64 model calls, 256 tool calls, 2,000,000 tokens, 15 minutes;
    /// [`Budget::UNLIMITED`] for none). An agent running as another agent's tool draws from
    /// its caller's budget instead of its own.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use tinyagent::{AgentError, AgentExt, Budget, LlmAgent, Session, budget::BudgetResource};
    /// use tinyagent::testing::{ScriptedModel, reply};
    ///
    /// let model = Arc::new(ScriptedModel::new([
    ///     reply::tool_call("c1", "get_weather", r#"{"city": "北京"}"#), // Beijing
    ///     reply::tool_call("c2", "get_weather", r#"{"city": "上海"}"#), // Shanghai
    /// ]));
    /// let agent = LlmAgent::builder("assistant")
    ///     .model(model)
    ///     .tools(tinyagent_demo::all_tools())
    ///     .budget(Budget::default().max_model_calls(1))
    ///     .build()
    ///     .unwrap();
    /// # tokio_test::block_on(async {
    /// let err = agent.ask(&Session::new(), "What's the weather?").await.unwrap_err();
    /// assert!(matches!(
    ///     err,
    ///     AgentError::BudgetExhausted { resource: BudgetResource::ModelCalls, limit: 1, .. }
    /// ));
    /// # });
    /// ```
    pub fn budget(mut self, budget: Budget) -> Self {
        self.settings.budget = budget;
        self
    }

    /// The most characters of one tool result, or one tool error, that the model reads
    /// (default [`DEFAULT_MAX_TOOL_OUTPUT`]); longer ones keep their head and tail with a note
    /// of how much was left out (see [`OutputLimitLayer`]). `None` passes everything.
    ///
    /// [`DEFAULT_MAX_TOOL_OUTPUT`]: crate::agent::DEFAULT_MAX_TOOL_OUTPUT
    /// [`OutputLimitLayer`]: crate::tools::middleware::OutputLimitLayer
    pub fn max_tool_output(mut self, max_chars: impl Into<Option<usize>>) -> Self {
        self.settings.max_tool_output = max_chars.into();
        self
    }

    /// Builds the agent.
    ///
    /// Fails with [`AgentError::Config`], saying which [`ConfigProblem`]: without a model,
    /// with an empty name, with a zero step, per-step or concurrency limit, or when two static
    /// tools share a name.
    pub fn build(self) -> Result<LlmAgent, AgentError> {
        let config_error = |problem| AgentError::Config {
            agent: self.name.clone(),
            problem,
        };
        let Some(model) = self.model.clone() else {
            return Err(config_error(ConfigProblem::NoModel));
        };
        if self.name.is_empty() {
            return Err(config_error(ConfigProblem::EmptyName));
        }
        for (setting, value) in [
            ("max_steps", self.settings.max_steps),
            (
                "max_tool_calls_per_step",
                self.settings.max_tool_calls_per_step,
            ),
            (
                "max_concurrent_tool_calls",
                self.settings.max_concurrent_tool_calls,
            ),
        ] {
            if value == 0 {
                return Err(config_error(ConfigProblem::ZeroLimit { setting }));
            }
        }
        let mut entries: Vec<Arc<ToolEntry>> = Vec::with_capacity(self.tools.len());
        for tool in &self.tools {
            if entries.iter().any(|e| e.tool.name() == tool.name()) {
                return Err(config_error(ConfigProblem::DuplicateTool {
                    name: tool.name().to_owned(),
                }));
            }
            entries.push(Arc::new(ToolEntry::new(
                tool.clone(),
                &self.settings.middleware,
                self.settings.tool_timeout,
            )));
        }
        let static_definitions = entries.iter().map(|e| e.tool.definition()).collect();
        Ok(LlmAgent {
            config: Arc::new(Config {
                name: self.name.into(),
                model,
                static_tools: entries.into(),
                static_definitions,
                resolved: ResolvedEntries::default(),
                settings: self.settings,
            }),
        })
    }
}
