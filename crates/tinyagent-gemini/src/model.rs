//! [`GeminiModel`]: the [`Model`](tinyagent::Model) over HTTP, with retries and streaming.

use reqwest::StatusCode;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{HttpModel, Protocol};

use crate::config::{DEFAULT_BASE_URL, GeminiConfig};
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
