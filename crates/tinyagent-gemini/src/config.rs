//! [`GeminiConfig`]: where the API is, which model, and how requests are made.

use std::fmt;

use serde_json::Value;
use tinyagent::ModelRequest;
use tinyagent::model::SamplingOption;
pub use tinyagent_http::ConfigError;
use tinyagent_http::{Common, HttpSettings, Provider, ProviderInfo};

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

/// How to reach the Gemini API, and how to talk to it.
///
/// Build one in code ([`GeminiConfig::new`] and the setters) or from the environment
/// ([`GeminiConfig::from_env`]), then make the model with
/// [`GeminiModel::new`](crate::GeminiModel::new). The API key is never printed by `Debug`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_gemini::{GeminiConfig, GeminiModel, HttpConfig};
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
    /// How requests are made: retries, timeouts, sizes, extra headers and body fields.
    pub http: HttpSettings,
}

impl fmt::Debug for GeminiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (url, key) = (&self.base_url, self.api_key.as_ref());
        tinyagent_http::debug_config(f, "GeminiConfig", url, key, &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("http", &self.http)
            .finish()
    }
}

impl Default for GeminiConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl GeminiConfig {
    /// A configuration for this model on Google's API, without a key, with the default
    /// [`HttpSettings`] and a token limit of [`DEFAULT_MAX_TOKENS`].
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: model.into(),
            max_tokens: Some(DEFAULT_MAX_TOKENS),
            http: HttpSettings::default(),
        }
    }

    /// The configuration the environment gives: [`ENV_API_KEY`], [`ENV_BASE_URL`] (default
    /// [`DEFAULT_BASE_URL`]) and [`ENV_MODEL`] (default [`DEFAULT_MODEL`]). Empty variables
    /// count as unset ([`tinyagent_http::from_lookup`]). Fails with
    /// [`ConfigError::NotConfigured`] when neither the key nor the base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        tinyagent_http::from_lookup(|name| std::env::var(name).ok())
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
        tinyagent_http::from_lookup(lookup)
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

    /// Sets the base URL.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into();
        self
    }

    /// Sets the API key.
    #[must_use]
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.api_key = Some(api_key.into());
        self
    }

    /// Sets the model name.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }

    /// Sets how requests are made (see [`HttpSettings`]).
    #[must_use]
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.http = http;
        self
    }
}

impl Provider for GeminiConfig {
    const INFO: ProviderInfo = ProviderInfo::new(
        [ENV_API_KEY, ENV_BASE_URL, ENV_MODEL],
        "set GEMINI_API_KEY (and optionally GEMINI_MODEL, default gemini-2.5-flash, and \
         GEMINI_BASE_URL for a gateway)",
        DEFAULT_BASE_URL,
        concat!("tinyagent-gemini/", env!("CARGO_PKG_VERSION")),
    )
    .provider("gcp.gemini")
    .key_header("x-goog-api-key")
    .rejected_hint("a bad parameter or tool schema")
    .sampling(&SamplingOption::ALL);

    fn common(&mut self) -> Common<'_> {
        let Self {
            base_url,
            api_key,
            model,
            max_tokens,
            http,
        } = self;
        Common::new(base_url, api_key, model, max_tokens, http)
    }

    /// The name goes into the URL path.
    fn check(&self) -> Result<(), ConfigError> {
        let ok = |c: char| c.is_ascii_alphanumeric() || "-_./@".contains(c);
        if self.model.trim().chars().all(ok) {
            return Ok(());
        }
        Err(ConfigError::InvalidModel {
            model: self.model.clone(),
            reason: format!(
                "only letters, digits and -_./@ are allowed: set it with `model(..)` or {ENV_MODEL}"
            ),
        })
    }

    fn endpoints(&self) -> [String; 2] {
        [self.endpoint(), self.stream_endpoint()]
    }

    /// The same body for both endpoints.
    fn request_body(&self, req: &ModelRequest, _stream: bool) -> Value {
        crate::wire::request_body(self, req)
    }
}

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
        let check = |mut c: GeminiConfig| tinyagent_http::check(&mut c);
        assert!(check(c.clone()).is_ok());
        assert!(matches!(
            check(GeminiConfig::new("a b")),
            Err(ConfigError::InvalidModel { .. })
        ));
        assert!(matches!(
            check(GeminiConfig::new("m").base_url("x")),
            Err(ConfigError::InvalidBaseUrl { .. })
        ));
        assert!(!format!("{:?}", c.api_key("AIza-secret")).contains("AIza-secret"));
    }
}
