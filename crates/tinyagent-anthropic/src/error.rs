//! Turning HTTP failures and the API's error bodies into clear [`ModelError`]s.
//!
//! The API's errors look like `{"type": "error", "error": {"type": "overloaded_error",
//! "message": "Overloaded"}, "request_id": "req_…"}`, as a body or as a stream's `error`
//! event.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{Failure, ProviderSettings, describe, error_body, field_text, snippet};

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
        describe(
            self.message.as_deref(),
            [
                self.kind.as_ref().map(|kind| format!("type {kind}")),
                self.request_id.as_ref().map(|id| format!("request {id}")),
            ],
        )
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

/// The error for a response with a failing status: the words every API shares
/// ([`tinyagent_http::status_error`]), with Anthropic's own for a key not allowed, a request
/// too large, a billing problem and an overloaded API.
pub(crate) fn status_error(
    config: &ProviderSettings,
    status: StatusCode,
    body: &[u8],
) -> ModelError {
    let (api, detail) = error_body(body, ApiError::parse, ApiError::describe);
    let failure = Failure::new(status, detail, &config.model, config.api_key.as_deref())
        .too_long(api.says_too_long());
    let own = match status.as_u16() {
        403 => Some((
            ModelErrorKind::Authentication,
            "the API key may not use this model or feature (check the key's workspace and \
             permissions)",
        )),
        413 => Some((
            ModelErrorKind::ContextLengthExceeded,
            "the request is too large for the API",
        )),
        402 => Some((
            ModelErrorKind::RateLimited,
            "a billing problem (waiting does not help; check the account's plan and credit)",
        )),
        529 => Some((ModelErrorKind::Unavailable, "the API is overloaded")),
        _ => None,
    };
    let own = own.map(|(kind, what)| (kind, what.to_owned()));
    let mut err = tinyagent_http::status_error(&crate::info::INFO, &failure, own);
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
    use crate::AnthropicConfig;

    #[test]
    fn status_errors_quote_the_body_and_say_what_to_check() {
        let (keyed, keyless) = (
            AnthropicConfig::new("m").api_key("k"),
            AnthropicConfig::new("m"),
        );
        let body = br#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_1"}"#;
        let e = status_error(&keyed, StatusCode::UNAUTHORIZED, body);
        assert_eq!(e.kind(), ModelErrorKind::Authentication);
        assert_eq!(
            e.message(),
            "HTTP 401 Unauthorized: the API key was refused (is ANTHROPIC_API_KEY wrong or \
             expired?): invalid x-api-key (type authentication_error, request req_1)"
        );
        let e = status_error(&keyless, StatusCode::UNAUTHORIZED, b"");
        assert!(e.message().contains("none was sent"), "{e}");
        let overloaded =
            br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let e = status_error(&keyed, StatusCode::from_u16(529).unwrap(), overloaded);
        assert_eq!(e.kind(), ModelErrorKind::Unavailable);
        assert!(e.is_retryable());
        let long = br#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
        let e = status_error(&keyed, StatusCode::BAD_REQUEST, long);
        assert_eq!(e.kind(), ModelErrorKind::ContextLengthExceeded);
        let billing = br#"{"type":"error","error":{"type":"billing_error","message":"credit balance too low"}}"#;
        let e = status_error(&keyed, StatusCode::BAD_REQUEST, billing);
        assert!(!e.is_retryable());
        let e = status_error(&keyed, StatusCode::BAD_GATEWAY, b"<html>bad gateway</html>");
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
