//! Turning HTTP failures and the API's error bodies into clear [`ModelError`]s.
//!
//! The API's errors look like `{"type": "error", "error": {"type": "overloaded_error",
//! "message": "Overloaded"}, "request_id": "req_…"}`, as a body or as a stream's `error`
//! event.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{field_text, snippet};

use crate::config::{DEFAULT_BASE_URL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL};

/// The parts of an error body.
#[derive(Debug, Default)]
struct ApiError {
    message: Option<String>,
    kind: Option<String>,
    request_id: Option<String>,
}

impl ApiError {
    fn from_value(value: &Value) -> Self {
        let err = value.get("error").unwrap_or(value);
        match err {
            Value::String(s) => Self {
                message: field_text(Some(&Value::String(s.clone()))),
                ..Self::default()
            },
            _ => Self {
                message: field_text(err.get("message")),
                kind: field_text(err.get("type")).filter(|t| t != "error"),
                request_id: field_text(value.get("request_id")),
            },
        }
    }

    fn parse(body: &[u8]) -> Option<Self> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let parsed = Self::from_value(&value);
        parsed.message.is_some().then_some(parsed)
    }

    fn describe(&self) -> String {
        let mut out = self.message.clone().unwrap_or_default();
        let mut extra = Vec::new();
        if let Some(kind) = &self.kind {
            extra.push(format!("type {kind}"));
        }
        if let Some(id) = &self.request_id {
            extra.push(format!("request {id}"));
        }
        if !extra.is_empty() {
            out.push_str(&format!(" ({})", extra.join(", ")));
        }
        out
    }

    fn is(&self, kind: &str) -> bool {
        self.kind.as_deref() == Some(kind)
    }

    fn says_too_long(&self) -> bool {
        self.message.as_deref().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            m.contains("prompt is too long") || m.contains("context window")
        })
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
                    "{head}: the API key was refused (is {ENV_API_KEY} wrong or revoked?): {detail}"
                )
            } else {
                format!(
                    "{head}: the API wants a key and none was sent (set {ENV_API_KEY}): {detail}"
                )
            },
        ),
        403 => (
            ModelErrorKind::Authentication,
            format!(
                "{head}: the API key may not use this model or feature (check the key's \
                 workspace and permissions): {detail}"
            ),
        ),
        404 => (
            ModelErrorKind::InvalidRequest,
            format!(
                "{head}: not found; check the model name {model:?} ({ENV_MODEL}) and the base \
                 URL ({ENV_BASE_URL}, such as {DEFAULT_BASE_URL}): {detail}"
            ),
        ),
        413 => (
            ModelErrorKind::ContextLengthExceeded,
            format!("{head}: the request is too large for the API: {detail}"),
        ),
        402 => (
            ModelErrorKind::RateLimited,
            format!(
                "{head}: a billing problem (waiting does not help; check the account's plan \
                 and credit): {detail}"
            ),
        ),
        429 => (
            ModelErrorKind::RateLimited,
            format!(
                "{head}: rate limited (too many requests or tokens per minute for this key): \
                 {detail}"
            ),
        ),
        529 => (
            ModelErrorKind::Unavailable,
            format!("{head}: the API is overloaded: {detail}"),
        ),
        408 | 504 => (
            ModelErrorKind::TimedOut,
            format!("{head}: the API timed out: {detail}"),
        ),
        s if s >= 500 => (
            ModelErrorKind::Unavailable,
            format!("{head}: the API failed: {detail}"),
        ),
        _ if api.says_too_long() => (
            ModelErrorKind::ContextLengthExceeded,
            format!("{head}: the conversation is too long for the model: {detail}"),
        ),
        _ => (
            ModelErrorKind::InvalidRequest,
            format!(
                "{head}: the request was rejected (a bad parameter, message order or tool \
                 schema): {detail}"
            ),
        ),
    };
    let mut err = ModelError::new(kind, message);
    if status.as_u16() == 402 || api.is("billing_error") {
        err = err.retryable(false);
    }
    err
}

/// The error for an `error` event in a stream, or an error object in a 200 body.
pub(crate) fn error_event(value: &Value) -> ModelError {
    let api = ApiError::from_value(value);
    let detail = if api.message.is_some() || api.kind.is_some() {
        api.describe()
    } else {
        snippet(value.to_string().as_bytes())
    };
    let kind = match api.kind.as_deref() {
        Some("overloaded_error" | "api_error") => ModelErrorKind::Unavailable,
        Some("rate_limit_error") => ModelErrorKind::RateLimited,
        Some("timeout_error") => ModelErrorKind::TimedOut,
        Some("authentication_error" | "permission_error") => ModelErrorKind::Authentication,
        Some("request_too_large") => ModelErrorKind::ContextLengthExceeded,
        Some("invalid_request_error") if api.says_too_long() => {
            ModelErrorKind::ContextLengthExceeded
        }
        Some("invalid_request_error" | "not_found_error") => ModelErrorKind::InvalidRequest,
        _ => ModelErrorKind::Other,
    };
    ModelError::new(kind, format!("the API reported an error: {detail}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_errors_quote_the_body_and_say_what_to_check() {
        let body = br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}"#;
        let e = status_error(StatusCode::UNAUTHORIZED, body, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::Authentication);
        assert_eq!(
            e.message(),
            "HTTP 401 Unauthorized: the API key was refused (is ANTHROPIC_API_KEY wrong or \
             revoked?): invalid x-api-key (type authentication_error, request req_1)"
        );
        let e = status_error(StatusCode::UNAUTHORIZED, b"", false, "m");
        assert!(e.message().contains("none was sent"), "{e}");
        let overloaded =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let e = status_error(StatusCode::from_u16(529).unwrap(), overloaded, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::Unavailable);
        assert!(e.is_retryable());
        let long = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let e = status_error(StatusCode::BAD_REQUEST, long, true, "m");
        assert_eq!(e.kind(), ModelErrorKind::ContextLengthExceeded);
        let billing = br#"{"type":"error","error":{"type":"billing_error","message":"credit balance too low"}}"#;
        let e = status_error(StatusCode::BAD_REQUEST, billing, true, "m");
        assert!(!e.is_retryable());
        let e = status_error(
            StatusCode::BAD_GATEWAY,
            b"<html>bad gateway</html>",
            true,
            "m",
        );
        assert!(e.is_retryable());
        assert!(e.message().contains("<html>bad gateway"), "{e}");
    }

    #[test]
    fn error_events() {
        let e = error_event(
            &serde_json::json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        );
        assert_eq!(e.kind(), ModelErrorKind::Unavailable);
        assert!(e.is_retryable());
        assert_eq!(
            e.message(),
            "the API reported an error: Overloaded (type overloaded_error)"
        );
        let e = error_event(
            &serde_json::json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}),
        );
        assert!(!e.is_retryable());
        let e = error_event(&serde_json::json!({"type": "error"}));
        assert_eq!(e.kind(), ModelErrorKind::Other);
    }
}
