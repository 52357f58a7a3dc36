//! [`GeminiModel`]: the [`Model`](tinyagent::Model) over HTTP, with retries and streaming.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{ConfigError, HttpModel, Protocol, Provider, ProviderInfo, ProviderSettings};

use crate::config::GeminiConfig;
use crate::info::{DEFAULT_BASE_URL, ENV_MODEL};
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
///
/// It is the shared [`HttpModel`] over a [`GeminiConfig`]: [`new`](HttpModel::new) checks
/// the configuration (an HTTP(S) base URL, a model name that is a path segment, valid header
/// values) and builds the client once, [`from_env`](HttpModel::from_env) reads `GEMINI_*`,
/// and [`request_body`](HttpModel::request_body) shows what goes over the wire (the same
/// body for both endpoints):
///
/// ```
/// use tinyagent::{Message, ModelRequest};
/// use tinyagent_gemini::{GeminiConfig, GeminiModel};
///
/// let model = GeminiModel::new(GeminiConfig::new("gemini-2.5-flash"))?;
/// let req = ModelRequest::new(vec![Message::user("Hello")])
///     .instruction("You are a helpful assistant.");
/// let body = model.request_body(&req, false);
/// assert_eq!(body["systemInstruction"]["parts"][0]["text"], "You are a helpful assistant.");
/// assert_eq!(body["contents"][0]["parts"][0]["text"], "Hello");
/// # Ok::<(), tinyagent_gemini::ConfigError>(())
/// ```
///
/// [`Model::generate`]: tinyagent::Model::generate
/// [`Model::stream`]: tinyagent::Model::stream
/// [`Model`]: tinyagent::Model
pub type GeminiModel = HttpModel<GeminiConfig>;

/// The Gemini API's wire format, as the shared transport needs it.
impl Protocol for GeminiConfig {
    type Decoder = Assembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(&self.settings, status, body)
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

/// The Gemini API, as the shared model needs it.
impl Provider for GeminiConfig {
    const INFO: ProviderInfo = crate::info::INFO;

    fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
    }

    /// The name goes into the URL path.
    fn check(&self) -> Result<(), ConfigError> {
        let ok = |c: char| c.is_ascii_alphanumeric() || "-_./@".contains(c);
        if self.model.trim().chars().all(ok) {
            return Ok(());
        }
        Err(ConfigError::InvalidModel {
            model: self.model.clone(),
            reason: format!(
                "only letters, digits and -_./@ are allowed: set it with `model(..)` or {ENV_MODEL}"
            ),
        })
    }

    fn endpoints(&self) -> [String; 2] {
        [self.endpoint(), self.stream_endpoint()]
    }

    /// The same body for both endpoints.
    fn request_body(&self, req: &ModelRequest, _stream: bool) -> Value {
        crate::wire::request_body(self, req)
    }
}
