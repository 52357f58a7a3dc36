//! [`Provider`]: what sets one provider's configuration apart (its variables, defaults,
//! headers, endpoints and request body), and what every configuration does alike with it:
//! reading the environment ([`from_lookup`]), checking itself, printing itself without its key.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tinyagent::ModelRequest;
use tinyagent::model::SamplingOption;

use crate::{ConfigError, HttpConfig, HttpSettings, Protocol};

/// A provider's names and defaults: its environment variables, its own base URL, how its key
/// is sent, the headers every request carries.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ProviderInfo {
    /// The variables of the key, the base URL and the model, in this order.
    pub env: [&'static str; 3],
    /// What to set when none of them is ([`ConfigError::NotConfigured`]).
    pub not_configured: &'static str,
    /// The provider's own base URL, the example of a valid one.
    pub default_base_url: &'static str,
    /// The `User-Agent` of its requests.
    pub user_agent: &'static str,
    /// The header that carries the key, and what comes before the key in it (`Bearer `).
    pub key_header: (&'static str, &'static str),
    /// Headers every request carries besides the key (an API version).
    pub headers: &'static [(&'static str, &'static str)],
    /// The token limit the API applies when a request sends none (the one named in the
    /// error of a reply that grows too large).
    pub implied_max_tokens: Option<u32>,
    /// What a request the API rejects most often gets wrong (said in the error of a 4xx
    /// with no words of its own); empty for nothing.
    pub rejected_hint: &'static str,
    /// The sampling options the API takes ([`Model::supports`](tinyagent::Model::supports));
    /// only the temperature until [`sampling`](Self::sampling) says more.
    pub sampling: &'static [SamplingOption],
    /// Who serves the API, in OpenTelemetry's words (`gen_ai.provider.name`); `None` until
    /// [`provider`](Self::provider) says.
    pub provider: Option<&'static str>,
}

impl ProviderInfo {
    /// A provider with these environment variables (key, base URL, model), the help of
    /// [`ConfigError::NotConfigured`], its own base URL and its user agent; its key is sent
    /// as `Authorization: Bearer …` until [`key_header`](Self::key_header) says otherwise.
    pub const fn new(
        env: [&'static str; 3],
        not_configured: &'static str,
        default_base_url: &'static str,
        user_agent: &'static str,
    ) -> Self {
        Self {
            env,
            not_configured,
            default_base_url,
            user_agent,
            key_header: ("authorization", "Bearer "),
            headers: &[],
            implied_max_tokens: None,
            rejected_hint: "",
            sampling: &[SamplingOption::Temperature],
            provider: None,
        }
    }

    /// Names who serves the API, as OpenTelemetry's GenAI conventions do (`"openai"`,
    /// `"anthropic"`, `"gcp.gemini"`): the `gen_ai.provider.name` of its model calls.
    #[must_use]
    pub const fn provider(mut self, name: &'static str) -> Self {
        self.provider = Some(name);
        self
    }

    /// Takes these sampling options (the request body sends each one a request sets).
    #[must_use]
    pub const fn sampling(mut self, options: &'static [SamplingOption]) -> Self {
        self.sampling = options;
        self
    }

    /// Sends the key in the header `name`, as it is.
    #[must_use]
    pub const fn key_header(mut self, name: &'static str) -> Self {
        self.key_header = (name, "");
        self
    }

    /// Sends these headers with every request.
    #[must_use]
    pub const fn headers(mut self, headers: &'static [(&'static str, &'static str)]) -> Self {
        self.headers = headers;
        self
    }

    /// Says what a rejected request most often gets wrong.
    #[must_use]
    pub const fn rejected_hint(mut self, hint: &'static str) -> Self {
        self.rejected_hint = hint;
        self
    }

    /// Names this token limit when a request sends none.
    #[must_use]
    pub const fn implied_max_tokens(mut self, max_tokens: u32) -> Self {
        self.implied_max_tokens = Some(max_tokens);
        self
    }
}

/// The settings every provider's configuration has, borrowed to be read or changed.
#[non_exhaustive]
pub struct Common<'a> {
    /// The base URL.
    pub base_url: &'a mut String,
    /// The API key.
    pub api_key: &'a mut Option<String>,
    /// The model name.
    pub model: &'a mut String,
    /// The token limit sent when a request sets none.
    pub max_tokens: &'a mut Option<u32>,
    /// How requests are made.
    pub http: &'a mut HttpSettings,
}

impl<'a> Common<'a> {
    /// The settings, from a configuration's fields.
    pub fn new(
        base_url: &'a mut String,
        api_key: &'a mut Option<String>,
        model: &'a mut String,
        max_tokens: &'a mut Option<u32>,
        http: &'a mut HttpSettings,
    ) -> Self {
        Self {
            base_url,
            api_key,
            model,
            max_tokens,
            http,
        }
    }

    /// The key when one is set (an empty one counts as none).
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.is_empty())
    }
}

/// A provider's configuration, as the shared [`HttpModel`](crate::HttpModel) needs it: its
/// [`ProviderInfo`], its [`Common`] settings, the checks of its own, its endpoints and the
/// body of a request. Its [`Protocol`] is how the server's answers are read. The
/// [`HttpConfig`] setters come with it.
///
/// Its [`Default`] is the provider's default model on its own API.
pub trait Provider: Protocol + Default + Clone + fmt::Debug + 'static {
    /// The provider's names and defaults.
    const INFO: ProviderInfo;

    /// The settings every provider has.
    fn common(&mut self) -> Common<'_>;

    /// Checks the settings that are the provider's own (the base URL and the model name are
    /// checked already).
    fn check(&self) -> Result<(), ConfigError> {
        Ok(())
    }

    /// The URLs of a complete answer and of a streamed one.
    fn endpoints(&self) -> [String; 2];

    /// The JSON body of `req` (`stream` chooses the streaming form).
    fn request_body(&self, req: &ModelRequest, stream: bool) -> Value;
}

impl<C: Provider> HttpConfig for C {
    fn http_settings(&mut self) -> &mut HttpSettings {
        self.common().http
    }
}

/// The configuration of provider `C` that the environment gives through `lookup`: the
/// variables of [`ProviderInfo::env`], trimmed, empty ones counted as unset; the model
/// and the base URL default to `C::default()`'s.
///
/// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is set,
/// so a program can tell the user what to set instead of calling the API without a key.
pub fn from_lookup<C: Provider>(lookup: impl Fn(&str) -> Option<String>) -> Result<C, ConfigError> {
    let env = crate::env_settings(lookup, C::INFO.env).ok_or(ConfigError::NotConfigured {
        help: C::INFO.not_configured,
    })?;
    let mut config = C::default();
    let common = config.common();
    *common.model = env.model.unwrap_or_else(|| common.model.clone());
    *common.base_url = env.base_url.unwrap_or_else(|| common.base_url.clone());
    *common.api_key = env.api_key;
    Ok(config)
}

/// Checks a configuration: its base URL, its model name, then [`Provider::check`].
pub fn check<C: Provider>(config: &mut C) -> Result<(), ConfigError> {
    let common = config.common();
    crate::check_base_url_and_model(
        common.base_url,
        C::INFO.default_base_url,
        common.model,
        C::INFO.env[2],
    )?;
    config.check()
}

/// The headers of a provider's requests: its key (marked sensitive) when one is set, then
/// the provider's own.
pub(crate) fn headers<C: Provider>(key: Option<&str>) -> Result<HeaderMap, String> {
    let mut headers = HeaderMap::new();
    if let Some(key) = key {
        let (name, prefix) = C::INFO.key_header;
        headers.insert(name, crate::key_header(&format!("{prefix}{key}"))?);
    }
    for (name, value) in C::INFO.headers {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    Ok(headers)
}

/// The start of a configuration's `Debug` output: `name` with its base URL (credentials
/// redacted), whether it has a key (never the key) and its model; the caller adds the rest.
pub fn debug_config<'a, 'b>(
    f: &'a mut fmt::Formatter<'b>,
    name: &str,
    base_url: &str,
    api_key: Option<&String>,
    model: &str,
) -> fmt::DebugStruct<'a, 'b> {
    let mut out = f.debug_struct(name);
    out.field("base_url", &tinyagent::redact::url(base_url))
        .field("api_key", &api_key.map(|_| "<redacted>"))
        .field("model", &model);
    out
}
