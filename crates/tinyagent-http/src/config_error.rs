//! [`ConfigError`]: why a provider's configuration could not be made into a model, alike for
//! every provider.

/// Why a provider's configuration could not be made into a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Nothing in the environment says which server to use (no key, no base URL).
    #[error("no model is configured: {help}")]
    NotConfigured {
        /// Which variables to set.
        help: &'static str,
    },
    /// The base URL is not an `http://` or `https://` URL.
    #[error("invalid base URL {url:?}: expected an http:// or https:// URL such as {example}")]
    InvalidBaseUrl {
        /// The URL as given (credentials redacted).
        url: String,
        /// The provider's own base URL, as an example.
        example: &'static str,
    },
    /// The model name is empty or not one the API accepts.
    #[error("invalid model name {model:?}: {reason}")]
    InvalidModel {
        /// The name as given.
        model: String,
        /// What is wrong with it, and how to set it.
        reason: String,
    },
    /// Another setting has a value the API refuses.
    #[error("invalid {setting}: {reason}")]
    InvalidSetting {
        /// The setting.
        setting: &'static str,
        /// What is wrong with its value.
        reason: String,
    },
    /// The HTTP client could not be built (a header value that is not valid, for example).
    #[error("could not build the HTTP client: {0}")]
    Client(String),
}

impl ConfigError {
    /// The error of a base URL that is not `http://` or `https://`.
    pub fn invalid_base_url(url: &str, example: &'static str) -> Self {
        Self::InvalidBaseUrl {
            url: tinyagent_core::redact::url(url),
            example,
        }
    }
}

/// Checks a provider's base URL and model name: the URL must be `http://` or `https://`, the
/// name not empty (`env_model` names the variable that sets it).
pub fn check_base_url_and_model(
    base_url: &str,
    example: &'static str,
    model: &str,
    env_model: &str,
) -> Result<(), ConfigError> {
    if !crate::is_http_url(base_url) {
        return Err(ConfigError::invalid_base_url(base_url, example));
    }
    if model.trim().is_empty() {
        return Err(ConfigError::InvalidModel {
            model: model.to_owned(),
            reason: format!("it is empty: set it with `model(..)` or {env_model}"),
        });
    }
    Ok(())
}
