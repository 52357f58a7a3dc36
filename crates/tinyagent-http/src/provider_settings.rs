//! [`ProviderSettings`]: what every HTTP provider's configuration has (where the API is, its
//! key, the model, the token limit, how requests are made), read from the environment,
//! checked and printed in one place.

use std::fmt;

use crate::{ConfigError, HttpConfig, HttpSettings, ProviderInfo};

/// The settings every HTTP provider's configuration embeds: the base URL, the API key, the
/// model, the token limit sent when a request sets none, and the [`HttpSettings`].
///
/// Each provider's configuration holds one (its `settings` field) and reads as it: the
/// configuration dereferences to its settings, so `config.model` and `config.http` are these
/// fields. The environment is read here ([`read_env`](Self::read_env)), given the vendor's
/// variable names; the base URL is used one way by every provider ([`base`](Self::base)); the
/// key never appears in `Debug` output.
///
/// ```
/// use tinyagent_http::{HttpConfig, ProviderSettings};
///
/// let mut settings = ProviderSettings::new(" http://localhost:11434/v1/ ", "qwen2.5:7b");
/// settings.api_key = Some("sk-secret".to_owned());
/// let settings = settings.max_retries(5);
/// assert_eq!(settings.url("/chat/completions"), "http://localhost:11434/v1/chat/completions");
/// assert_eq!(settings.key(), Some("sk-secret"));
/// assert_eq!(settings.http.max_retries, 5);
/// assert!(!format!("{settings:?}").contains("sk-secret"));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderSettings {
    /// The base URL of the API (whitespace around it and trailing slashes are not part of
    /// it: see [`base`](Self::base)).
    pub base_url: String,
    /// The API key, sent in the provider's key header when set (an empty one counts as none).
    pub api_key: Option<String>,
    /// The model name sent in every request.
    pub model: String,
    /// The token limit sent when a request sets none; `None` leaves it to the provider's
    /// default (see each provider).
    pub max_tokens: Option<u32>,
    /// How requests are made: retries, timeouts, sizes, extra headers and body fields.
    pub http: HttpSettings,
}

impl ProviderSettings {
    /// Settings for `model` at `base_url`, without a key or a token limit, with the default
    /// [`HttpSettings`].
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            max_tokens: None,
            http: HttpSettings::default(),
        }
    }

    /// The key when one is set (an empty one counts as none).
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.is_empty())
    }

    /// The base URL as requests use it: without the whitespace around it and without
    /// trailing slashes.
    pub fn base(&self) -> &str {
        self.base_url.trim().trim_end_matches('/')
    }

    /// The URL of `path` (which starts with `/`) under the [`base`](Self::base) URL.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base())
    }

    /// Reads the provider's variables ([`ProviderInfo::env`]: the key, the base URL, the
    /// model) through `lookup`, trimmed, empty ones counted as unset: a base URL or a model
    /// set replaces the one these settings have, and the key is the variable's (none when it
    /// is unset).
    ///
    /// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is set,
    /// so a program can tell the user what to set instead of calling the API without a key;
    /// the settings are then unchanged.
    pub fn read_env(
        &mut self,
        lookup: impl Fn(&str) -> Option<String>,
        info: &ProviderInfo,
    ) -> Result<(), ConfigError> {
        let env = crate::env_settings(lookup, info.env).ok_or(ConfigError::NotConfigured {
            help: info.not_configured,
        })?;
        if let Some(model) = env.model {
            self.model = model;
        }
        if let Some(base_url) = env.base_url {
            self.base_url = base_url;
        }
        self.api_key = env.api_key;
        Ok(())
    }

    /// Checks the base URL (an `http://` or `https://` URL, the provider's own as the example)
    /// and the model name (not empty; the provider's variable named as where to set it).
    pub fn check(&self, info: &ProviderInfo) -> Result<(), ConfigError> {
        crate::check_base_url_and_model(
            &self.base_url,
            info.default_base_url,
            &self.model,
            info.env[2],
        )
    }
}

/// The base URL with its credentials redacted, whether there is a key (never the key), the
/// model, the token limit and the HTTP settings.
impl fmt::Debug for ProviderSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderSettings")
            .field("base_url", &tinyagent_core::redact::url(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("http", &self.http)
            .finish()
    }
}

impl HttpConfig for ProviderSettings {
    fn http_settings(&mut self) -> &mut HttpSettings {
        &mut self.http
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: ProviderInfo = ProviderInfo::new(
        ["V_KEY", "V_BASE_URL", "V_MODEL"],
        "set V_KEY",
        "https://api.example.com/v1",
        "ua",
    );

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_environment_overlays_the_defaults() {
        let defaults = ProviderSettings::new(INFO.default_base_url, "default-model");
        let mut s = defaults.clone();
        assert!(matches!(
            s.read_env(env(&[("V_MODEL", "m")]), &INFO),
            Err(ConfigError::NotConfigured { help: "set V_KEY" })
        ));
        assert_eq!(s, defaults);
        s.api_key = Some("old".into());
        s.read_env(env(&[("V_KEY", " k "), ("V_MODEL", "")]), &INFO)
            .unwrap();
        assert_eq!(s.key(), Some("k"));
        assert_eq!(s.model, "default-model");
        assert_eq!(s.base_url, INFO.default_base_url);
        s.read_env(
            env(&[("V_BASE_URL", "http://h/v1"), ("V_MODEL", "m")]),
            &INFO,
        )
        .unwrap();
        assert_eq!(
            (s.base_url.as_str(), s.model.as_str()),
            ("http://h/v1", "m")
        );
        assert_eq!(s.api_key, None, "the key is the environment's");
    }

    #[test]
    fn the_base_url_is_used_one_way_and_the_key_is_never_printed() {
        let mut s = ProviderSettings::new(" https://user:pw@h/v1// ", "m");
        assert_eq!(s.base(), "https://user:pw@h/v1");
        assert_eq!(s.url("/responses"), "https://user:pw@h/v1/responses");
        s.api_key = Some(String::new());
        assert_eq!(s.key(), None, "an empty key is none");
        s.api_key = Some("sk-secret".into());
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("sk-secret") && !shown.contains("pw"),
            "{shown}"
        );
        assert!(shown.contains("<redacted>"), "{shown}");
        assert!(s.check(&INFO).is_ok());
        s.model = " ".into();
        assert!(matches!(
            s.check(&INFO),
            Err(ConfigError::InvalidModel { .. })
        ));
        s.base_url = "h/v1".into();
        assert!(matches!(
            s.check(&INFO),
            Err(ConfigError::InvalidBaseUrl { .. })
        ));
    }
}
