//! [`Provider`]: what sets one provider's configuration apart (its [`ProviderInfo`], its own
//! checks, endpoints and request body), and what every configuration does alike with it:
//! reading the environment ([`from_lookup`]), checking itself, its request headers.

use std::fmt;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tinyagent_core::ModelRequest;

use crate::{ConfigError, HttpConfig, HttpSettings, Protocol, ProviderInfo, ProviderSettings};

/// A provider's configuration, as the shared [`HttpModel`](crate::HttpModel) needs it: its
/// [`ProviderInfo`], the [`ProviderSettings`] it embeds, the checks of its own, its endpoints
/// and the body of a request. Its [`Protocol`] is how the server's answers are read. The
/// [`HttpConfig`] setters come with it.
///
/// Its [`Default`] is the provider's default model on its own API.
pub trait Provider: Protocol + Default + Clone + fmt::Debug + 'static {
    /// The provider's names and defaults.
    const INFO: ProviderInfo;

    /// The settings every provider has.
    fn settings(&self) -> &ProviderSettings;

    /// The settings every provider has, to change them.
    fn settings_mut(&mut self) -> &mut ProviderSettings;

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
        &mut self.settings_mut().http
    }
}

/// The configuration of provider `C` that the environment gives through `lookup`:
/// `C::default()` with the variables of [`ProviderInfo::env`] read over it
/// ([`ProviderSettings::read_env`]: trimmed, empty ones counted as unset).
///
/// Fails with [`ConfigError::NotConfigured`] when neither the key nor the base URL is set,
/// so a program can tell the user what to set instead of calling the API without a key.
pub fn from_lookup<C: Provider>(lookup: impl Fn(&str) -> Option<String>) -> Result<C, ConfigError> {
    let mut config = C::default();
    config.settings_mut().read_env(lookup, &C::INFO)?;
    Ok(config)
}

/// Checks a configuration: its base URL and its model name ([`ProviderSettings::check`]),
/// then [`Provider::check`].
pub fn check<C: Provider>(config: &C) -> Result<(), ConfigError> {
    config.settings().check(&C::INFO)?;
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
