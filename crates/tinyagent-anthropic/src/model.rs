//! [`AnthropicModel`]: the [`Model`](tinyagent::Model) over HTTP, with retries and streaming.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{ConfigError, HttpModel, Protocol, Provider, ProviderInfo, ProviderSettings};

use crate::config::AnthropicConfig;
use crate::info::DEFAULT_BASE_URL;
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
///
/// It is the shared [`HttpModel`] over an [`AnthropicConfig`]: [`new`](HttpModel::new) checks
/// the configuration (an HTTP(S) base URL, a model name, a thinking budget of at least 1024)
/// and builds the client once, [`from_env`](HttpModel::from_env) reads `ANTHROPIC_*`, and
/// [`request_body`](HttpModel::request_body) shows what goes over the wire:
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
///
/// [`Model::generate`]: tinyagent::Model::generate
/// [`Model::stream`]: tinyagent::Model::stream
/// [`Model`]: tinyagent::Model
pub type AnthropicModel = HttpModel<AnthropicConfig>;

/// The Messages API's wire format, as the shared transport needs it.
impl Protocol for AnthropicConfig {
    type Decoder = Assembler;

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        crate::error::status_error(&self.settings, status, body)
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

/// The Messages API, as the shared model needs it.
impl Provider for AnthropicConfig {
    const INFO: ProviderInfo = crate::info::INFO;

    fn settings(&self) -> &ProviderSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
    }

    fn check(&self) -> Result<(), ConfigError> {
        match self.thinking_tokens.filter(|t| *t < 1024) {
            Some(tokens) => Err(ConfigError::InvalidSetting {
                setting: "thinking_tokens",
                reason: format!("it is {tokens} tokens; the API's minimum is 1024"),
            }),
            None => Ok(()),
        }
    }

    fn endpoints(&self) -> [String; 2] {
        [self.endpoint(), self.endpoint()]
    }

    fn request_body(&self, req: &ModelRequest, stream: bool) -> Value {
        crate::wire::request_body(self, req, stream)
    }
}
