//! [`GeminiConfig`]: where the API is, which model, and how requests are made.

use std::ops::{Deref, DerefMut};

pub use tinyagent_http::ConfigError;
use tinyagent_http::{HttpSettings, ProviderSettings};

use crate::info::{DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};

/// How to reach the Gemini API, and how to talk to it.
///
/// Build one in code ([`GeminiConfig::new`] and the setters) or from the environment
/// ([`GeminiConfig::from_env`]), then make the model with
/// [`GeminiModel::new`](crate::GeminiModel::new). The settings every provider has (base URL,
/// key, model, token limit, [`HttpSettings`]) are its [`settings`](Self::settings), which it
/// reads as: `config.model` is `config.settings.model`. The API key is never printed by
/// `Debug`.
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
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GeminiConfig {
    /// Where the API is (up to the API version), the key (sent as `x-goog-api-key` when set),
    /// the model (with or without the `models/` prefix), the token limit
    /// (`generationConfig.maxOutputTokens`) sent when a request sets none (`None` leaves it to
    /// the API) and how requests are made. Requests go to
    /// `{base_url}/models/{model}:generateContent` (`:streamGenerateContent?alt=sse`).
    pub settings: ProviderSettings,
}

/// The configuration reads as its [`ProviderSettings`]: `config.base_url`, `config.api_key`,
/// `config.model`, `config.max_tokens` and `config.http` are theirs.
impl Deref for GeminiConfig {
    type Target = ProviderSettings;

    fn deref(&self) -> &ProviderSettings {
        &self.settings
    }
}

impl DerefMut for GeminiConfig {
    fn deref_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
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
        let mut settings = ProviderSettings::new(DEFAULT_BASE_URL, model);
        settings.max_tokens = Some(DEFAULT_MAX_TOKENS);
        Self { settings }
    }

    /// The configuration the environment gives: [`ENV_API_KEY`](crate::ENV_API_KEY),
    /// [`ENV_BASE_URL`](crate::ENV_BASE_URL) (default [`DEFAULT_BASE_URL`]) and
    /// [`ENV_MODEL`](crate::ENV_MODEL) (default [`DEFAULT_MODEL`]). Empty variables count as
    /// unset ([`ProviderSettings::read_env`]). Fails with
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
        self.settings.max_tokens = max_tokens.into();
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

    /// The URL of a complete answer: `{base_url}/models/{model}:generateContent` (the
    /// [base URL](ProviderSettings::base) as every provider uses it).
    pub fn endpoint(&self) -> String {
        self.settings
            .url(&format!("/{}:generateContent", self.model_path()))
    }

    /// The URL of a streamed answer: `{base_url}/models/{model}:streamGenerateContent?alt=sse`.
    pub fn stream_endpoint(&self) -> String {
        self.settings.url(&format!(
            "/{}:streamGenerateContent?alt=sse",
            self.model_path()
        ))
    }

    /// Sets the base URL.
    #[must_use]
    pub fn base_url(mut self, base_url: impl Into<String>) -> Self {
        self.settings.base_url = base_url.into();
        self
    }

    /// Sets the API key.
    #[must_use]
    pub fn api_key(mut self, api_key: impl Into<String>) -> Self {
        self.settings.api_key = Some(api_key.into());
        self
    }

    /// Sets the model name.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.settings.model = model.into();
        self
    }

    /// Sets how requests are made (see [`HttpSettings`]).
    #[must_use]
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.settings.http = http;
        self
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
        let check = |c: GeminiConfig| tinyagent_http::check(&c);
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

    #[test]
    fn the_base_url_is_used_as_every_provider_uses_it() {
        let c = GeminiConfig::new("gemini-2.5-flash").base_url(" http://127.0.0.1:9/v1beta// ");
        assert_eq!(
            c.endpoint(),
            "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            c.stream_endpoint(),
            c.settings
                .url("/models/gemini-2.5-flash:streamGenerateContent?alt=sse")
        );
    }
}
