//! [`AnthropicConfig`]: where the API is, which model, and how requests are made.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

/// The environment variable holding the API key, sent as `x-api-key`.
pub const ENV_API_KEY: &str = "ANTHROPIC_API_KEY";
/// The environment variable holding the base URL, such as `https://api.anthropic.com`.
pub const ENV_BASE_URL: &str = "ANTHROPIC_BASE_URL";
/// The environment variable holding the model name, such as `claude-sonnet-4-5`.
pub const ENV_MODEL: &str = "ANTHROPIC_MODEL";

/// Anthropic's own base URL, the default.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "claude-sonnet-4-5";
/// The API version sent in the `anthropic-version` header.
pub const API_VERSION: &str = "2023-06-01";

/// How long the API may take to start answering, by default.
pub const DEFAULT_FIRST_BYTE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a stream may stay silent between two events, by default (the API sends `ping`
/// events while the model works).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The deadline of a whole call (retries included), by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(600);
/// The token limit sent when a request sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The most bytes of one response body, by default.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 16 * 1024 * 1024;

/// Why a configuration could not be made into a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Neither `ANTHROPIC_API_KEY` nor `ANTHROPIC_BASE_URL` is set.
    #[error(
        "no Anthropic model is configured: set ANTHROPIC_API_KEY (and optionally \
         ANTHROPIC_MODEL, default {DEFAULT_MODEL}, and ANTHROPIC_BASE_URL for a gateway)"
    )]
    NotConfigured,
    /// The base URL is not an `http://` or `https://` URL.
    #[error(
        "invalid base URL {0:?}: expected an http:// or https:// URL such as {DEFAULT_BASE_URL}"
    )]
    InvalidBaseUrl(String),
    /// The model name is empty.
    #[error("the model name is empty: set it with `model(..)` or ANTHROPIC_MODEL")]
    EmptyModel,
    /// The thinking budget is below the API's minimum of 1024 tokens.
    #[error("the thinking budget is {0} tokens; the API's minimum is 1024")]
    ThinkingBudget(u32),
    /// The HTTP client could not be built (a header value that is not valid, for example).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// How to reach the Anthropic Messages API, and how to talk to it.
///
/// Build one in code ([`AnthropicConfig::new`] and the setters) or from the environment
/// ([`AnthropicConfig::from_env`]), then make the model with
/// [`AnthropicModel::new`](crate::AnthropicModel::new). The API key is never printed by
/// `Debug`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_anthropic::{AnthropicConfig, AnthropicModel};
///
/// let config = AnthropicConfig::new("claude-sonnet-4-5")
///     .api_key("sk-ant-...")
///     .prompt_caching(true)          // cache the instruction and the tool definitions
///     .thinking(2048)                // extended thinking, 2048 tokens of budget
///     .max_retries(3)
///     .first_byte_timeout(Duration::from_secs(120));
/// let model = AnthropicModel::new(config)?;
/// assert_eq!(tinyagent::Model::name(&model), "claude-sonnet-4-5");
/// # Ok::<(), tinyagent_anthropic::ConfigError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// The base URL; requests go to `{base_url}/v1/messages` (a base URL that already ends
    /// in `/v1` gets `/messages`).
    pub base_url: String,
    /// The API key, sent as `x-api-key` when set.
    pub api_key: Option<String>,
    /// The model name sent in every request.
    pub model: String,
    /// The token limit (`max_tokens`, which the API requires) sent when a request sets none.
    pub max_tokens: u32,
    /// Extended thinking: the token budget (at least 1024) sent as
    /// `thinking: {"type": "enabled", "budget_tokens": n}`; `None` for none. The thinking
    /// blocks come back as [`Part::Reasoning`](tinyagent::Part::Reasoning) and are sent
    /// back in the history, signed, as the API requires.
    pub thinking_budget: Option<u32>,
    /// Put a prompt-caching breakpoint (`cache_control: {"type": "ephemeral"}`) on the
    /// instruction.
    pub cache_instruction: bool,
    /// Put a prompt-caching breakpoint on the last tool definition (which caches them all).
    pub cache_tools: bool,
    /// Ask for one tool call at most per reply (`disable_parallel_tool_use`).
    pub disable_parallel_tool_use: bool,
    /// How often a failed request (429, 529 overloaded, 5xx, a connection failure or
    /// timeout, a cut stream) is retried.
    pub max_retries: u32,
    /// The first retry's backoff; it doubles on each retry, with jitter.
    pub initial_backoff: Duration,
    /// The longest backoff between two attempts.
    pub max_backoff: Duration,
    /// The longest wait a server's `retry-after` may ask for; a longer one is cut to this.
    pub max_retry_after: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long the API may take to start answering (headers, then a stream's first event).
    pub first_byte_timeout: Duration,
    /// How long a stream may stay silent between two events once it has started.
    pub idle_timeout: Duration,
    /// A deadline for a whole call, every retry and wait included; `None` for none.
    pub request_timeout: Option<Duration>,
    /// The most bytes of one response body read.
    pub max_reply_bytes: usize,
    /// Extra HTTP headers sent with every request (`anthropic-beta`, a gateway's key…).
    pub headers: Vec<(String, String)>,
    /// Extra top-level fields merged into every request body (`top_k`, `metadata`,
    /// `stop_sequences`…); they override the provider's fields of the same name.
    pub extra_body: Map<String, Value>,
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("base_url", &tinyagent::redact::url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("thinking_budget", &self.thinking_budget)
            .field("cache_instruction", &self.cache_instruction)
            .field("cache_tools", &self.cache_tools)
            .field("disable_parallel_tool_use", &self.disable_parallel_tool_use)
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("extra_body", &self.extra_body)
            .finish()
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl AnthropicConfig {
    /// A configuration for this model on Anthropic's API, without a key, with the defaults:
    /// 2 retries from 500 ms backoff (at most 30 s), `retry-after` honoured up to 60 s, 10 s
    /// to connect, [`DEFAULT_FIRST_BYTE_TIMEOUT`] until the API starts answering,
    /// [`DEFAULT_IDLE_TIMEOUT`] of silence between two events, [`DEFAULT_REQUEST_TIMEOUT`]
    /// for a whole call, a token limit of [`DEFAULT_MAX_TOKENS`], replies of at most
    /// [`DEFAULT_MAX_REPLY_BYTES`], no thinking and no prompt caching.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            cache_instruction: false,
            cache_tools: false,
            disable_parallel_tool_use: false,
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: DEFAULT_FIRST_BYTE_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            request_timeout: Some(DEFAULT_REQUEST_TIMEOUT),
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            headers: Vec::new(),
            extra_body: Map::new(),
        }
    }

    /// The configuration the environment gives: [`ENV_API_KEY`], [`ENV_BASE_URL`] (default
    /// [`DEFAULT_BASE_URL`]) and [`ENV_MODEL`] (default [`DEFAULT_MODEL`]). Empty variables
    /// count as unset.
    ///
    /// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is
    /// set (a gateway in front of the API may need no key).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup` (for tests, or
    /// a configuration file).
    ///
    /// ```
    /// use tinyagent_anthropic::AnthropicConfig;
    ///
    /// let config = AnthropicConfig::from_lookup(|name| match name {
    ///     "ANTHROPIC_API_KEY" => Some("sk-ant-test".to_owned()),
    ///     "ANTHROPIC_MODEL" => Some("claude-haiku-4-5".to_owned()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.base_url, "https://api.anthropic.com");
    /// assert_eq!(config.model, "claude-haiku-4-5");
    /// assert!(AnthropicConfig::from_lookup(|_| None).is_err());
    /// # Ok::<(), tinyagent_anthropic::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = tinyagent_http::env_settings(lookup, [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL])
            .ok_or(ConfigError::NotConfigured)?;
        let mut config = Self::new(env.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()));
        config.base_url = env.base_url.unwrap_or(config.base_url);
        config.api_key = env.api_key;
        Ok(config)
    }

    /// Sets the token limit sent when a request sets none.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Turns extended thinking on with this token budget (at least 1024). The token limit
    /// sent is raised above the budget when it is not already.
    #[must_use]
    pub fn thinking(mut self, budget_tokens: u32) -> Self {
        self.thinking_budget = Some(budget_tokens);
        self
    }

    /// Puts prompt-caching breakpoints on both the instruction and the tool definitions.
    #[must_use]
    pub fn prompt_caching(self, on: bool) -> Self {
        self.cache_instruction(on).cache_tools(on)
    }

    /// Puts a prompt-caching breakpoint on the instruction.
    #[must_use]
    pub fn cache_instruction(mut self, on: bool) -> Self {
        self.cache_instruction = on;
        self
    }

    /// Puts a prompt-caching breakpoint on the tool definitions.
    #[must_use]
    pub fn cache_tools(mut self, on: bool) -> Self {
        self.cache_tools = on;
        self
    }

    /// Asks for one tool call at most per reply.
    #[must_use]
    pub fn disable_parallel_tool_use(mut self, disable: bool) -> Self {
        self.disable_parallel_tool_use = disable;
        self
    }

    /// The URL requests are posted to: the base URL (without trailing slashes) and
    /// `/v1/messages`, or `/messages` when it already ends in `/v1`.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim().trim_end_matches('/');
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }

    /// The limits the shared transport runs a call within.
    pub(crate) fn limits(&self) -> tinyagent_http::Limits {
        let mut limits = self.transport_limits();
        limits.max_tokens = Some(self.max_tokens);
        limits
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !tinyagent_http::is_http_url(&self.base_url) {
            return Err(ConfigError::InvalidBaseUrl(self.base_url.clone()));
        }
        if self.model.trim().is_empty() {
            return Err(ConfigError::EmptyModel);
        }
        if let Some(budget) = self.thinking_budget.filter(|b| *b < 1024) {
            return Err(ConfigError::ThinkingBudget(budget));
        }
        Ok(())
    }
}

tinyagent_http::transport_setters!(AnthropicConfig);

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn env_configuration() {
        assert!(matches!(
            AnthropicConfig::from_lookup(env(&[("ANTHROPIC_MODEL", "x")])),
            Err(ConfigError::NotConfigured)
        ));
        let c = AnthropicConfig::from_lookup(env(&[
            ("ANTHROPIC_API_KEY", "sk-ant-1"),
            ("ANTHROPIC_BASE_URL", " "),
        ]))
        .unwrap();
        assert_eq!(c.base_url, DEFAULT_BASE_URL);
        assert_eq!(c.model, DEFAULT_MODEL);
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        assert!(!format!("{c:?}").contains("sk-ant-1"));
        let c = AnthropicConfig::from_lookup(env(&[
            ("ANTHROPIC_BASE_URL", "http://gateway.local/anthropic/v1/"),
            ("ANTHROPIC_MODEL", "claude-haiku-4-5"),
        ]))
        .unwrap();
        assert_eq!(c.endpoint(), "http://gateway.local/anthropic/v1/messages");
        assert_eq!(c.api_key, None);
    }

    #[test]
    fn validation() {
        assert!(AnthropicConfig::new("m").validate().is_ok());
        for bad in ["api.anthropic.com", "ftp://x", "http://", ""] {
            assert!(
                matches!(
                    AnthropicConfig::new("m").base_url(bad).validate(),
                    Err(ConfigError::InvalidBaseUrl(_))
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            AnthropicConfig::new(" ").validate(),
            Err(ConfigError::EmptyModel)
        ));
        assert!(matches!(
            AnthropicConfig::new("m").thinking(500).validate(),
            Err(ConfigError::ThinkingBudget(500))
        ));
    }
}
