//! Turning HTTP failures and API error bodies into clear [`ModelError`]s.

use reqwest::StatusCode;
use serde_json::Value;
use tinyagent::{ModelError, model::ModelErrorKind};
use tinyagent_http::{bounded, field_text, snippet};

/// The parts of an OpenAI error body: `{"error": {"message", "type", "param", "code"}}`
/// (also accepted: `{"error": "text"}`, `{"message": "text"}`, `{"detail": "text"}`).
#[derive(Debug, Default)]
pub(crate) struct ApiError {
    pub message: Option<String>,
    pub kind: Option<String>,
    pub code: Option<String>,
    pub param: Option<String>,
}

impl ApiError {
    fn from_error_value(err: &Value) -> Self {
        match err {
            Value::String(s) => Self {
                message: Some(bounded(s)),
                ..Self::default()
            },
            Value::Object(_) => Self {
                message: field_text(err.get("message")),
                kind: field_text(err.get("type")),
                code: field_text(err.get("code")),
                param: field_text(err.get("param")),
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
        let message =
            field_text(value.get("message")).or_else(|| field_text(value.get("detail")))?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
