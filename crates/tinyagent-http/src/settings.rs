//! What every HTTP provider's configuration has: the setters of its retry, timeout and size
//! settings ([`transport_setters!`](crate::transport_setters)), the check of its base URL and
//! the HTTP client built from its headers.

use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// Generates, for a provider's configuration struct, the setters of the settings every HTTP
/// provider shares and `transport_limits()`, the [`Limits`](crate::Limits) they make.
///
/// The struct must have these public fields:
/// `base_url: String`, `api_key: Option<String>`, `model: String`, `max_retries: u32`,
/// `initial_backoff`, `max_backoff`, `max_retry_after`, `connect_timeout`, `first_byte_timeout`,
/// `idle_timeout: Duration`, `request_timeout: Option<Duration>`, `max_reply_bytes: usize`,
/// `headers: Vec<(String, String)>` and `extra_body: serde_json::Map<String, Value>`.
#[macro_export]
macro_rules! transport_setters {
    ($config:ty) => {
        impl $config {
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

            /// Sets how often a failed request is retried (0 for never).
            #[must_use]
            pub fn max_retries(mut self, max_retries: u32) -> Self {
                self.max_retries = max_retries;
                self
            }

            /// Sets the first and the longest backoff between attempts.
            #[must_use]
            pub fn backoff(
                mut self,
                initial: ::std::time::Duration,
                max: ::std::time::Duration,
            ) -> Self {
                self.initial_backoff = initial;
                self.max_backoff = max.max(initial);
                self
            }

            /// Sets the longest `Retry-After` wait honoured.
            #[must_use]
            pub fn max_retry_after(mut self, max: ::std::time::Duration) -> Self {
                self.max_retry_after = max;
                self
            }

            /// Sets the connect timeout.
            #[must_use]
            pub fn connect_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.connect_timeout = timeout;
                self
            }

            /// Sets how long the server may take to start answering (see
            /// [`first_byte_timeout`](Self::first_byte_timeout)).
            #[must_use]
            pub fn first_byte_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.first_byte_timeout = timeout;
                self
            }

            /// Sets the longest silence between two events of a stream.
            #[must_use]
            pub fn idle_timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.idle_timeout = timeout;
                self
            }

            /// Sets both silence limits at once: [`first_byte_timeout`](Self::first_byte_timeout)
            /// and [`idle_timeout`](Self::idle_timeout) (what a `--timeout` option means).
            #[must_use]
            pub fn silence_timeout(self, timeout: ::std::time::Duration) -> Self {
                self.first_byte_timeout(timeout).idle_timeout(timeout)
            }

            /// Sets a deadline for each whole call, retries included (`None` for none).
            #[must_use]
            pub fn request_timeout(
                mut self,
                timeout: impl Into<Option<::std::time::Duration>>,
            ) -> Self {
                self.request_timeout = timeout.into();
                self
            }

            /// Sets the most bytes of one response body.
            #[must_use]
            pub fn max_reply_bytes(mut self, max: usize) -> Self {
                self.max_reply_bytes = max.max(1);
                self
            }

            /// Adds a header sent with every request.
            #[must_use]
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.headers.push((name.into(), value.into()));
                self
            }

            /// Adds a top-level field to every request body.
            #[must_use]
            pub fn extra_body(
                mut self,
                key: impl Into<String>,
                value: ::serde_json::Value,
            ) -> Self {
                self.extra_body.insert(key.into(), value);
                self
            }

            /// The limits the shared transport runs a call within (`max_tokens` unset).
            pub(crate) fn transport_limits(&self) -> $crate::Limits {
                let mut limits = $crate::Limits::default();
                limits.max_retries = self.max_retries;
                limits.initial_backoff = self.initial_backoff;
                limits.max_backoff = self.max_backoff;
                limits.max_retry_after = self.max_retry_after;
                limits.first_byte_timeout = self.first_byte_timeout;
                limits.idle_timeout = self.idle_timeout;
                limits.request_timeout = self.request_timeout;
                limits.max_reply_bytes = self.max_reply_bytes;
                limits
            }
        }
    };
}

/// What a provider reads from its three environment variables (the key, the base URL, the
/// model), trimmed, empty ones counted as unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct EnvSettings {
    /// The API key.
    pub api_key: Option<String>,
    /// The base URL.
    pub base_url: Option<String>,
    /// The model name.
    pub model: Option<String>,
}

/// Reads `[key, base URL, model]` variables through `lookup`; `None` when neither the key
/// nor the base URL is set (nothing is configured).
pub fn env_settings(
    lookup: impl Fn(&str) -> Option<String>,
    [key, base_url, model]: [&str; 3],
) -> Option<EnvSettings> {
    let get = |name: &str| {
        lookup(name)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    let settings = EnvSettings {
        api_key: get(key),
        base_url: get(base_url),
        model: get(model),
    };
    (settings.api_key.is_some() || settings.base_url.is_some()).then_some(settings)
}

/// Whether `url` is an `http://` or `https://` URL with a host.
pub fn is_http_url(url: &str) -> bool {
    let url = url.trim();
    url.strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
}

/// The HTTP client of a provider: `headers` (its authentication and version headers, marked
/// sensitive when they carry keys), then the user's `extra` headers (always marked
/// sensitive: they often carry a gateway's key), `content-type: application/json`, the user
/// agent and the connect timeout. The error says which header is not valid.
pub fn build_client(
    mut headers: HeaderMap,
    extra: &[(String, String)],
    user_agent: &str,
    connect_timeout: Duration,
) -> Result<reqwest::Client, String> {
    for (name, value) in extra {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header name {name:?}: {e}"))?;
        let mut value = HeaderValue::from_str(value).map_err(|e| format!("header {name}: {e}"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reqwest::Client::builder()
        .default_headers(headers)
        .user_agent(user_agent)
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|e| e.to_string())
}

/// A key as a sensitive header value (never shown in `Debug` output).
pub fn key_header(key: &str) -> Result<HeaderValue, String> {
    let mut value = HeaderValue::from_str(key)
        .map_err(|_| "the API key contains characters a header cannot".to_owned())?;
    value.set_sensitive(true);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls() {
        for ok in ["http://localhost:8080", "https://api.anthropic.com/v1 "] {
            assert!(is_http_url(ok), "{ok}");
        }
        for bad in ["localhost:8080", "ftp://x", "http://", "https:///x", ""] {
            assert!(!is_http_url(bad), "{bad}");
        }
    }

    #[test]
    fn bad_headers_are_named() {
        let extra = [("bad header".to_owned(), "v".to_owned())];
        let err = build_client(HeaderMap::new(), &extra, "ua", Duration::from_secs(1)).unwrap_err();
        assert!(err.starts_with("header name \"bad header\""), "{err}");
        assert!(key_header("sk\n").is_err());
        assert!(key_header("sk-ant").unwrap().is_sensitive());
    }
}
