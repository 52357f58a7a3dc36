//! [`RunOptions`]: what one invocation asks of an agent beyond its own settings (a lower token
//! limit, sampling options, a tool choice, a final answer's shape), as an API client's request
//! does. The invocation carries them; the agent applies them to its requests.

use super::{Model, ResponseFormat, Sampling, SamplingOption, ToolChoice};

/// Settings for one invocation that take the place of the agent's own for it.
///
/// `max_tokens` can only lower the agent's limit, never raise it; the others replace the
/// agent's setting. A sampling option the agent's model does not take
/// ([`Model::supports`]) fails the run before anything is sent, rather than being dropped. A
/// tool choice that forces a call (`Required`, a named tool) holds for the
/// first model step only, after which the agent's own choice applies (or the model could never
/// answer). A [`ToolChoice::Tool`] must name one of the invocation's tools (the run
/// fails with `AgentError::Options` otherwise). With a
/// `response_format`, the final answer is asked in that shape (the agent's tools still run
/// before it).
///
/// ```
/// use tinyagent::agent::RunOptions;
/// use tinyagent::model::ToolChoice;
/// use tinyagent::{Invocation, Session};
///
/// let inv = Invocation::new(Session::new(), "hi")
///     .with_options(RunOptions::new().max_tokens(64).tool_choice(ToolChoice::None));
/// assert_eq!(inv.options().unwrap().max_tokens, Some(64));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunOptions {
    /// The most tokens of one model reply (the lower of this and the agent's limit).
    pub max_tokens: Option<u32>,
    /// How the model picks its tokens; each setting set takes the place of the agent's.
    pub sampling: Sampling,
    /// Which tools the model may or must call.
    pub tool_choice: Option<ToolChoice>,
    /// Whether one step's tool calls may run at once (`false`: one after another).
    pub parallel_tool_calls: Option<bool>,
    /// The shape of the final answer.
    pub response_format: Option<ResponseFormat>,
}

impl RunOptions {
    /// No options: the agent's own settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the temperature (a shortcut into [`sampling`](Self::sampling)).
    #[must_use]
    pub fn temperature(mut self, temperature: f32) -> Self {
        self.sampling.temperature = Some(temperature);
        self
    }

    /// Sets [`sampling`](Self::sampling).
    #[must_use]
    pub fn sampling(mut self, sampling: Sampling) -> Self {
        self.sampling = sampling;
        self
    }

    /// Checks that `model` takes every sampling option these options set: the first it does
    /// not take, and why, otherwise.
    pub fn check(&self, model: &dyn Model) -> Result<(), (SamplingOption, String)> {
        match self.sampling.options().find(|o| !model.supports(*o)) {
            None => Ok(()),
            Some(option) => Err((
                option,
                format!(
                    "the model {:?} does not take `{option}`, which would be dropped without \
                     effect; leave it out",
                    model.name()
                ),
            )),
        }
    }

    /// Sets [`tool_choice`](Self::tool_choice).
    #[must_use]
    pub fn tool_choice(mut self, tool_choice: ToolChoice) -> Self {
        self.tool_choice = Some(tool_choice);
        self
    }

    /// Sets [`parallel_tool_calls`](Self::parallel_tool_calls).
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets [`response_format`](Self::response_format).
    #[must_use]
    pub fn response_format(mut self, format: ResponseFormat) -> Self {
        self.response_format = Some(format);
        self
    }
}
