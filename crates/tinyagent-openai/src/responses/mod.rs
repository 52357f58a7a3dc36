//! [`ResponsesModel`]: the OpenAI Responses API (`POST /v1/responses`), OpenAI's main API,
//! where reasoning items and some models are only found.

mod stream;
mod wire;

use std::fmt;

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::model::SamplingOption;
use tinyagent::{ModelError, ModelRequest, ModelResponse};
use tinyagent_http::{Common, HttpModel, HttpSettings, Protocol, Provider, ProviderInfo};

use crate::config::{
    ConfigError, DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL, ENV_API_KEY, ENV_BASE_URL,
    ENV_MODEL,
};

/// How to reach the OpenAI Responses API, and how to talk to it.
///
/// The same environment as [`OpenAiConfig`](crate::OpenAiConfig) (`OPENAI_API_KEY`,
/// `OPENAI_BASE_URL`, `OPENAI_MODEL`). Requests are stateless by default: tinyagent keeps the
/// history and sends it whole (`store: false`), so nothing is kept on OpenAI's side and no
/// `previous_response_id` is needed; reasoning items come back encrypted
/// (`include: ["reasoning.encrypted_content"]` when [`reasoning`](Self::reasoning) is set)
/// and go back with the history as they came.
///
/// ```
/// use tinyagent_openai::{ResponsesConfig, ResponsesModel};
///
/// let config = ResponsesConfig::new("o4-mini").api_key("sk-...").reasoning("low");
/// let model = ResponsesModel::new(config)?;
/// assert_eq!(tinyagent::Model::name(&model), "o4-mini");
/// # Ok::<(), tinyagent_openai::ConfigError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// The base URL; requests go to `{base_url}/responses`.
    pub base_url: String,
    /// The API key, sent as `Authorization: Bearer …` when set.
    pub api_key: Option<String>,
    /// The model name sent in every request.
    pub model: String,
    /// Send tool schemas in OpenAI's strict dialect (`"strict": true`); a schema with a map
    /// in it cannot be strict and is sent with `"strict": false`. Off by default.
    pub strict_tools: bool,
    /// `parallel_tool_calls` sent with requests that offer tools; `None` leaves the server's
    /// default (to allow them).
    pub parallel_tool_calls: Option<bool>,
    /// The token limit (`max_output_tokens`, reasoning included) when a request sets none.
    pub max_tokens: Option<u32>,
    /// The reasoning effort of reasoning models (`minimal`, `low`, `medium`, `high`), sent as
    /// `reasoning.effort` with a request for the encrypted reasoning items; `None` sends no
    /// `reasoning` (what models that do not reason need).
    pub reasoning: Option<String>,
    /// Ask OpenAI to keep each response (`store: true`); off by default, since the history
    /// travels with every request.
    pub store: bool,
    /// How requests are made: retries, timeouts, sizes, extra headers and body fields.
    pub http: HttpSettings,
}

impl fmt::Debug for ResponsesConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (url, key) = (&self.base_url, self.api_key.as_ref());
        tinyagent_http::debug_config(f, "ResponsesConfig", url, key, &self.model)
            .field("strict_tools", &self.strict_tools)
            .field("parallel_tool_calls", &self.parallel_tool_calls)
            .field("max_tokens", &self.max_tokens)
            .field("reasoning", &self.reasoning)
            .field("store", &self.store)
            .field("http", &self.http)
            .finish()
    }
}

impl Default for ResponsesConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl ResponsesConfig {
    /// A configuration for `model` on OpenAI's API, without a key.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            strict_tools: false,
            parallel_tool_calls: None,
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            reasoning: None,
            store: false,
            http: HttpSettings::default(),
        }
    }

    /// The configuration the environment gives: `OPENAI_API_KEY`, `OPENAI_BASE_URL`,
    /// `OPENAI_MODEL`. Fails when neither the key nor the base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// [`from_env`](Self::from_env) with the variables read through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        tinyagent_http::from_lookup(lookup)
    }

    /// Sets [`strict_tools`](Self::strict_tools).
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Sets [`parallel_tool_calls`](Self::parallel_tool_calls).
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets [`max_tokens`](Self::max_tokens).
    pub fn max_tokens(mut self, max_tokens: impl Into<Option<u32>>) -> Self {
        self.max_tokens = max_tokens.into();
        self
    }

    /// Sets [`reasoning`](Self::reasoning) (the effort of a reasoning model).
    pub fn reasoning(mut self, effort: impl Into<String>) -> Self {
        self.reasoning = Some(effort.into());
        self
    }

    /// Sets [`store`](Self::store).
    pub fn store(mut self, store: bool) -> Self {
        self.store = store;
        self
    }

    /// Sets the base URL (up to `/v1`).
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets how requests are made.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.http = http;
        self
    }

    /// The URL requests are posted to: the base URL (without trailing slashes) and
    /// `/responses`.
    pub fn endpoint(&self) -> String {
        format!("{}/responses", self.base_url.trim_end_matches('/'))
    }
}

impl Provider for ResponsesConfig {
    const INFO: ProviderInfo = ProviderInfo::new(
        [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
        "set OPENAI_API_KEY (for OpenAI), or OPENAI_BASE_URL (for a server with the Responses \
         API), and optionally OPENAI_MODEL (default gpt-4o-mini)",
        DEFAULT_BASE_URL,
        concat!("tinyagent-openai/", env!("CARGO_PKG_VERSION")),
    )
    .provider("openai")
    .sampling(&[SamplingOption::Temperature, SamplingOption::TopP]);

    fn common(&mut self) -> Common<'_> {
        let Self {
            base_url,
            api_key,
            model,
            max_tokens,
            http,
            ..
        } = self;
        Common::new(base_url, api_key, model, max_tokens, http)
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
