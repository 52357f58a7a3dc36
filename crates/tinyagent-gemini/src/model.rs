//! [`GeminiModel`]: the [`Model`] over HTTP, with retries and streaming.

use std::sync::Arc;

use futures::stream::{self, BoxStream};
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use tinyagent::{BoxFuture, Model, ModelError, ModelRequest, ModelResponse, model::ModelEvent};
use tinyagent_http::{Protocol, Transport, build_client, key_header, serialize};

use crate::config::{ConfigError, DEFAULT_BASE_URL, GeminiConfig};
use crate::error::status_error;
use crate::stream::Assembler;
use crate::wire;

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
pub struct GeminiModel {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    config: GeminiConfig,
    generate: Transport<GeminiApi>,
    stream: Transport<GeminiApi>,
}

/// The Gemini API's wire format, as the shared transport needs it.
#[derive(Debug)]
struct GeminiApi {
    model: String,
}

impl Protocol for GeminiApi {
    type Decoder = Assembler;

    fn decoder(&self) -> Assembler {
        Assembler::default()
    }

    fn status_error(&self, status: StatusCode, body: &[u8]) -> ModelError {
        status_error(status, body, &self.model)
    }

    fn parse_response(&self, body: &[u8], req: &ModelRequest) -> Result<ModelResponse, ModelError> {
        wire::parse_response(body, &req.tools)
    }

    fn base_url_hint(&self) -> String {
        format!(
            "it must be the Gemini API up to its version (such as {DEFAULT_BASE_URL}; requests \
             go to its /models/MODEL:generateContent)"
        )
    }
}

impl GeminiModel {
    /// A model with this configuration.
    ///
    /// Fails when the base URL is not an HTTP(S) URL, the model name is empty or not a path
    /// segment, or a header (the key included) is not a valid header value.
    pub fn new(config: GeminiConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut headers = HeaderMap::new();
        if let Some(key) = config.api_key.as_deref().filter(|k| !k.is_empty()) {
            headers.insert(
                "x-goog-api-key",
                key_header(key).map_err(ConfigError::Client)?,
            );
        }
        let client = build_client(
            headers,
            &config.http.headers,
            concat!("tinyagent-gemini/", env!("CARGO_PKG_VERSION")),
            config.http.connect_timeout,
        )
        .map_err(ConfigError::Client)?;
        let transport = |endpoint: String| {
            Transport::new(
                client.clone(),
                endpoint,
                config.base_url.clone(),
                config.model.clone(),
                config.http.clone(),
                config.max_tokens,
                GeminiApi {
                    model: config.model.clone(),
                },
            )
        };
        let generate = transport(config.endpoint());
        let stream = transport(config.stream_endpoint());
        Ok(Self {
            inner: Arc::new(Inner {
                config,
                generate,
                stream,
            }),
        })
    }

    /// A model configured from the environment (see [`GeminiConfig::from_env`]).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::new(GeminiConfig::from_env()?)
    }

    /// The configuration.
    pub fn config(&self) -> &GeminiConfig {
        &self.inner.config
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
        wire::request_body(&self.inner.config, req)
    }
}

impl Model for GeminiModel {
    fn name(&self) -> &str {
        &self.inner.config.model
    }

    fn generate<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(async move {
            let body = serialize(&wire::request_body(&self.inner.config, req))?;
            self.inner.generate.generate(body, req).await
        })
    }

    fn stream<'a>(
        &'a self,
        req: &'a ModelRequest,
    ) -> BoxStream<'a, Result<ModelEvent, ModelError>> {
        match serialize(&wire::request_body(&self.inner.config, req)) {
            Ok(body) => self.inner.stream.stream(body, req),
            Err(e) => Box::pin(stream::once(async move { Err(e) })),
        }
    }
}
