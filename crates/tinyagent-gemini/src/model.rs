//! [`GeminiModel`]: the [`Model`] over HTTP, with retries and streaming.

use futures::stream::BoxStream;
use reqwest::StatusCode;
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{HttpModel, Protocol};

use crate::config::{ConfigError, DEFAULT_BASE_URL, GeminiConfig};
use crate::stream::Assembler;

/// A [`Model`] for the Gemini API: `generateContent` for [`Model::generate`],
/// `streamGenerateContent?alt=sse` for [`Model::stream`] (what agents call).
///
/// Failed requests (429, 5xx, connection failures, timeouts, a stream cut in the middle, an
/// `UNAVAILABLE` error event) are retried with exponential backoff and jitter, honouring
/// `retry-after`. Cheap to clone: clones share the HTTP connection pool.
///
/// ```no_run
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_gemini::GeminiModel;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// // GEMINI_API_KEY / GEMINI_BASE_URL / GEMINI_MODEL
/// let agent = LlmAgent::builder("smart-assistant")
///     .model(GeminiModel::from_env()?)
///     .instruction("You are a helpful assistant.")
///     .tools([tinyagent_demo::weather_tool(), tinyagent_demo::calculator_tool()])
///     .build()?;
/// println!("{}", agent.ask(&Session::new(), "What's the weather in Beijing?").await?);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct GeminiModel(HttpModel<GeminiConfig>);

/// The Gemini API's wire format, as the shared transport needs it.
impl Protocol for GeminiConfig {
    type Decoder = Assembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(self, status, body)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        crate::wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the Gemini API up to its version (such as {DEFAULT_BASE_URL}; requests \
             go to its /models/MODEL:generateContent)"
        )
    }
}

/// The shared [`HttpModel`] does the work; these say what it does for Gemini.
impl GeminiModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty or not a path
    /// segment, or a header (the key included) is not a valid header value.
    pub fn new(config: GeminiConfig) -> Result<Self, ConfigError> {
        HttpModel::new(config).map(Self)
    }

    /// A model configured from the environment (see [`GeminiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(GeminiConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        self.0.config()
    }

    /// The JSON body this model sends for `req` (the same for both endpoints).
    ///
    /// ```
    /// use tinyagent::{Message, ModelRequest};
    /// use tinyagent_gemini::{GeminiConfig, GeminiModel};
    ///
    /// let model = GeminiModel::new(GeminiConfig::new("gemini-2.5-flash"))?;
    /// let req = ModelRequest::new(vec![Message::user("Hello")])
    ///     .instruction("You are a helpful assistant.");
    /// let body = model.request_body(&req);
    /// assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You are a helpful assistant.");
    /// assert_eq!(body["contents"][0]["parts"][0]["text"], "Hello");
    /// # Ok::<(), tinyagent_gemini::ConfigError>(())
    /// ```
    pub fn request_body(&self, req: &ModelRequest) -> serde_json::Value {
        self.0.request_body(req, false)
    }
}

/// Forwards to the shared [`HttpModel`].
impl Model for GeminiModel {
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
