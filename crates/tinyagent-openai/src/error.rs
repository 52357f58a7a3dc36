//! Turning HTTP failures and API error bodies into clear [`ModelError`]s.

use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::Value;
use tinyagent::{ModelError, ModelErrorKind};

use crate::wire::snippet;

/// The parts of an OpenAI error body: `{"error": {"message", "type", "param", "code"}}`
/// (also accepted: `{"error": "text"}`, `{"message": "text"}`, `{"detail": "text"}`).
#[derive(Debug, Default)]
pub(crate) struct ApiError {
    pub message: Option<String>,
    pub kind: Option<String>,
    pub code: Option<String>,
    pub param: Option<String>,
}

/// The most characters of one field of an error body kept in an error: a server's message
/// is quoted, not a whole page of it.
const MAX_FIELD_CHARS: usize = 1000;

fn as_text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.is_empty() => Some(bounded(s)),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `text` cut to [`MAX_FIELD_CHARS`] characters, saying how much was left out.
pub(crate) fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_FIELD_CHARS) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}… ({} more bytes)", &text[..end], text.len() - end),
    }
}

impl ApiError {
    fn from_error_value(err: &Value) -> Self {
        match err {
            Value::String(s) => Self {
                message: Some(bounded(s)),
                ..Self::default()
            },
            Value::Object(_) => Self {
                message: as_text(err.get("message")),
                kind: as_text(err.get("type")),
                code: as_text(err.get("code")),
                param: as_text(err.get("param")),
            },
            _ => Self::default(),
        }
    }

    fn parse(body: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(body).ok()?;
        if let Some(err) = value.get("error") {
            let parsed = Self::from_error_value(err);
            return parsed.message.is_some().then_some(parsed);
        }
        let message = as_text(value.get("message")).or_else(|| as_text(value.get("detail")))?;
        Some(Self {
            message: Some(message),
            ..Self::default()
        })
    }

    fn describe(&self) -> String {
        let mut out = self.message.clone().unwrap_or_default();
        let mut extra = Vec::new();
        if let Some(kind) = &self.kind {
            extra.push(format!("type {kind}"));
        }
        if let Some(code) = &self.code {
            extra.push(format!("code {code}"));
        }
        if let Some(param) = &self.param {
            extra.push(format!("param {param}"));
        }
        if !extra.is_empty() {
            out.push_str(&format!(" ({})", extra.join(", ")));
        }
        out
    }

    fn is(&self, what: &str) -> bool {
        self.code.as_deref() == Some(what) || self.kind.as_deref() == Some(what)
    }
}

/// The error for a response with a failing status.
pub(crate) fn status_error(
    status: StatusCode,
    body: &[u8],
    key_sent: bool,
    model: &str,
) -> ModelError {
    let api = ApiError::parse(body);
    let detail = match &api {
        Some(api) => api.describe(),
        None => snippet(body),
    };
    let api = api.unwrap_or_default();
    let head = format!("HTTP {status}");
    let (kind, message) = match status.as_u16() {
        401 => (
            ModelErrorKind::Authentication,
            if key_sent {
                format!(
                    "{head}: the API key was refused (is OPENAI_API_KEY wrong or expired?): {detail}"
                )
            } else {
                format!(
                    "{head}: the server wants an API key and none was sent (set OPENAI_API_KEY): {detail}"
                )
            },
        ),
        403 => (
            ModelErrorKind::Authentication,
            format!("{head}: the API key may not use this model or endpoint: {detail}"),
        ),
        404 => (
            ModelErrorKind::InvalidRequest,
            format!(
                "{head}: not found; check the base URL (OPENAI_BASE_URL, usually ending in /v1) \
                 and the model name {model:?} (OPENAI_MODEL): {detail}"
            ),
        ),
        429 if api.is("insufficient_quota") => (
            ModelErrorKind::RateLimited,
            format!(
                "{head}: out of quota: the account has no credit left for this API (waiting does \
                 not help; check its plan and billing): {detail}"
            ),
        ),
        429 => (
            ModelErrorKind::RateLimited,
            format!("{head}: rate limited (too many requests or tokens per minute): {detail}"),
        ),
        408 => (
            ModelErrorKind::TimedOut,
            format!("{head}: the server timed out: {detail}"),
        ),
        s if s >= 500 => (
            ModelErrorKind::Unavailable,
            format!("{head}: the server failed: {detail}"),
        ),
        _ if api.is("context_length_exceeded") => (
            ModelErrorKind::ContextLengthExceeded,
            format!("{head}: the conversation is too long for the model: {detail}"),
        ),
        _ => (
            ModelErrorKind::InvalidRequest,
            format!("{head}: the request was rejected: {detail}"),
        ),
    };
    let mut err = ModelError::new(kind, message);
    if api.is("insufficient_quota") {
        // Out of credit: waiting does not help.
        err = err.retryable(false);
    }
    if status.as_u16() == 409 {
        err = err.retryable(true);
    }
    err
}

/// The error for an `error` object inside a 200 body or a stream chunk.
pub(crate) fn error_in_body(err: &Value) -> ModelError {
    let api = ApiError::from_error_value(err);
    let detail = if api.message.is_some() {
        api.describe()
    } else {
        snippet(err.to_string().as_bytes())
    };
    let kind = if api.is("context_length_exceeded") {
        ModelErrorKind::ContextLengthExceeded
    } else if api.is("rate_limit_exceeded") {
        ModelErrorKind::RateLimited
    } else if api.is("server_error") {
        ModelErrorKind::Unavailable
    } else {
        ModelErrorKind::Other
    };
    ModelError::new(kind, format!("the server reported an error: {detail}"))
}

/// The error for a 200 response whose body is not what was asked for: an HTML page (a
/// wrong base URL behind a web server), an empty body, plain text.
pub(crate) fn unexpected_body(
    status: StatusCode,
    content_type: &str,
    body: &[u8],
    expected: &str,
    base_url: &str,
) -> ModelError {
    let content_type = if content_type.is_empty() {
        "no content type"
    } else {
        content_type
    };
    let what = if body.iter().all(u8::is_ascii_whitespace) {
        format!("an empty body ({content_type})")
    } else {
        format!("{content_type} instead of {expected}: {}", snippet(body))
    };
    ModelError::invalid_response(format!(
        "HTTP {status} from {base_url} with {what}; check the base URL: it must be the root of \
         an OpenAI-compatible API (usually ending in /v1, such as {})",
        crate::config::DEFAULT_BASE_URL
    ))
}

/// The error for a transport failure.
pub(crate) fn transport_error(err: reqwest::Error, url: &str) -> ModelError {
    let (kind, what) = if err.is_timeout() {
        (ModelErrorKind::TimedOut, "timed out talking to")
    } else if err.is_connect() {
        (ModelErrorKind::Unavailable, "could not connect to")
    } else if err.is_body() || err.is_decode() {
        (
            ModelErrorKind::Unavailable,
            "the connection failed while reading from",
        )
    } else if err.is_builder() {
        (
            ModelErrorKind::InvalidRequest,
            "could not build a request for",
        )
    } else {
        (ModelErrorKind::Unavailable, "the request failed for")
    };
    let mut chain = String::new();
    let mut source: Option<&dyn std::error::Error> = std::error::Error::source(&err);
    while let Some(s) = source {
        chain.push_str(": ");
        chain.push_str(&s.to_string());
        source = s.source();
    }
    ModelError::new(kind, format!("{what} {url}{chain}")).with_source(err)
}

/// How long the server asks to wait: `retry-after-ms` (OpenAI's), or `Retry-After` in
/// seconds or as an HTTP date.
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64((ms / 1000.0).min(86_400.0)));
    }
    let value = headers.get("retry-after")?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(86_400.0)));
        }
        return None;
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("3"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(3)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        h.insert("retry-after", HeaderValue::from_str(&later).unwrap());
        assert_eq!(retry_after(&h, now), Some(Duration::from_secs(7)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        h.insert("retry-after", HeaderValue::from_str(&past).unwrap());
        assert_eq!(retry_after(&h, now), Some(Duration::ZERO));
        h.insert("retry-after", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&h, now), None);
        h.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(retry_after(&h, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn status_errors() {
        let body = br#"{"error":{"message":"Incorrect API key provided: sk-xx.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}"#;
        let e = status_error(StatusCode::UNAUTHORIZED, body, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::Authentication);
        assert!(e.message().contains("OPENAI_API_KEY"), "{e}");
        assert!(e.message().contains("Incorrect API key"), "{e}");
        let e = status_error(StatusCode::UNAUTHORIZED, b"", false, "m");
        assert!(e.message().contains("none was sent"), "{e}");
        let e = status_error(
            StatusCode::BAD_GATEWAY,
            b"<html>bad gateway</html>",
            false,
            "m",
        );
        assert_eq!(e.kind(), ModelErrorKind::Unavailable);
        assert!(e.is_retryable());
        assert!(e.message().contains("<html>bad gateway"), "{e}");
        let quota = br#"{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        let e = status_error(StatusCode::TOO_MANY_REQUESTS, quota, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::RateLimited);
        assert!(!e.is_retryable());
        let ctx = br#"{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let e = status_error(StatusCode::BAD_REQUEST, ctx, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::ContextLengthExceeded);
        let e = status_error(StatusCode::BAD_REQUEST, br#"{"detail":"nope"}"#, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::InvalidRequest);
        assert!(e.message().contains("nope"));
    }
}
