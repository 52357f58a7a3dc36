//! [`ResponsesConfig`]: where the Responses API is, which model, and how requests are made.

use std::ops::{Deref, DerefMut};

use tinyagent_http::{ConfigError, HttpSettings, ProviderSettings};

use crate::info::{DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};

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
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ResponsesConfig {
    /// Where the server is, the key (sent as `Authorization: Bearer …` when set), the model,
    /// the token limit (`max_output_tokens`, reasoning included) sent when a request sets
    /// none, and how requests are made. Requests go to `{base_url}/responses`.
    pub settings: ProviderSettings,
    /// Send tool schemas in OpenAI's strict dialect (`"strict": true`); a schema with a map
    /// in it cannot be strict and is sent with `"strict": false`. Off by default.
    pub strict_tools: bool,
    /// `parallel_tool_calls` sent with requests that offer tools; `None` leaves the server's
    /// default (to allow them).
    pub parallel_tool_calls: Option<bool>,
    /// The reasoning effort of reasoning models (`minimal`, `low`, `medium`, `high`), sent as
    /// `reasoning.effort` with a request for the encrypted reasoning items; `None` sends no
    /// `reasoning` (what models that do not reason need).
    pub reasoning: Option<String>,
    /// Ask OpenAI to keep each response (`store: true`); off by default, since the history
    /// travels with every request.
    pub store: bool,
}

/// The configuration reads as its [`ProviderSettings`]: `config.base_url`, `config.api_key`,
/// `config.model`, `config.max_tokens` and `config.http` are theirs.
impl Deref for ResponsesConfig {
    type Target = ProviderSettings;

    fn deref(&self) -> &ProviderSettings {
        &self.settings
    }
}

impl DerefMut for ResponsesConfig {
    fn deref_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
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
        let mut settings = ProviderSettings::new(DEFAULT_BASE_URL, model);
        settings.max_tokens = Some(DEFAULT_MAX_TOKENS);
        Self {
            settings,
            strict_tools: false,
            parallel_tool_calls: None,
            reasoning: None,
            store: false,
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

    /// Sets the token limit sent when a request sets none ([`ProviderSettings::max_tokens`]).
    pub fn max_tokens(mut self, max_tokens: impl Into<Option<u32>>) -> Self {
        self.settings.max_tokens = max_tokens.into();
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
        self.settings.base_url = base_url.into();
        self
    }

    /// Sets the API key.
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.settings.api_key = Some(api_key.into());
        self
    }

    /// Sets the model name.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = model.into();
        self
    }

    /// Sets how requests are made.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.settings.http = http;
        self
    }

    /// The URL requests are posted to: the [base URL](ProviderSettings::base) and
    /// `/responses`.
    pub fn endpoint(&self) -> String {
        self.settings.url("/responses")
    }
}
