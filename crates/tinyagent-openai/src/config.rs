//! [`OpenAiConfig`]: where the server is, which model, and how requests are made.

use std::ops::{Deref, DerefMut};

pub use tinyagent_http::ConfigError;
use tinyagent_http::{HttpSettings, ProviderSettings};

use crate::info::{DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};

/// Which request field carries the token limit of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum MaxTokensField {
    /// `max_completion_tokens` for OpenAI's own API (its newer models reject `max_tokens`),
    /// `max_tokens` for every other server (what Ollama, llama.cpp and older vLLM read).
    #[default]
    Auto,
    /// Always `max_tokens`.
    MaxTokens,
    /// Always `max_completion_tokens`.
    MaxCompletionTokens,
}

/// How to reach an OpenAI-compatible Chat Completions server, and how to talk to it.
///
/// Build one in code ([`OpenAiConfig::new`] and the setters) or from the environment
/// ([`OpenAiConfig::from_env`]), then make the model with
/// [`OpenAiModel::new`](crate::OpenAiModel::new). The settings every provider has (base URL,
/// key, model, token limit, [`HttpSettings`]) are its [`settings`](Self::settings), which it
/// reads as: `config.model` is `config.settings.model`. The API key is never printed by
/// `Debug`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_openai::{HttpConfig, OpenAiConfig, OpenAiModel};
///
/// let config = OpenAiConfig::new("qwen2.5:7b")
///     .base_url("http://localhost:11434/v1")   // Ollama; no key needed
///     .max_retries(3)
///     .first_byte_timeout(Duration::from_secs(120));
/// assert_eq!(config.http.max_retries, 3);
/// let model = OpenAiModel::new(config)?;
/// assert_eq!(tinyagent::Model::name(&model), "qwen2.5:7b");
/// # Ok::<(), tinyagent_openai::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct OpenAiConfig {
    /// Where the server is, the key (sent as `Authorization: Bearer …` when set), the model,
    /// the token limit sent when a request sets none (`max_tokens` or
    /// `max_completion_tokens`, see [`max_tokens_field`](Self::max_tokens_field); `None`
    /// leaves it to the server) and how requests are made. Requests go to
    /// `{base_url}/chat/completions`.
    pub settings: ProviderSettings,
    /// Send tool schemas in OpenAI's strict dialect (`"strict": true`, through
    /// [`tinyagent::tools::schema::strict_schema`]). A tool whose schema has a map in it cannot be
    /// strict and is sent with `"strict": false`. Off by default: few other servers know it.
    pub strict_tools: bool,
    /// `parallel_tool_calls` sent with requests that offer tools; `None` leaves the server's
    /// default (which, for OpenAI, is to allow them).
    pub parallel_tool_calls: Option<bool>,
    /// Ask for token usage at the end of a stream (`stream_options.include_usage`); on by
    /// default.
    pub stream_usage: bool,
    /// Which field carries the token limit.
    pub max_tokens_field: MaxTokensField,
}

/// The configuration reads as its [`ProviderSettings`]: `config.base_url`, `config.api_key`,
/// `config.model`, `config.max_tokens` and `config.http` are theirs.
impl Deref for OpenAiConfig {
    type Target = ProviderSettings;

    fn deref(&self) -> &ProviderSettings {
        &self.settings
    }
}

impl DerefMut for OpenAiConfig {
    fn deref_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
    }
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl OpenAiConfig {
    /// A configuration for this model on OpenAI's API, without a key, with the default
    /// [`HttpSettings`] and a token limit of [`DEFAULT_MAX_TOKENS`].
    pub fn new(model: impl Into<String>) -> Self {
        let mut settings = ProviderSettings::new(DEFAULT_BASE_URL, model);
        settings.max_tokens = Some(DEFAULT_MAX_TOKENS);
        Self {
            settings,
            strict_tools: false,
            parallel_tool_calls: None,
            stream_usage: true,
            max_tokens_field: MaxTokensField::Auto,
        }
    }

    /// The configuration the environment gives: [`ENV_BASE_URL`](crate::ENV_BASE_URL)
    /// (default [`DEFAULT_BASE_URL`]), [`ENV_API_KEY`](crate::ENV_API_KEY) (optional) and
    /// [`ENV_MODEL`](crate::ENV_MODEL) (default [`DEFAULT_MODEL`]), read as [`ProviderSettings::read_env`] says; fails with
    /// [`ConfigError::NotConfigured`] when neither the key nor the base URL is set.
    pub fn from_env() -> Result<Self, ConfigError> {
        tinyagent_http::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`from_env`](Self::from_env), reading variables through `lookup` (for tests, or
    /// a configuration file).
    ///
    /// ```
    /// use tinyagent_openai::OpenAiConfig;
    ///
    /// let config = OpenAiConfig::from_lookup(|name| match name {
    ///     "OPENAI_BASE_URL" => Some("http://localhost:8080/v1".to_owned()),
    ///     "OPENAI_MODEL" => Some("local".to_owned()),
    ///     _ => None,
    /// })?;
    /// assert_eq!(config.base_url, "http://localhost:8080/v1");
    /// assert_eq!(config.api_key, None);
    /// assert!(OpenAiConfig::from_lookup(|_| None).is_err());
    /// # Ok::<(), tinyagent_openai::ConfigError>(())
    /// ```
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        tinyagent_http::from_lookup(lookup)
    }

    /// Sends tool schemas in the strict dialect (see [`strict_tools`](Self::strict_tools)).
    #[must_use]
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Sets `parallel_tool_calls` for requests that offer tools.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Whether to ask for usage at the end of a stream.
    #[must_use]
    pub fn stream_usage(mut self, stream_usage: bool) -> Self {
        self.stream_usage = stream_usage;
        self
    }

    /// Chooses the field of the token limit.
    #[must_use]
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }

    /// Sets the token limit sent when a request sets none (`None`: send none; see
    /// [`ProviderSettings::max_tokens`]).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: impl Into<Option<u32>>) -> Self {
        self.settings.max_tokens = max_tokens.into();
        self
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

    /// Sets how requests are made (see [`HttpSettings`]; its setters also work on the
    /// configuration itself, through [`HttpConfig`](crate::HttpConfig)).
    #[must_use]
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.settings.http = http;
        self
    }

    /// The URL requests are posted to: the [base URL](ProviderSettings::base) and
    /// `/chat/completions`.
    pub fn endpoint(&self) -> String {
        self.settings.url("/chat/completions")
    }

    /// Whether the base URL is OpenAI's own API.
    pub(crate) fn is_openai(&self) -> bool {
        let base = self.settings.base();
        let rest = base.split_once("://").map_or(base, |(_, r)| r);
        let host = rest.split(['/', ':']).next().unwrap_or_default();
        host.eq_ignore_ascii_case("api.openai.com")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_configuration() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(matches!(
            OpenAiConfig::from_lookup(env(&[("OPENAI_MODEL", "x")])),
            Err(ConfigError::NotConfigured { .. })
        ));
        let c =
            OpenAiConfig::from_lookup(env(&[("OPENAI_API_KEY", "sk-1"), ("OPENAI_BASE_URL", "")]))
                .unwrap();
        assert_eq!(c.base_url, DEFAULT_BASE_URL);
        assert_eq!(c.model, DEFAULT_MODEL);
        assert_eq!(c.api_key.as_deref(), Some("sk-1"));
        assert!(c.is_openai());
        assert!(!format!("{c:?}").contains("sk-1"));
        let c = OpenAiConfig::from_lookup(env(&[
            ("OPENAI_BASE_URL", "http://localhost:11434/v1/"),
            ("OPENAI_MODEL", "qwen2.5"),
        ]))
        .unwrap();
        assert_eq!(c.endpoint(), "http://localhost:11434/v1/chat/completions");
        assert!(!c.is_openai());
        assert_eq!(c.api_key, None);
    }

    #[test]
    fn validation() {
        let check = |c: OpenAiConfig| tinyagent_http::check(&c);
        assert!(check(OpenAiConfig::new("m")).is_ok());
        for bad in ["localhost:8080", "ftp://x", "http://", ""] {
            assert!(
                matches!(
                    check(OpenAiConfig::new("m").base_url(bad)),
                    Err(ConfigError::InvalidBaseUrl { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            check(OpenAiConfig::new(" ")),
            Err(ConfigError::InvalidModel { .. })
        ));
    }

    #[test]
    fn the_base_url_is_used_as_every_provider_uses_it() {
        // Whitespace around it and trailing slashes are not part of it (this configuration
        // once kept the whitespace, where the other providers dropped it).
        let c = OpenAiConfig::new("m").base_url(" http://localhost:11434/v1// ");
        assert_eq!(c.endpoint(), "http://localhost:11434/v1/chat/completions");
        assert_eq!(c.endpoint(), c.settings.url("/chat/completions"));
        let c = OpenAiConfig::new("m").base_url(" https://api.openai.com/v1/ ");
        assert!(c.is_openai());
        let r = crate::ResponsesConfig::new("m").base_url("\thttp://h:8080/v1/ ");
        assert_eq!(r.endpoint(), "http://h:8080/v1/responses");
    }

    #[test]
    fn the_settings_are_read_through_the_configuration() {
        let mut c = OpenAiConfig::new("m").api_key("sk-secret").max_tokens(7);
        assert_eq!((c.model.as_str(), c.max_tokens), ("m", Some(7)));
        assert_eq!(c.key(), Some("sk-secret"));
        c.model = "n".to_owned();
        assert_eq!(c.settings.model, "n");
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("sk-secret") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
