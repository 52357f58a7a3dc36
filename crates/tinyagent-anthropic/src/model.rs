//! [`AnthropicModel`]: the [`Model`] over HTTP, with retries and streaming.

use std::sync::Arc;

use futures::stream::{self, BoxStream};
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue};
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{Protocol, Transport, build_client, key_header, serialize};

use crate::config::{API_VERSION, AnthropicConfig, ConfigError, DEFAULT_BASE_URL};
use crate::error::status_error;
use crate::stream::Assembler;
use crate::wire;

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
pub struct AnthropicModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: AnthropicConfig,
    transport: Transport<MessagesApi>,
}

/// The Messages API's wire format, as the shared transport needs it.
#[derive(Debug)]
struct MessagesApi {
    key_sent: bool,
    model: String,
}

impl Protocol for MessagesApi {
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
            "it must be the root of the Anthropic API or a gateway to it (such as \
             {DEFAULT_BASE_URL}; requests go to its /v1/messages)"
        )
    }
}

impl AnthropicModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty, the thinking
    /// budget is below 1024, or a header (the key included) is not a valid header value.
    pub fn new(config: AnthropicConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.insert("x-api-key", key_header(key).map_err(ConfigError::Client)?);
        }
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        let client = build_client(
            headers,
            &config.http.headers,
            concat!("tinyagent-anthropic/", env!("CARGO_PKG_VERSION")),
            config.http.connect_timeout,
        )
        .map_err(ConfigError::Client)?;
        let protocol = MessagesApi {
            key_sent: config.api_key.as_deref().is_some_and(|k| !k.is_empty()),
            model: config.model.clone(),
        };
        let transport = Transport::new(
            client,
            config.endpoint(),
            config.base_url.clone(),
            config.model.clone(),
            config.http.clone(),
            Some(config.max_tokens.unwrap_or(crate::DEFAULT_MAX_TOKENS)),
            protocol,
        );
        Ok(Self {
            inner: Arc::new(Inner { config, transport }),
        })
    }

    /// A model configured from the environment (see [`AnthropicConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(AnthropicConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.inner.config
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
        wire::request_body(&self.inner.config, req, stream)
    }
}

impl Model for AnthropicModel {
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
