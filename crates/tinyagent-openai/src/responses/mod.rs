//! [`ResponsesModel`]: the OpenAI Responses API (`POST /v1/responses`), OpenAI's main API,
//! where reasoning items and some models are only found.

mod config;
mod stream;
mod wire;

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{HttpModel, Protocol, Provider, ProviderInfo, ProviderSettings};

pub use config::ResponsesConfig;

use crate::info::DEFAULT_BASE_URL;

impl Provider for ResponsesConfig {
    const INFO: ProviderInfo = crate::info::RESPONSES;

    fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
    }

    fn endpoints(&self) -> [String; 2] {
        [self.endpoint(), self.endpoint()]
    }

    fn request_body(&self, req: &ModelRequest, stream: bool) -> Value {
        wire::request_body(self, req, stream)
    }
}

/// The Responses wire format, as the shared transport needs it.
impl Protocol for ResponsesConfig {
    type Decoder = stream::ResponseAssembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(&self.model, self.api_key.as_deref(), status, body)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the root of an API with the OpenAI Responses endpoint (usually ending in \
             /v1, such as {DEFAULT_BASE_URL})"
        )
    }
}

/// A [`Model`] that talks the OpenAI Responses API over HTTP: the same transport, retries,
/// timeouts and faults handling as [`OpenAiModel`](crate::OpenAiModel), another wire format.
///
/// Function tools (strict when configured), parallel calls, structured outputs
/// (`text.format`), reasoning items (kept in the history as
/// [`Part::Reasoning`](tinyagent::Part::Reasoning) and sent back as they came, with their
/// encrypted content), usage with cached and reasoning tokens. A reply cut by the token limit
/// finishes with [`FinishReason::Length`](tinyagent::model::FinishReason::Length), so a call
/// it cut is never run.
///
/// ```no_run
/// use tinyagent::{AgentExt, LlmAgent, Session};
/// use tinyagent_openai::{ResponsesConfig, ResponsesModel};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let model = ResponsesModel::new(ResponsesConfig::from_env()?)?;
/// let agent = LlmAgent::builder("assistant").model(model).build()?;
/// println!("{}", agent.ask(&Session::new(), "Hello").await?);
/// # Ok(()) }
/// ```
///
/// It is the shared [`HttpModel`] over a [`ResponsesConfig`], as
/// [`OpenAiModel`](crate::OpenAiModel) is over an `OpenAiConfig`:
///
/// ```
/// use tinyagent::{Message, ModelRequest};
/// use tinyagent_openai::{ResponsesConfig, ResponsesModel};
///
/// let model = ResponsesModel::new(ResponsesConfig::new("gpt-4.1-mini"))?;
/// let req = ModelRequest::new(vec![Message::user("Hello")]).instruction("Be brief.");
/// let body = model.request_body(&req, true);
/// assert_eq!(body["instructions"], "Be brief.");
/// assert_eq!(body["input"][0]["content"], "Hello");
/// assert_eq!(body["store"], false);
/// # Ok::<(), tinyagent_openai::ConfigError>(())
/// ```
///
/// [`Model`]: tinyagent::Model
pub type ResponsesModel = HttpModel<ResponsesConfig>;
