//! [`OpenAiModel`]: the [`Model`] over HTTP, with retries and streaming.

use std::sync::Arc;

use futures::stream::{self, BoxStream};
use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, HeaderMap};
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{Protocol, Transport, build_client, key_header, serialize};

use crate::config::{ConfigError, DEFAULT_BASE_URL, OpenAiConfig};
use crate::error::status_error;
use crate::stream::Assembler;
use crate::wire;

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
pub struct OpenAiModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: OpenAiConfig,
    transport: Transport<OpenAiProtocol>,
}

/// The Chat Completions wire format, as the shared transport needs it.
#[derive(Debug)]
struct OpenAiProtocol {
    key_sent: bool,
    model: String,
}

impl Protocol for OpenAiProtocol {
    type Decoder = Assembler;

    fn decoder(&self) -> Assembler {
        Assembler::default()
    }

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        status_error(status, body, self.key_sent, &self.model)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the root of an OpenAI-compatible API (usually ending in /v1, such as \
             {DEFAULT_BASE_URL})"
        )
    }
}

impl OpenAiModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, or a header
    /// (the key included) is not a valid header value.
    pub fn new(config: OpenAiConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            let value = key_header(&format!("Bearer {key}")).map_err(ConfigError::Client)?;
            headers.insert(AUTHORIZATION, value);
        }
        let client = build_client(
            headers,
            &config.http.headers,
            concat!("tinyagent-openai/", env!("CARGO_PKG_VERSION")),
            config.http.connect_timeout,
        )
        .map_err(ConfigError::Client)?;
        let protocol = OpenAiProtocol {
            key_sent: config.api_key.as_deref().is_some_and(|k| !k.is_empty()),
            model: config.model.clone(),
        };
        let transport = Transport::new(
            client,
            config.endpoint(),
            config.base_url.clone(),
            config.model.clone(),
            config.http.clone(),
            config.max_tokens,
            protocol,
        );
        Ok(Self {
            inner: Arc::new(Inner { config, transport }),
        })
    }

    /// A model configured from the environment (see [`OpenAiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(OpenAiConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.inner.config
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
        wire::request_body(&self.inner.config, req, stream)
    }
}

impl Model for OpenAiModel {
    fn name(&self) -> &str {
        &self.inner.config.model
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = serialize(&wire::request_body(&self.inner.config, req, false))?;
            self.inner.transport.generate(body, req).await
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match serialize(&wire::request_body(&self.inner.config, req, true)) {
            Ok(body) => self.inner.transport.stream(body, req),
            Err(e) => Box::pin(stream::once(async move { Err(e) })),
        }
    }
}
