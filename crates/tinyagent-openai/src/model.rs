//! [`OpenAiModel`]: the [`Model`] over HTTP, with retries and streaming.

use futures::stream::BoxStream;
use reqwest::StatusCode;
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{HttpModel, Protocol};

use crate::config::{ConfigError, DEFAULT_BASE_URL, OpenAiConfig};
use crate::stream::Assembler;

/// A [`Model`] that talks the OpenAI Chat Completions wire format over HTTP.
///
/// Works with OpenAI and every compatible server (Ollama, vLLM, llama.cpp's server,
/// DeepSeek, Qwen's compatible mode, …) by changing the base URL. [`Model::generate`] makes
/// one non-streaming request; [`Model::stream`] (what agents call) streams over server-sent
/// events. Failed requests (429, 5xx, connection failures, timeouts) are retried with
/// exponential backoff and jitter, honouring `Retry-After`.
///
/// Cheap to clone: clones share the HTTP connection pool.
///
/// ```no_run
/// use std::sync::Arc;
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_openai::OpenAiModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // OPENAI_API_KEY / OPENAI_BASE_URL / OPENAI_MODEL
/// let model = OpenAiModel::from_env()?;
/// let agent = LlmAgent::builder("assistant")
///     .model(model)
///     .instruction("You are a helpful assistant.")
///     .build()?;
/// let answer = agent.ask(&Session::new(), "Hello").await?;
/// println!("{answer}");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiModel(HttpModel<OpenAiConfig>);

/// The Chat Completions wire format, as the shared transport needs it.
impl Protocol for OpenAiConfig {
    type Decoder = Assembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(&self.model, self.api_key.as_deref(), status, body)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        crate::wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the root of an OpenAI-compatible API (usually ending in /v1, such as \
             {DEFAULT_BASE_URL})"
        )
    }
}

/// The shared [`HttpModel`] does the work; these say what it does for OpenAI.
impl OpenAiModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, or a header
    /// (the key included) is not a valid header value.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        HttpModel::new(config).map(Self)
    }

    /// A model configured from the environment (see [`OpenAiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(OpenAiConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        self.0.config()
    }

    /// The JSON body this model sends for `req` (`stream` chooses the streaming form): what
    /// goes over the wire, for logs and tests.
    ///
    /// ```
    /// use tinyagent::{Message, ModelRequest};
    /// use tinyagent_openai::{OpenAiConfig, OpenAiModel};
    ///
    /// let model = OpenAiModel::new(OpenAiConfig::new("gpt-4o-mini"))?;
    /// let req = ModelRequest::new(vec![Message::user("Hello")])
    ///     .instruction("You are a helpful assistant.");
    /// let body = model.request_body(&req, false);
    /// assert_eq!(body["messages"][0]["role"], "system");
    /// assert_eq!(body["messages"][1]["content"], "Hello");
    /// # Ok::<(), tinyagent_openai::ConfigError>(())
    /// ```
    pub fn request_body(&self, req: &ModelRequest, stream: bool) -> serde_json::Value {
        self.0.request_body(req, stream)
    }
}

/// Forwards to the shared [`HttpModel`].
impl Model for OpenAiModel {
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
