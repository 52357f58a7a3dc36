//! [`AnthropicModel`]: the [`Model`] over HTTP, with retries and streaming.

use futures::stream::BoxStream;
use reqwest::StatusCode;
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{HttpModel, Protocol};

use crate::config::{AnthropicConfig, ConfigError, DEFAULT_BASE_URL};
use crate::stream::Assembler;

/// A [`Model`] that talks to the Anthropic Messages API (`POST /v1/messages`).
///
/// [`Model::generate`] makes one non-streaming request; [`Model::stream`] (what agents call)
/// streams over server-sent events. Failed requests (429, 529 overloaded, 5xx, connection
/// failures, timeouts, a stream cut in the middle, an `overloaded_error` event) are retried
/// with exponential backoff and jitter, honouring `retry-after`.
///
/// Cheap to clone: clones share the HTTP connection pool.
///
/// ```no_run
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_anthropic::AnthropicModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL / ANTHROPIC_MODEL
/// let agent = LlmAgent::builder("smart-assistant")
///     .model(AnthropicModel::from_env()?)
///     .instruction("You are a helpful assistant.")
///     .tools([tinyagent_demo::weather_tool(), tinyagent_demo::calculator_tool()])
///     .build()?;
/// let answer = agent.ask(&Session::new(), "What's the weather in Beijing?").await?;
/// println!("{answer}");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct AnthropicModel(HttpModel<AnthropicConfig>);

/// The Messages API's wire format, as the shared transport needs it.
impl Protocol for AnthropicConfig {
    type Decoder = Assembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(self, status, body)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        crate::wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the root of the Anthropic API or a gateway to it (such as \
             {DEFAULT_BASE_URL}; requests go to its /v1/messages)"
        )
    }
}

/// The shared [`HttpModel`] does the work; these say what it does for Anthropic.
impl AnthropicModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, the thinking
    /// budget is below 1024, or a header (the key included) is not a valid header value.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        HttpModel::new(config).map(Self)
    }

    /// A model configured from the environment (see [`AnthropicConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(AnthropicConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        self.0.config()
    }

    /// The JSON body this model sends for `req` (`stream` chooses the streaming form): what
    /// goes over the wire, for logs and tests.
    ///
    /// ```
    /// use tinyagent::{Message, ModelRequest};
    /// use tinyagent_anthropic::{AnthropicConfig, AnthropicModel};
    ///
    /// let model = AnthropicModel::new(AnthropicConfig::new("claude-sonnet-4-5"))?;
    /// let req = ModelRequest::new(vec![Message::user("Hello")])
    ///     .instruction("You are a helpful assistant.");
    /// let body = model.request_body(&req, false);
    /// assert_eq!(body["system"], "You are a helpful assistant.");
    /// assert_eq!(body["messages"][0]["content"][0]["text"], "Hello");
    /// assert_eq!(body["max_tokens"], 4096);
    /// # Ok::<(), tinyagent_anthropic::ConfigError>(())
    /// ```
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> serde_json::Value {
        self.0.request_body(req, stream)
    }
}

/// Forwards to the shared [`HttpModel`].
impl Model for AnthropicModel {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn provider(&self) -> Option<&str> {
        self.0.provider()
    }

    fn supports(&self, option: tinyagent::model::SamplingOption) -> bool {
        self.0.supports(option)
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.0.generate(req)
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        self.0.stream(req)
    }
}
