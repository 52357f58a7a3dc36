//! What every HTTP provider's configuration has: its [`HttpSettings`] (retries, timeouts,
//! sizes, headers), the check of its base URL and the HTTP client built from its headers.

use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};

/// How a provider talks to its server over HTTP: retries, timeouts, sizes, and what every
/// request carries besides the provider's own (headers, body fields). Each provider's
/// configuration embeds one (its `http` field).
///
/// The defaults: 2 retries from 500 ms backoff (at most 30 s), `Retry-After` honoured up to
/// 60 s, 10 s to connect, 60 s to the first byte and between two events, 600 s for a whole
/// call, 16 MiB replies.
///
/// ```
/// use std::time::Duration;
/// use tinyagent_http::{HttpConfig, HttpSettings};
///
/// let http = HttpSettings::default()
///     .max_retries(5)
///     .silence_timeout(Duration::from_secs(120))
///     .header("x-gateway-key", "k");
/// assert_eq!(http.max_retries, 5);
/// assert_eq!(http.first_byte_timeout, Duration::from_secs(120));
/// assert_eq!(http.idle_timeout, Duration::from_secs(120));
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct HttpSettings {
    /// How often a failed request (429, 5xx, a connection failure, a timeout, a cut stream)
    /// is retried.
    pub max_retries: u32,
    /// The first retry's backoff; it doubles on each retry, with jitter.
    pub initial_backoff: Duration,
    /// The longest backoff between two attempts.
    pub max_backoff: Duration,
    /// The longest wait a server's `Retry-After` may ask for; a longer one is cut to this.
    pub max_retry_after: Duration,
    /// How long connecting may take.
    pub connect_timeout: Duration,
    /// How long the server may take to start answering (headers, then a stream's first
    /// event).
    pub first_byte_timeout: Duration,
    /// How long a stream may stay silent between two events (and a body between two chunks).
    pub idle_timeout: Duration,
    /// A deadline for a whole call, every retry and wait included; `None` for none.
    pub request_timeout: Option<Duration>,
    /// The most bytes of one response body read.
    pub max_reply_bytes: usize,
    /// Headers sent with every request (after the provider's own), always treated as
    /// secrets: they often carry a gateway's key.
    pub headers: Vec<(String, String)>,
    /// Top-level fields added to every request body.
    pub extra_body: Map<String, Value>,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(60),
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(60),
            request_timeout: Some(Duration::from_secs(600)),
            max_reply_bytes: 16 * 1024 * 1024,
            headers: Vec::new(),
            extra_body: Map::new(),
        }
    }
}

impl fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("HttpSettings")
            .field("max_retries", &self.max_retries)
            .field("initial_backoff", &self.initial_backoff)
            .field("max_backoff", &self.max_backoff)
            .field("max_retry_after", &self.max_retry_after)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_byte_timeout", &self.first_byte_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("headers", &header_names)
            .field("extra_body", &self.extra_body.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// The setters of [`HttpSettings`], on it and on every configuration that embeds one (each
/// provider's config): `OpenAiConfig::new(model).max_retries(3)` sets its `http.max_retries`.
/// A configuration implements [`http_settings`](Self::http_settings); the setters come with
/// it.
pub trait HttpConfig: Sized {
    /// The settings to change.
    fn http_settings(&mut self) -> &mut HttpSettings;

    /// Sets [`max_retries`](HttpSettings::max_retries) (0 for never).
    #[must_use]
    fn max_retries(mut self, max_retries: u32) -> Self {
        self.http_settings().max_retries = max_retries;
        self
    }

    /// Sets the first and the longest backoff between attempts.
    #[must_use]
    fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.http_settings().initial_backoff = initial;
        self.http_settings().max_backoff = max.max(initial);
        self
    }

    /// Sets [`max_retry_after`](HttpSettings::max_retry_after).
    #[must_use]
    fn max_retry_after(mut self, max: Duration) -> Self {
        self.http_settings().max_retry_after = max;
        self
    }

    /// Sets [`connect_timeout`](HttpSettings::connect_timeout).
    #[must_use]
    fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.http_settings().connect_timeout = timeout;
        self
    }

    /// Sets [`first_byte_timeout`](HttpSettings::first_byte_timeout).
    #[must_use]
    fn first_byte_timeout(mut self, timeout: Duration) -> Self {
        self.http_settings().first_byte_timeout = timeout;
        self
    }

    /// Sets [`idle_timeout`](HttpSettings::idle_timeout).
    #[must_use]
    fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.http_settings().idle_timeout = timeout;
        self
    }

    /// Sets both silence limits at once: [`first_byte_timeout`](HttpSettings::first_byte_timeout)
    /// and [`idle_timeout`](HttpSettings::idle_timeout) (what a `--timeout` option means).
    #[must_use]
    fn silence_timeout(self, timeout: Duration) -> Self {
        self.first_byte_timeout(timeout).idle_timeout(timeout)
    }

    /// Sets [`request_timeout`](HttpSettings::request_timeout) (`None` for none).
    #[must_use]
    fn request_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.http_settings().request_timeout = timeout.into();
        self
    }

    /// Sets [`max_reply_bytes`](HttpSettings::max_reply_bytes) (at least 1).
    #[must_use]
    fn max_reply_bytes(mut self, max: usize) -> Self {
        self.http_settings().max_reply_bytes = max.max(1);
        self
    }

    /// Adds a header sent with every request.
    #[must_use]
    fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.http_settings()
            .headers
            .push((name.into(), value.into()));
        self
    }

    /// Adds a top-level field to every request body.
    #[must_use]
    fn extra_body(mut self, key: impl Into<String>, value: Value) -> Self {
        self.http_settings().extra_body.insert(key.into(), value);
        self
    }
}

impl HttpConfig for HttpSettings {
    fn http_settings(&mut self) -> &mut HttpSettings {
        self
    }
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
