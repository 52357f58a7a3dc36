//! [`AnthropicConfig`]: where the API is, which model, and how requests are made.

use std::ops::{Deref, DerefMut};

pub use tinyagent_http::ConfigError;
use tinyagent_http::{HttpSettings, ProviderSettings};

use crate::info::{DEFAULT_BASE_URL, DEFAULT_MAX_TOKENS, DEFAULT_MODEL};

/// How to reach the Anthropic Messages API, and how to talk to it.
///
/// Build one in code ([`AnthropicConfig::new`] and the setters) or from the environment
/// ([`AnthropicConfig::from_env`]), then make the model with
/// [`AnthropicModel::new`](crate::AnthropicModel::new). The settings every provider has
/// (base URL, key, model, token limit, [`HttpSettings`]) are its
/// [`settings`](Self::settings), which it reads as: `config.model` is
/// `config.settings.model`. The API key is never printed by `Debug`.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_anthropic::{AnthropicConfig, AnthropicModel, HttpConfig};
///
/// let config = AnthropicConfig::new("claude-sonnet-4-5")
///     .api_key("sk-ant-...")
///     .prompt_caching(true)          // cache the instruction and the tool definitions
///     .thinking_tokens(2048)         // extended thinking, 2048 tokens for it
///     .max_retries(3)
///     .first_byte_timeout(Duration::from_secs(120));
/// let model = AnthropicModel::new(config)?;
/// assert_eq!(tinyagent::Model::name(&model), "claude-sonnet-4-5");
/// # Ok::<(), tinyagent_anthropic::ConfigError>(())
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AnthropicConfig {
    /// Where the API is, the key (sent as `x-api-key` when set), the model, the token limit
    /// sent when a request sets none (the API requires one, so `None` sends
    /// [`DEFAULT_MAX_TOKENS`]) and how requests are made. Requests go to
    /// `{base_url}/v1/messages` (a base URL that already ends in `/v1` gets `/messages`).
    pub settings: ProviderSettings,
    /// Extended thinking: the token budget (at least 1024) sent as
    /// `thinking: {"type": "enabled", "budget_tokens": n}`; `None` for none. The thinking
    /// blocks come back as [`Part::Reasoning`](tinyagent::Part::Reasoning) and are sent
    /// back in the history, signed, as the API requires.
    pub thinking_tokens: Option<u32>,
    /// Put a prompt-caching breakpoint (`cache_control: {"type": "ephemeral"}`) on the
    /// instruction.
    pub cache_instruction: bool,
    /// Put a prompt-caching breakpoint on the last tool definition (which caches them all).
    pub cache_tools: bool,
    /// Ask for one tool call at most per reply (`disable_parallel_tool_use`).
    pub disable_parallel_tool_use: bool,
}

/// The configuration reads as its [`ProviderSettings`]: `config.base_url`, `config.api_key`,
/// `config.model`, `config.max_tokens` and `config.http` are theirs.
impl Deref for AnthropicConfig {
    type Target = ProviderSettings;

    fn deref(&self) -> &ProviderSettings {
        &self.settings
    }
}

impl DerefMut for AnthropicConfig {
    fn deref_mut(&mut self) -> &mut ProviderSettings {
        &mut self.settings
    }
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self::new(DEFAULT_MODEL)
    }
}

impl AnthropicConfig {
    /// A configuration for this model on Anthropic's API, without a key, with the default
    /// [`HttpSettings`], a token limit of [`DEFAULT_MAX_TOKENS`], no thinking and no prompt
    /// caching.
    pub fn new(model: impl Into<String>) -> Self {
        let mut settings = ProviderSettings::new(DEFAULT_BASE_URL, model);
        settings.max_tokens = Some(DEFAULT_MAX_TOKENS);
        Self {
            settings,
            thinking_tokens: None,
            cache_instruction: false,
            cache_tools: false,
            disable_parallel_tool_use: false,
        }
    }

    /// The configuration the environment gives: [`ENV_API_KEY`](crate::ENV_API_KEY),
    /// [`ENV_BASE_URL`](crate::ENV_BASE_URL) (default [`DEFAULT_BASE_URL`]) and
    /// [`ENV_MODEL`](crate::ENV_MODEL) (default [`DEFAULT_MODEL`]). Empty variables count as
    /// unset ([`ProviderSettings::read_env`]).
    ///
    /// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is
    /// set (a gateway in front of the API may need no key).
    pub fn from_env() -> Result<Self, ConfigError> {
        tinyagent_http::from_lookup(|name| std::env::var(name).ok())
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
        tinyagent_http::from_lookup(lookup)
    }

    /// Sets the token limit sent when a request sets none (`None`: [`DEFAULT_MAX_TOKENS`]).
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: impl Into<Option<u32>>) -> Self {
        self.settings.max_tokens = max_tokens.into();
        self
    }

    /// Turns extended thinking on with this many tokens for it (at least 1024; the API's
    /// `budget_tokens`), or off with `None`. The token limit sent is raised above it when it
    /// is not already.
    #[must_use]
    pub fn thinking_tokens(mut self, tokens: impl Into<Option<u32>>) -> Self {
        self.thinking_tokens = tokens.into();
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

    /// Sets how requests are made (see [`HttpSettings`]).
    #[must_use]
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.settings.http = http;
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

    /// The URL requests are posted to: the [base URL](ProviderSettings::base) and
    /// `/v1/messages`, or `/messages` when it already ends in `/v1`.
    pub fn endpoint(&self) -> String {
        let base = self.settings.base();
        if base.ends_with("/v1") {
            format!("{base}/messages")
        } else {
            format!("{base}/v1/messages")
        }
    }
}

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
            Err(ConfigError::NotConfigured { .. })
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
        let check = |c: AnthropicConfig| tinyagent_http::check(&c);
        assert!(check(AnthropicConfig::new("m")).is_ok());
        for bad in ["api.anthropic.com", "ftp://x", "http://", ""] {
            assert!(
                matches!(
                    check(AnthropicConfig::new("m").base_url(bad)),
                    Err(ConfigError::InvalidBaseUrl { .. })
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            check(AnthropicConfig::new(" ")),
            Err(ConfigError::InvalidModel { .. })
        ));
        assert!(matches!(
            check(AnthropicConfig::new("m").thinking_tokens(500)),
            Err(ConfigError::InvalidSetting {
                setting: "thinking_tokens",
                ..
            })
        ));
    }

    #[test]
    fn the_base_url_is_used_as_every_provider_uses_it() {
        let c = AnthropicConfig::new("m").base_url(" https://gw.example/v1// ");
        assert_eq!(c.endpoint(), "https://gw.example/v1/messages");
        let c = AnthropicConfig::new("m").base_url("https://api.anthropic.com/ ");
        assert_eq!(c.endpoint(), "https://api.anthropic.com/v1/messages");
        assert_eq!(c.endpoint(), c.settings.url("/v1/messages"));
    }
}
