//! [`OpenAiModel`]: the [`Model`](tinyagent::Model) over HTTP, with retries and streaming.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{HttpModel, Protocol, Provider, ProviderInfo, ProviderSettings};

use crate::config::OpenAiConfig;
use crate::info::DEFAULT_BASE_URL;
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
///
/// It is the shared [`HttpModel`] over an [`OpenAiConfig`]: [`new`](HttpModel::new) checks
/// the configuration (an HTTP(S) base URL, a model name, valid header values) and builds the
/// client once, [`from_env`](HttpModel::from_env) reads `OPENAI_*`, and
/// [`request_body`](HttpModel::request_body) shows what goes over the wire:
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
///
/// [`Model::generate`]: tinyagent::Model::generate
/// [`Model::stream`]: tinyagent::Model::stream
/// [`Model`]: tinyagent::Model
pub type OpenAiModel = HttpModel<OpenAiConfig>;

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

/// The Chat Completions API, as the shared model needs it.
impl Provider for OpenAiConfig {
    const INFO: ProviderInfo = crate::info::CHAT;

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
        crate::wire::request_body(self, req, stream)
    }
}
