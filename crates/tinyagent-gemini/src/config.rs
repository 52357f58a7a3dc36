//! [`GeminiConfig`]: where the API is, which model, and how requests are made.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

/// The environment variable holding the API key, sent as `x-goog-api-key`.
pub const ENV_API_KEY: &str = "GEMINI_API_KEY";
/// The environment variable holding the base URL, such as
/// `https://generativelanguage.googleapis.com/v1beta`.
pub const ENV_BASE_URL: &str = "GEMINI_BASE_URL";
/// The environment variable holding the model name, such as `gemini-2.5-flash`.
pub const ENV_MODEL: &str = "GEMINI_MODEL";

/// Google's base URL for the Gemini API, the default.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// The model used when none is configured.
pub const DEFAULT_MODEL: &str = "gemini-2.5-flash";
/// The token limit (`maxOutputTokens`) sent when a request sets none.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// Why a configuration could not be made into a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Neither `GEMINI_API_KEY` nor `GEMINI_BASE_URL` is set.
    #[error(
        "no Gemini model is configured: set GEMINI_API_KEY (and optionally GEMINI_MODEL, \
         default {DEFAULT_MODEL}, and GEMINI_BASE_URL for a gateway)"
    )]
    NotConfigured,
    /// The base URL is not an `http://` or `https://` URL.
    #[error(
        "invalid base URL {0:?}: expected an http:// or https:// URL such as {DEFAULT_BASE_URL}"
    )]
    InvalidBaseUrl(String),
    /// The model name is empty, or has characters a URL path segment cannot.
    #[error("invalid model name {0:?}: set it with `model(..)` or GEMINI_MODEL")]
    InvalidModel(String),
    /// The HTTP client could not be built (a header value that is not valid, for example).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

/// How to reach the Gemini API, and how to talk to it.
///
/// Build one in code ([`GeminiConfig::new`] and the setters) or from the environment
/// ([`GeminiConfig::from_env`]), then make the model with
/// [`GeminiModel::new`](crate::GeminiModel::new). The API key is never printed by `Debug`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_gemini::{GeminiConfig, GeminiModel};
///
/// let config = GeminiConfig::new("gemini-2.5-flash")
///     .api_key("AIza...")
///     .max_retries(3)
///     .first_byte_timeout(Duration::from_secs(120));
/// let model = GeminiModel::new(config)?;
/// assert_eq!(tinyagent::Model::name(&model), "gemini-2.5-flash");
/// # Ok::<(), tinyagent_gemini::ConfigError>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// The base URL, up to the API version; requests go to
    /// `{base_url}/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`).
    pub base_url: String,
    /// The API key, sent as `x-goog-api-key` when set.
    pub api_key: Option<String>,
    /// The model name (with or without the `models/` prefix).
    pub model: String,
    /// The token limit (`generationConfig.maxOutputTokens`) sent when a request sets none;
    /// `None` leaves it to the API.
    pub max_tokens: Option<u32>,
    /// How often a failed request (429, 5xx, a connection failure or timeout, a cut
    /// stream) is retried.
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
    /// Extra HTTP headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Extra top-level fields merged into every request body (`safetySettings`,
    /// `cachedContent`…); they override the provider's fields of the same name.
    pub extra_body: Map<String, Value>,
}

impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiConfig")
            .field("base_url", &tinyagent::redact::url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("max_retries", &self.max_retries)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field(
                "headers",
                &self.headers.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            )
            .field("extra_body", &self.extra_body)
            .finish_non_exhaustive()
    }
}

impl Default for GeminiConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl GeminiConfig {
    /// A configuration for this model on Google's API, without a key, with the defaults of
    /// the other HTTP providers: 2 retries from 500 ms backoff (at most 30 s), `retry-after`
    /// honoured up to 60 s, 10 s to connect, 60 s to the first byte and between events, 600 s
    /// for a whole call, a token limit of [`DEFAULT_MAX_TOKENS`] and replies of at most 16 MiB.
    pub fn new(model: impl Into<String>) -> Self {
        let limits = tinyagent_http::Limits::default();
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            max_retries: limits.max_retries,
            initial_backoff: limits.initial_backoff,
            max_backoff: limits.max_backoff,
            max_retry_after: limits.max_retry_after,
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: limits.first_byte_timeout,
            idle_timeout: limits.idle_timeout,
            request_timeout: limits.request_timeout,
            max_reply_bytes: limits.max_reply_bytes,
            headers: Vec::new(),
            extra_body: Map::new(),
        }
    }

    /// The configuration the environment gives: [`ENV_API_KEY`], [`ENV_BASE_URL`] (default
    /// [`DEFAULT_BASE_URL`]) and [`ENV_MODEL`] (default [`DEFAULT_MODEL`]). Empty variables
    /// count as unset. Fails with [`ConfigError::NotConfigured`] when neither the key nor the
    /// base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup`.
    ///
    /// ```
    /// use tinyagent_gemini::GeminiConfig;
    ///
    /// let config = GeminiConfig::from_lookup(|name| match name {
    ///     "GEMINI_API_KEY" => Some("AIza-test".to_owned()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.model, "gemini-2.5-flash");
    /// assert!(GeminiConfig::from_lookup(|_| None).is_err());
    /// # Ok::<(), tinyagent_gemini::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let env = tinyagent_http::env_settings(lookup, [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL])
            .ok_or(ConfigError::NotConfigured)?;
        let mut config = Self::new(env.model.unwrap_or_else(|| DEFAULT_MODEL.to_owned()));
        config.base_url = env.base_url.unwrap_or(config.base_url);
        config.api_key = env.api_key;
        Ok(config)
    }

    /// Sets the token limit sent when a request sets none (`None`: send none).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: impl Into<Option<u32>>) -> Self {
        self.max_tokens = max_tokens.into();
        self
    }

    /// The model's path segment: `models/{model}`.
    fn model_path(&self) -> String {
        let model = self.model.trim();
        if model.starts_with("models/") || model.starts_with("tunedModels/") {
            model.to_owned()
        } else {
            format!("models/{model}")
        }
    }

    /// The URL of a complete answer: `{base_url}/models/{model}:generateContent`.
    pub fn endpoint(&self) -> String {
        format!(
            "{}/{}:generateContent",
            self.base_url.trim().trim_end_matches('/'),
            self.model_path()
        )
    }

    /// The URL of a streamed answer: `{base_url}/models/{model}:streamGenerateContent?alt=sse`.
    pub fn stream_endpoint(&self) -> String {
        format!(
            "{}/{}:streamGenerateContent?alt=sse",
            self.base_url.trim().trim_end_matches('/'),
            self.model_path()
        )
    }

    /// The limits the shared transport runs a call within.
    pub(crate) fn limits(&self) -> tinyagent_http::Limits {
        let mut limits = self.transport_limits();
        limits.max_tokens = self.max_tokens;
        limits
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !tinyagent_http::is_http_url(&self.base_url) {
            return Err(ConfigError::InvalidBaseUrl(self.base_url.clone()));
        }
        let model = self.model.trim();
        let ok = |c: char| c.is_ascii_alphanumeric() || "-_./@".contains(c);
        if model.is_empty() || !model.chars().all(ok) {
            return Err(ConfigError::InvalidModel(self.model.clone()));
        }
        Ok(())
    }
}

tinyagent_http::transport_setters!(GeminiConfig);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_and_validation() {
        let c = GeminiConfig::new("gemini-2.5-flash");
        assert_eq!(
            c.endpoint(),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            c.clone()
                .model("models/x")
                .base_url("http://h/v1beta/")
                .stream_endpoint(),
            "http://h/v1beta/models/x:streamGenerateContent?alt=sse"
        );
        assert!(c.validate().is_ok());
        assert!(matches!(
            GeminiConfig::new("a b").validate(),
            Err(ConfigError::InvalidModel(_))
        ));
        assert!(matches!(
            GeminiConfig::new("m").base_url("x").validate(),
            Err(ConfigError::InvalidBaseUrl(_))
        ));
        assert!(!format!("{:?}", c.api_key("AIza-secret")).contains("AIza-secret"));
    }
}
